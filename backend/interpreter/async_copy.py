"""The ``nvgpu`` dialect's asynchronous copies: ``nvgpu.device_async_copy`` (``cp.async``),
``nvgpu.device_async_create_group`` (``cp.async.commit_group``) and ``nvgpu.device_async_wait``
(``cp.async.wait_group N``), with the completion rules of the PTX ISA (9.7.9.25.3, "Data Movement
and Conversion Instructions: cp.async"; 9.7.9.25.3.2 "cp.async.commit_group", 9.7.9.25.3.3
"cp.async.wait_group"), so that a kernel that reads what a copy writes too early is a reported race
here, not a silent pass.

The model, per batch of blocks (:class:`_Copies`, ``_Frame.copies``):

- a ``device_async_copy`` by the active lanes reads its ``srcElements`` elements from global memory
  at once and puts ``dstElements`` elements -- those read, then zeros
  (``src-size`` < ``cp-size`` zero-fills) -- *in flight*: not yet in workgroup memory. Its target
  addresses are marked pending (``_Shadow.pending``): any load or store of them by any thread, or
  a second copy to them, before they are retired is a ``KerncRuntimeError`` naming the op and its
  location (:func:`.memory._check_pending`). The copy counts as a global load (sectors, requests:
  what the hardware fetches) and as a workgroup store (bank conflicts), and it is checked against
  the accesses of other threads since the last barrier like a store (write after read). Its source
  and destination addresses must be aligned to the copy size (``dstElements`` times the element
  size: 4, 8 or 16 bytes; PTX ISA 9.7.9.25.3.1, "cp.async": the address operands must be aligned to
  ``cp-size``), else ``KerncRuntimeError`` (a global buffer's start counts as aligned, as
  ``cudaMalloc``'s 256-byte alignment is). The source may not change while the copy is in flight:
  the ISA leaves unspecified when the async unit reads it, so a ``memref.store``/``vector.store`` by
  any thread of the batch to a source element of a copy not yet retired (before the
  ``device_async_wait`` that retires it) is a reported race (:func:`.memory.check_source_store`),
  rather than a result that depends on the read's timing (atomics on it are not checked);
- ``device_async_create_group`` commits each active lane's copies not yet in a group into its next
  group (a group per lane, numbered from 0);
- ``device_async_wait {numGroups = N}`` retires each active lane's committed groups but its ``N``
  most recent: their data is written to workgroup memory and recorded as that thread's stores
  (:func:`.memory._track`), so another thread that reads it before a ``gpu.barrier`` is a reported
  race (the ISA makes a completed copy visible to the executing thread only). Copies not yet
  committed are not waited for (as ``cp.async.wait_group``). A barrier does not retire anything.

Copies still in flight when a kernel ends are dropped (their workgroup memory ends with the block).
"""

from __future__ import annotations

import numpy as np

from kernc.support.errors import KerncRuntimeError

from .memory import _access, _addr, _check_store_race, _track
from .traffic import _count
from .translate import handles


class _Copies:
    """The copies in flight of a batch: ``entries`` (one per executed ``device_async_copy``:
    ``[buf, lanes, rel, values, group, loc, src, saddr]``, ``lanes`` the issuing lanes, ``rel``
    their target indices (in the block's array), ``values`` ``(lanes, dstElements)``, ``group``
    each lane's group number, ``-1`` until committed, ``src`` the source buffer, ``saddr``
    ``(lanes, dstElements)`` the flat source indices each lane reads, ``-1`` where it zero-fills)
    and ``committed`` the groups each lane committed."""

    __slots__ = ("entries", "committed")

    def __init__(self, L: int):
        self.entries: list = []
        self.committed = np.zeros(L, np.int64)


def _state(fr) -> _Copies:
    if fr.copies is None:
        fr.copies = _Copies(fr.L)
    return fr.copies


def _segments(o) -> list[int]:
    from kernc.support.mlir import ir

    return list(ir.DenseI32ArrayAttr(o.attributes["operandSegmentSizes"]))


