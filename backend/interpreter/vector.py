"""16-byte vector accesses (``vector.load``/``vector.store``) and the vector ops around them; a
``vector<n x T>`` value is a tuple of ``n`` lane arrays (or scalars). A vector access of workgroup
memory goes through the race checks of ``memref.load``/``memref.store``
(:func:`.memory.access_check`: the ``n`` elements as the lane's), a vector store to global memory
through the check against ``cp.async`` sources in flight."""

from __future__ import annotations

import numpy as np

from kernc.support.mlir import ir

from .memory import _access, _addr, _check_store_race, access_check, check_source_store
from .numeric import _vector_ty
from .traffic import _count_vector
from .translate import handles


@handles("vector.load")
def _vector_load(tr, o):
    """``vector.load``: ``n`` consecutive elements per lane, one memory request per warp."""
    m = tr.use(o.operands[0])
    idx = [tr.use(v) for v in o.operands[1:]]
    n, ety = _vector_ty(tr, o.results[0].type, o)
    zero = ety.zero()
    r = tr.define(o.results[0])
    check = access_check(tr, o, o.operands[0], o.operands[1:], False, n)
    loc = str(o.location)

    def f(fr, mask):
        env = fr.env
        buf = env[m]
        first = [env[i] for i in idx]
        act, rel = _access(fr, mask, buf, first, "load", loc)
        if act is not None and act.size == 0:
            env[r] = (zero,) * n
            return
        _access(fr, mask, buf, [first[0] + (n - 1)], "load", loc)
        if check is not None:
            check(fr, mask)
        if fr.collect:
            _count_vector(fr, buf, act, rel, n, "load")
        addr = _addr(fr, buf, act, rel)
        out = []
        for c in range(n):
            vals = buf.data[addr + c]
            if act is not None and type(vals) is np.ndarray:
                full = np.zeros(fr.L, dtype=vals.dtype)
                full[act] = vals
                vals = full
            out.append(vals)
        env[r] = tuple(out)
    return f


@handles("vector.store")
def _vector_store(tr, o):
    """``vector.store``: ``n`` consecutive elements per lane, one memory request per warp."""
    v = tr.use(o.operands[0])
    m = tr.use(o.operands[1])
    tr.written.add(m)
    idx = [tr.use(x) for x in o.operands[2:]]
    n, _ = _vector_ty(tr, o.operands[0].type, o)
    check = access_check(tr, o, o.operands[1], o.operands[2:], True, n)
    loc = str(o.location)

    def f(fr, mask):
        env = fr.env
        buf = env[m]
        first = [env[i] for i in idx]
        act, rel = _access(fr, mask, buf, first, "store", loc)
        if act is not None and act.size == 0:
            return
        _access(fr, mask, buf, [first[0] + (n - 1)], "store", loc)
        if check is not None:
            check(fr, mask)
        elif fr.copies is not None and fr.copies.entries:
            check_source_store(fr, buf, mask, rel if act is None else _spread(fr, act, rel), n, loc)
        if fr.collect:
            _count_vector(fr, buf, act, rel, n, "store")
        addr = _addr(fr, buf, act, rel)
        for c, val in enumerate(env[v]):
            if type(val) is np.ndarray and act is not None:
                val = val[act]
            _check_store_race(fr, buf, act, addr + c, rel, val)
            if type(addr) is not np.ndarray and type(val) is np.ndarray:
                val = val[-1]
            buf.data[addr + c] = val
    return f


def _spread(fr, act, rel):
    """``rel`` of the lanes ``act`` as an every-lane array (the others 0)."""
    full = np.zeros(fr.L, np.int64)
    full[act] = rel
    return full


@handles("vector.extract")
def _vector_extract(tr, o):
    """``vector.extract`` at a static position."""
    v = tr.use(o.operands[0])
    if len(o.operands) > 1:
        tr.unsupported(o, "vector.extract at a dynamic position")
    pos = list(ir.DenseI64ArrayAttr(o.attributes["static_position"]))
    r = tr.define(o.results[0])
    if len(pos) == 1:
        k = pos[0]

        def f(fr, mask):
            fr.env[r] = fr.env[v][k]
        return f

    def nd(fr, mask):  # an n-D vector is nested tuples (backend/interpreter/nvgpu.py)
        x = fr.env[v]
        for k in pos:
            x = x[k]
        fr.env[r] = x
    return nd


@handles("vector.broadcast", "vector.splat")
def _vector_broadcast(tr, o):
    """``vector.broadcast`` (and the older ``vector.splat``) of a scalar to ``vector<NxT>``: canonicalize
    turns a ``vector.from_elements`` of one value repeated into it. A vector source of the same
    type is the identity."""
    a = tr.use(o.operands[0])
    n, _ = _vector_ty(tr, o.results[0].type, o)
    src = str(o.operands[0].type)
    if src.startswith("vector<"):
        if src != str(o.results[0].type):
            tr.unsupported(o, f"{o.name} from {src} to {o.results[0].type}")
        n = None
    r = tr.define(o.results[0])

    def f(fr, mask):
        fr.env[r] = fr.env[a] if n is None else (fr.env[a],) * n
    return f


@handles("vector.from_elements")
def _vector_from_elements(tr, o):
    ins = [tr.use(v) for v in o.operands]
    r = tr.define(o.results[0])

    def f(fr, mask):
        fr.env[r] = tuple(fr.env[i] for i in ins)
    return f