@handles("nvgpu.device_async_copy")
def _device_async_copy(tr, o):
    """``nvgpu.device_async_copy %src[%i], %dst[%j], D(, %n)``: ``cp.async`` of ``D`` elements, the
    first ``n`` (default ``D``) read from ``src``, the rest zeros; 1-D memrefs."""
    seg = _segments(o)
    ops = list(o.operands)
    dst, didx = ops[0], ops[1:1 + seg[1]]
    at = 1 + seg[1]
    src, sidx = ops[at], ops[at + 1:at + 1 + seg[3]]
    n_op = ops[at + 1 + seg[3]] if seg[4] else None
    if len(didx) != 1 or len(sidx) != 1:
        tr.unsupported(o, "nvgpu.device_async_copy of memrefs that are not 1-D")
    d = tr.use(dst)
    s = tr.use(src)
    di, si = tr.use(didx[0]), tr.use(sidx[0])
    n = tr.use(n_op) if n_op is not None else None
    count = int(o.attributes["dstElements"].value)
    tr.written.add(d)
    r = tr.define(o.results[0])
    loc = str(o.location)

    def f(fr, mask):
        env = fr.env
        env[r] = np.int64(0)  # (a token: nothing the interpreter needs)
        dbuf, sbuf = env[d], env[s]
        act, rel = _access(fr, mask, dbuf, [env[di]], "store", loc)
        if act is not None and act.size == 0:
            return
        _access(fr, mask, dbuf, [env[di] + (count - 1)], "store", loc)  # the last element copied
        lanes = fr.lane if act is None else act
        rel = np.broadcast_to(np.asarray(rel, np.int64), lanes.shape).copy()
        nread = np.full(lanes.shape, count, np.int64) if n is None else \
            np.broadcast_to(np.asarray(env[n], np.int64), (fr.L,))[lanes].copy()
        if (nread < 0).any() or (nread > count).any():
            k = int(np.argmax((nread < 0) | (nread > count)))
            raise KerncRuntimeError(f"nvgpu.device_async_copy (at {loc}): thread {fr.thread_id(int(lanes[k]))} "
                                    f"copies {int(nread[k])} source elements of {count} (0 to {count})")
        cp_bytes = count * dbuf.itemsize
        srow = np.broadcast_to(np.asarray(env[si], np.int64), (fr.L,))[lanes]
        for what, offs, b in (("destination", rel, dbuf), ("source", srow, sbuf)):
            bad = (offs * b.itemsize) % cp_bytes != 0
            if bad.any():
                k = int(np.argmax(bad))
                raise KerncRuntimeError(
                    f"nvgpu.device_async_copy (at {loc}): thread {fr.thread_id(int(lanes[k]))} copies "
                    f"{cp_bytes} bytes with a {what} address (index {int(offs[k])} of {b.describe()}) that "
                    f"is not {cp_bytes}-byte aligned (PTX ISA 9.7.9.25.3.1, cp.async: the addresses must "
                    "be aligned to cp-size)")
        saddr = np.full((lanes.size, count), -1, np.int64)
        values = np.zeros((lanes.size, count), sbuf.data.dtype)
        for j in range(count):  # element j of each lane that reads more than j elements
            rd = np.zeros(fr.L, np.bool_)
            rd[lanes[nread > j]] = True
            if not rd.any():
                continue
            sact, srel = _access(fr, rd, sbuf, [np.where(rd, np.broadcast_to(env[si], (fr.L,)) + j, 0)], "load", loc)
            if fr.collect and j == 0:
                _count(fr, sbuf, sact, srel, "load")
            sa = _addr(fr, sbuf, sact, srel)
            values[nread > j, j] = sbuf.data[sa]
            saddr[nread > j, j] = sa
        if fr.collect:
            _count(fr, dbuf, act, rel, "store")
        sh = dbuf.shadow
        full = np.zeros(fr.L, np.int64)
        full[lanes] = rel
        flat = dbuf.base[lanes] + rel
        _check_store_race(fr, dbuf, act, flat, rel, values[:, 0])  # two lanes copying to one address
        if sh is not None:
            for j in range(count):
                if sh.npending:
                    _check_pending_copy(fr, dbuf, lanes, rel + j, loc)
                _track(fr, dbuf, mask, full + j, True, loc, False)  # write after another thread's read
            for j in range(count):
                sh.pending[flat + j] += 1  # (distinct addresses: checked above)
            sh.npending += lanes.size * count
            sh.pending_loc = loc
            sh.pending_lo = min(sh.pending_lo, int(rel.min()))
            sh.pending_hi = max(sh.pending_hi, int(rel.max()) + count - 1)
        _state(fr).entries.append([dbuf, lanes, rel, values, np.full(lanes.shape, -1, np.int64), loc,
                                   sbuf, saddr])
    return f


def _check_pending_copy(fr, buf, lanes, rel, loc: str) -> None:
    """A copy to an address another copy has in flight: the two are unordered (PTX ISA: no
    ordering between cp.async operations before a wait), the result undefined."""
    flat = buf.base[lanes] + rel
    busy = buf.shadow.pending[flat] > 0
    if busy.any():
        k = int(np.argmax(busy))
        raise KerncRuntimeError(
            f"data race on {buf.describe()} (workgroup memory of block {fr.first_block + int(lanes[k]) // fr.B}): "
            f"thread {fr.thread_id(int(lanes[k]))} starts a cp.async (nvgpu.device_async_copy at {loc}) to "
            f"index {int(rel[k])} while another cp.async to it (at {buf.shadow.pending_loc}) is in flight "
            "(retire it with nvgpu.device_async_wait first)")


@handles("nvgpu.device_async_create_group")
def _device_async_create_group(tr, o):
    """``cp.async.commit_group``: each active lane's uncommitted copies form its next group."""
    r = tr.define(o.results[0])

    def f(fr, mask):
        fr.env[r] = np.int64(0)
        c = _state(fr)
        for e in c.entries:
            lanes, group = e[1], e[4]
            sel = (group < 0) & mask[lanes]
            group[sel] = c.committed[lanes[sel]]
        c.committed[mask] += 1
    return f


@handles("nvgpu.device_async_wait")
def _device_async_wait(tr, o):
    """``cp.async.wait_group N`` (``numGroups``, default 0): each active lane's committed groups but
    its ``N`` most recent complete; their data lands in workgroup memory as the lane's stores."""
    keep = int(o.attributes["numGroups"].value) if "numGroups" in o.attributes else 0
    loc = str(o.location)

    def f(fr, mask):
        c = fr.copies
        if c is None or not c.entries:
            return
        left = []
        for e in c.entries:
            buf, lanes, rel, values, group, copy_loc, _, saddr = e
            done = (group >= 0) & (group < c.committed[lanes] - keep) & mask[lanes]
            if not done.any():
                left.append(e)
                continue
            dl, drel = lanes[done], rel[done]
            flat = buf.base[dl] + drel
            sh = buf.shadow
            whole = bool(done.all()) and lanes.size == fr.L
            m = fr.full if whole else np.zeros(fr.L, np.bool_)
            if not whole:
                m[dl] = True
            full = np.zeros(fr.L, np.int64)
            full[dl] = drel
            for j in range(values.shape[1]):
                buf.data[flat + j] = values[done, j]
                if sh is not None:
                    sh.pending[flat + j] -= 1  # (distinct addresses: checked when issued)
                    sh.npending -= dl.size
                    if not sh.npending:
                        sh.pending_lo, sh.pending_hi = sh.size, -1
                    # the async unit's write, as the waiting thread's store: seen by the others
                    # only after a barrier
                    _track(fr, buf, m, full + j, True, f"{copy_loc}, retired at {loc}", False)
            if not whole:
                e[1], e[2], e[3], e[4] = lanes[~done], rel[~done], values[~done], group[~done]
                e[7] = saddr[~done]
                left.append(e)
        c.entries = left
    return f
