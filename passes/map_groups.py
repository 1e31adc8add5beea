"""``kern-map-groups``: run the reductions across items (``kern.group_reduce``) of an N-D kernel
with one *team* of threads per group, in phases split at the reductions.

A group is the set of items that share every coordinate but the reduced ones (``sum[j](e)`` over
``over (r, j) in (R, N)``: the ``N`` items of row ``r``). The pass replaces the one-item-per-thread
body under the guard ``t < P`` by:

- a team per group: a warp (32 threads; several groups per block) when the group's extent is a
  constant of at most 32, else the whole block (``B`` threads). Team ``k`` of block ``b`` runs
  the groups ``g = b*T_b + k, += grid*T_b`` (``T_b`` teams per block), a team-uniform loop, so any
  grid is correct (the launcher runs ``ceil(groups / T_b)`` blocks, ``sig.groups``);
- thread coarsening: lane ``l`` of a team of ``T`` threads runs the group's items
  ``q = l + T*c`` (``c = 0, 1, ..``, in-group linear index over the reduced extents, last
  fastest), so a warp reads 32 consecutive items (coalesced along the last coordinate);
- one phase per reduction: each lane combines its items in ascending ``c``, then a butterfly of
  ``gpu.shuffle xor`` 16, 8, 4, 2, 1 gives every lane of a warp the bitwise same value (``a op b``
  is ``b op a`` bitwise for every kind), then, for a block team, lane 0 of each warp stores its
  warp's value to workgroup memory and every thread combines the warps' values in warp order.
  The tree depends only on the group extent and the block size, never on the launch, so the
  CPU interpreter (the same gpu IR) and the GPU agree bitwise;
- registers: when every lane has at most ``registers`` items (``ceil(N / T) <= registers``;
  a runtime extent chooses at run time, a team-uniform ``scf.if``), each item's values are
  computed once and kept (the body's segment of each phase runs once per item, unrolled over
  ``c``; equal ``view_load`` s of read-only views are merged first, so ``x[r, j]`` used before
  and after a reduction is loaded once). Otherwise each phase loops over ``c`` and recomputes
  (re-reads) what it needs; writes run in the last phase only (in program order; an ``if``
  that writes and computes runs for its values in the earlier phases, its writes stripped).
- values that depend on no kept coordinate (layernorm's ``w[j]``), on the register path, are
  computed once per thread before the loop over the groups, and a team then runs
  :data:`GROUP_ROWS` groups (the launcher's grid is divided by it: ``sig.groups["per_block"]``).

Reductions must stand in the body's top level (the frontend checks it; hand-written IR gets a
located error here too), and a kernel's reductions all reduce the same coordinates. Per-item
accessors (``read``/``write``/``add`` buffers, indexed by the thread's item) and the thread
builtins are refused in such a kernel: their item is no longer the thread's.
``remarks`` explains the mapping at each reduction (``kernc compile --remarks``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from kernc.dialect import kern
from kernc.dialect.mapping import MAPPING_ATTR
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.support.errors import CompileError, Diagnostic
from kernc.support.mlir import dialect, ir

from . import ir_builder as b
from .base import Pass, functions, internal, option, walk_ops
from .to_gpu import GUARD_ATTR
from .workgroup import WARP, KernelContext, emit_remark, source_location

arith = dialect("arith")
gpu = dialect("gpu")
scf = dialect("scf")

#: Ops whose execution is visible outside the item: they run in the last phase only (other
#: memory ops at this stage are the item's private arrays).
_EFFECTS = ("kern.view_store", "kern.view_atomic")
#: Groups per team when values that depend on no kept coordinate stay in registers across groups.
GROUP_ROWS = 4
#: Ops that tie an item to its thread, which the pass remaps.
_PER_THREAD = ("kern.read", "kern.write", "kern.add", "kern.block_id", "kern.lane_id", "kern.block_dim")


def _owner(v):
    o = v.owner
    return o.operation if hasattr(o, "operation") else o


def _error(op, text: str, hint: str | None = None) -> CompileError:
    return CompileError(Diagnostic(text, source_location(op.location), hint=hint))


def identity(kind: str, t: ir.Type) -> ir.Value:
    """The identity of ``kind`` (``kern.GROUP_REDUCE_KINDS``) in ``t``: ``-0.0`` for ``addf``
    (bitwise neutral, ``b.add_identity``), ``-inf``/``+inf`` for ``maximumf``/``minimumf``, the
    extreme integer for integer ``max``/``min``, all ones for ``andi``, 0 for ``addi``/``ori``."""
    if b.is_float(t):
        return b.const({"addf": -0.0, "maximumf": -math.inf, "minimumf": math.inf}[kind], t)
    w = ir.IntegerType(t).width
    value = {"addi": 0, "ori": 0, "maxui": 0, "andi": -1, "minui": -1,
             "maxsi": -(1 << (w - 1)) if w > 1 else -1, "minsi": (1 << (w - 1)) - 1 if w > 1 else 0}[kind]
    return b.const(value, t)


def combine(kind: str, x: ir.Value, y: ir.Value) -> ir.Value:
    """``arith.KIND x, y``."""
    return ir.Operation.create(f"arith.{kind}", results=[x.type], operands=[x, y]).results[0]


def _has_effects(op) -> bool:
    if op.name in _EFFECTS:
        return True
    return any(o.name in _EFFECTS for o in walk_ops(op)) if len(op.regions) else False


@dataclass
class MapGroups(Pass):
    """Map each group of a kernel's reductions across items to a warp or a block."""

    name = "kern-map-groups"
    summary = "run reductions across items (kern.group_reduce) with a warp or block per group"

    #: the most items per thread whose values stay in registers across the phases (0: always
    #: re-read; ``kernc compile --no-group-registers``)
    registers: int = option(16)
    #: a callable that receives each one-line remark (``kernc compile --remarks``), or ``None``
    remarks: Callable[[str], None] | None = internal(None)

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in functions(module, {"gpu.func"}):
            reductions = walk_ops(fn, {"kern.group_reduce"})
            if reductions and SIGNATURE_ATTR in fn.attributes:
                _Kernel(self, fn, reductions).run()

    def remark(self, op, text: str) -> None:
        emit_remark(self.remarks, op, text)


class _Kernel:
    """The rewrite of one ``gpu.func``."""

    def __init__(self, opts: MapGroups, fn, reductions: list) -> None:
        self.opts, self.fn, self.reductions = opts, fn, reductions
        self.sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
        self.B = int(self.sig.block)

    # -- analysis -------------------------------------------------------------------------------
    def run(self) -> None:
        fn, first = self.fn, self.reductions[0]
        entry = fn.regions[0].blocks[0]
        guards = [op.operation for op in entry.operations
                  if op.operation.name == "scf.if" and GUARD_ATTR in op.operation.attributes]
        if len(guards) != 1:
            raise _error(first, "a reduction across items needs the kernel body kern-to-gpu builds")
        guard = self.guard = guards[0]
        body = [op.operation for op in guard.regions[0].blocks[0].operations][:-1]  # (not the yield)
        for r in self.reductions:
            if _owner_parent(r) != guard:
                raise _error(r, "this reduction runs in control flow that differs between the items of "
                                "its group (an `if`, a loop, or after a `return` inside an `if`)",
                             hint="compute it in the kernel body's top-level statements")
        delins = [op for op in body if op.name == "kern.delinearize"
                  and isinstance(_owner(op.operands[0]), ir.Operation)
                  and _owner(op.operands[0]).name == "kern.thread_id"]
        if len(delins) != 1:
            raise _error(first, "a reduction across items needs an N-D kernel `over (i, j) in (R, N)`")
        delin = delins[0]
        tid_op = _owner(delin.operands[0])
        self.axes = kern.group_axes(first)
        rank = len(delin.results)
        for r in self.reductions:
            if kern.group_axes(r) != self.axes or max(self.axes) >= rank:
                raise _error(r, "all reductions of a kernel must reduce the same coordinates of its problem")
        for op in walk_ops(guard):
            if op.name in _PER_THREAD or (op.name == "kern.thread_id" and op != tid_op):
                raise _error(op, f"'{op.name}' ties a value to the thread's item, which a kernel with "
                                 "reductions across items runs differently (a block per group)",
                             hint="declare the buffers `view` and index them by the coordinates")
        if len(list(tid_op.results[0].uses)) != 1:
            raise _error(first, "the thread id is used beyond the problem coordinates")
        self.extents = list(delin.operands[1:])
        self.coords = list(delin.results)
        self.names = _coord_names(delin, rank)
        self.kept = [k for k in range(rank) if k not in self.axes]
        ops = [op for op in body if op not in (delin, tid_op)]
        # merge equal loads of views nothing in the kernel stores to (register keeping)
        if self.opts.registers:
            ops = _merge_loads(ops, fn)
        self.segments, cur = [], []
        for op in ops:
            if op.name == "kern.group_reduce":
                self.segments.append((cur, op))
                cur = []
            else:
                cur.append(op)
        self.tail = cur
        self._body_ops = [o for seg, _ in self.segments for o in seg] + list(self.tail)
        self.invariant = self._invariant_ops(guard) if self.opts.registers else set()
        self.static_n = _static_product([self.extents[a] for a in self.axes])
        self.T = WARP if self.static_n is not None and self.static_n <= WARP else self.B
        self.rewrite()

    def _invariant_ops(self, guard) -> set:
        """The body's top-level ops without effects or regions whose values depend on no kept
        coordinate and no reduction (``w[j]`` of a row reduction): the register path computes
        them once per thread for all the groups it runs. Empty unless one of them is a load
        (nothing else is worth registers across groups)."""
        defined_inside = {r for op in walk_ops(guard) for r in op.results}
        stored = {op.operands[0] for op in walk_ops(guard, set(_EFFECTS))}  # (their loads stay per group)
        ok = {self.coords[a] for a in self.axes}
        out = set()
        for op in self._body_ops:
            if len(op.regions) or _has_effects(op) or op.name.startswith("kern.group") \
                    or op.name == "kern.view_load" and op.operands[0] in stored:
                continue
            if all(v in ok or (v not in defined_inside and v not in self.coords) for v in op.operands):
                out.add(op)
                ok.update(op.results)
        return out if any(op.name == "kern.view_load" for op in out) else set()

    # -- the rewrite ----------------------------------------------------------------------------
    def rewrite(self) -> None:
        fn, guard, B, T = self.fn, self.guard, self.B, self.T
        per_block = B // T
        K = self.opts.registers
        chunks = None if self.static_n is None else -(-self.static_n // T)
        how = (f"a {'warp' if T == WARP else f'block of {B} threads'} per group"
               + (f" ({per_block} groups per block)" if per_block > 1 else ""))
        if chunks is not None and K and chunks <= K:
            keep = f"its {chunks} item{'s' if chunks > 1 else ''} per thread kept in registers across the phases"
        elif chunks is not None:
            keep = (f"{chunks} items per thread, more than the {K} kept in registers: each phase re-reads "
                    "what it needs" if K else "registers off (--no-group-registers): each phase re-reads what it needs")
        else:
            keep = (f"at run time: up to {K * T} items per group kept in registers (at most {K} per "
                    "thread), larger groups re-read per phase" if K else
                    "registers off (--no-group-registers): each phase re-reads what it needs")
        # values that depend on no kept coordinate (w[j]) are loaded once per thread for all the
        # groups it runs: a block then runs GROUP_ROWS groups (fewer blocks, each reusing them)
        self.rows = GROUP_ROWS if self.invariant and K and (chunks is None or chunks <= K) else 1
        if self.rows > 1:
            loads = sorted({_load_name(op, fn, self.sig) for op in self.invariant if op.name == "kern.view_load"})
            keep += (f"; {', '.join(loads)} (the same for every group) loaded once per thread, each "
                     f"block running {self.rows} groups")
        names = ", ".join(self.names[a] for a in self.axes)
        rank = len(self.coords)
        if self.axes == list(range(rank - len(self.axes), rank)):
            along = f"coalesced along '{self.names[-1]}'"
        else:  # (the group's consecutive items are not the fastest coordinate's)
            along = (f"'{self.names[-1]}' is not reduced, so a warp's items are strided in memory: "
                     f"reduce over the last coordinate (or transpose) to coalesce")
        for _, red in self.segments:
            self.opts.remark(red, f"reducing over ({names}) with {how}, threads stepping through the "
                                  f"group's items ({along}); {keep}")
        kc = KernelContext(fn, self.sig, guard, B)
        self.kc = kc
        with ir.InsertionPoint(guard), guard.location:
            # (a constant extent is defined in the body, which goes away)
            self.extents = [_owner(v).clone().results[0] if isinstance(_owner(v), ir.Operation)
                            and _owner_parent(_owner(v)) == guard else v for v in self.extents]
            tid = gpu.ThreadIdOp(gpu.Dimension.x).result
            bid = gpu.BlockIdOp(gpu.Dimension.x).result
            gdim = gpu.GridDimOp(gpu.Dimension.x).result
            if per_block > 1:
                self.lane = arith.RemUIOp(tid, b.idx(T)).result
                team = arith.DivUIOp(tid, b.idx(T)).result
                start = b.add(b.mul(bid, b.idx(per_block)), team)
                step = b.mul(gdim, b.idx(per_block))
            else:
                self.lane, start, step = tid, bid, gdim
            self.lane32 = arith.RemUIOp(tid, b.idx(WARP)).result
            self.warp = arith.DivUIOp(tid, b.idx(WARP)).result
            groups = b.idx(1)
            for k in self.kept:
                groups = b.mul(groups, self.extents[k])
            n = b.idx(1)
            for a in self.axes:
                n = b.mul(n, self.extents[a])
            self.n = n
            self.loop_bounds = (start, groups, step)
            if chunks is not None:
                if K and chunks <= K:
                    self._registers(chunks)
                else:
                    self._group_loop(self._looped)
            elif K:
                fits = b.cmp("ule", n, b.idx(K * T))  # (uniform: the same for every group)
                op = scf.IfOp(fits, [], has_else=True)
                with ir.InsertionPoint(op.then_block):
                    self._registers(K)
                    scf.YieldOp([])
                with ir.InsertionPoint(op.else_block):
                    self._group_loop(self._looped)
                    scf.YieldOp([])
            else:
                self._group_loop(self._looped)
        kc.check_limit()
        guard.erase()
        self.sig.groups = {"extents": [_poly_text(self.extents[a], fn, self.sig, self.reductions[0])
                                       for a in self.axes], "per_block": per_block * self.rows}
        fn.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(self.sig.to_json())
        if MAPPING_ATTR in fn.attributes:  # (items no longer map linearly: sig.groups says how)
            del fn.attributes[MAPPING_ATTR]

    def _group_loop(self, emit) -> None:
        """``for g = start; g < groups; g += step { emit() }`` with the kept coordinates of
        group ``g`` in ``self.kept_map``."""
        loop = scf.ForOp(*self.loop_bounds)
        with ir.InsertionPoint(loop.body):
            g = loop.induction_variable
            kept_vals = self._delinearize(g, [self.extents[k] for k in self.kept])
            self.kept_map = dict(zip([self.coords[k] for k in self.kept], kept_vals))
            emit()
            scf.YieldOp([])

    def _delinearize(self, linear, extents: list) -> list:
        if not extents:
            return []
        if len(extents) == 1:
            return [linear]
        return kern.delinearize(linear, extents)

    def _item(self, c: ir.Value, kept: bool = True):
        """``(valid, mapping)`` of the lane's item ``q = lane + T*c``: whether it is in the group,
        and its reduced coordinates (and the group's kept ones unless ``kept`` is false)."""
        q = b.add(self.lane, b.mul(c, b.idx(self.T))) if not _is_zero(c) else self.lane
        valid = b.cmp("ult", q, self.n)
        mapping = dict(self.kept_map) if kept else {}
        red_vals = self._delinearize(q, [self.extents[a] for a in self.axes])
        mapping.update(zip([self.coords[a] for a in self.axes], red_vals))
        return valid, mapping

    def _clone(self, ops: list, mapping: dict, effects: bool | None) -> None:
        """Clone ``ops`` at the insertion point, operands through ``mapping`` (updated with the
        results); ``effects``: ``False`` skips the ops with effects, ``True`` clones only those,
        ``None`` all."""
        for op in ops:
            eff = _has_effects(op)
            if effects is False and eff and not len(op.results) or effects is True and not eff:
                continue
            new = op.clone()
            if effects is False and eff:  # (an `if` that writes and computes: its values, not its writes)
                for inner in walk_ops(new, set(_EFFECTS)):
                    inner.erase()
            _remap(new, mapping)
            for old_r, new_r in zip(op.results, new.results):
                mapping[old_r] = new_r

    def _registers(self, K: int) -> None:
        """The register path: each lane's ``K`` items computed once, kept in SSA values; the
        values that depend on no kept coordinate (``w[j]``) computed once per thread, before
        the loop over the groups (:attr:`invariant`)."""
        pre = [self._item(b.idx(c), kept=False) for c in range(K)]
        inv = self.invariant
        if inv:
            used = set()
            for op in [o for seg, red in self.segments for o in [*seg, red]] + list(self.tail):
                if op not in inv:
                    for o in [op, *walk_ops(op)]:
                        used.update(o.operands)
            live = [r for op in self._body_ops if op in inv for r in op.results if r in used]
            for valid, mapping in pre:
                op = scf.IfOp(valid, [v.type for v in live], has_else=True)
                with ir.InsertionPoint(op.then_block):
                    self._clone([o for o in self._body_ops if o in inv], mapping, effects=False)
                    scf.YieldOp([mapping[v] for v in live])
                with ir.InsertionPoint(op.else_block):
                    scf.YieldOp([_zero(v.type) for v in live])
                mapping.update(zip(live, op.results))
        self._group_loop(lambda: self._registers_group(pre))

    def _registers_group(self, pre: list) -> None:
        items = [(valid, {**mapping, **self.kept_map}) for valid, mapping in pre]
        later_uses = _uses_after(self.segments, self.tail)
        for s, (seg, red) in enumerate(self.segments):
            deferred = {v for op in seg if _has_effects(op) for o in [op, *walk_ops(op)] for v in o.operands}
            live = [r for op in seg for r in op.results
                    if r in later_uses[s] or r in deferred or r == red.operands[0]]
            kind = ir.StringAttr(red.attributes["kind"]).value
            t = red.results[0].type
            partial = None
            for valid, mapping in items:
                live = [v for v in live if v not in mapping]  # (hoisted: mapped already)
                op = scf.IfOp(valid, [v.type for v in live], has_else=True)
                with ir.InsertionPoint(op.then_block):
                    self._clone([o for o in seg if o not in self.invariant], mapping, effects=False)
                    scf.YieldOp([mapping[v] for v in live])
                with ir.InsertionPoint(op.else_block):
                    scf.YieldOp([_zero(v.type) for v in live])
                for v, r in zip(live, op.results):
                    mapping[v] = r
                e = b.select(valid, mapping[red.operands[0]], identity(kind, t))
                partial = e if partial is None else combine(kind, partial, e)
            total = self._team_reduce(kind, partial)
            for _, mapping in items:
                mapping[red.results[0]] = total
        for valid, mapping in items:
            with b.if_(valid):
                for seg, _ in self.segments:
                    self._clone(seg, mapping, effects=True)
                self._clone([o for o in self.tail if o not in self.invariant], mapping, effects=None)

    def _looped(self) -> None:
        """The re-reading path: each phase loops over the lane's items and recomputes."""
        totals: dict = {}
        T = self.T
        nchunks = arith.DivUIOp(b.add(self.n, b.idx(T - 1)), b.idx(T)).result
        for s, (seg, red) in enumerate(self.segments):
            kind = ir.StringAttr(red.attributes["kind"]).value
            t = red.results[0].type
            loop = scf.ForOp(b.idx(0), nchunks, b.idx(1), [identity(kind, t)])
            with ir.InsertionPoint(loop.body):
                valid, mapping = self._item(loop.induction_variable)
                mapping.update(totals)

                def then(seg_upto=self.segments[:s + 1], mapping=mapping, red=red):
                    for sg, _ in seg_upto:
                        self._clone(sg, mapping, effects=False)
                    return [mapping[red.operands[0]]]

                (e,) = b.if_else(valid, [t], then, lambda: [identity(kind, t)])
                scf.YieldOp([combine(kind, loop.inner_iter_args[0], e)])
            totals[red.results[0]] = self._team_reduce(kind, loop.results[0])
        loop = scf.ForOp(b.idx(0), nchunks, b.idx(1))
        with ir.InsertionPoint(loop.body):
            valid, mapping = self._item(loop.induction_variable)
            mapping.update(totals)
            with b.if_(valid):
                for seg, _ in self.segments:
                    self._clone(seg, mapping, effects=None)
                self._clone(self.tail, mapping, effects=None)
            scf.YieldOp([])

    def _team_reduce(self, kind: str, v: ir.Value) -> ir.Value:
        """``v`` combined over the team, the same bits in every thread: a ``gpu.shuffle xor``
        butterfly per warp, then (block teams) the warps' values through workgroup memory,
        combined in warp order."""
        off = WARP // 2
        while off >= 1:
            other, _ = b.shuffle("xor", v, off)
            v = combine(kind, v, other)
            off //= 2
        if self.T <= WARP:
            return v
        W = self.T // WARP
        word = v.type if not (isinstance(v.type, ir.IntegerType) and ir.IntegerType(v.type).width < 8) \
            else ir.IntegerType.get_signless(8)
        smem = self.kc.workgroup(word, W, "reduction across items", region="group_reduce")
        b.barrier()  # (the previous reduction's reads of the buffer are done)
        with b.if_(b.cmp("eq", self.lane32, b.idx(0))):
            b.store(v if word == v.type else arith.ExtUIOp(word, v).result, smem, self.warp)
        b.barrier()

        def load(w):
            x = b.load(smem, b.idx(w))
            return x if word == v.type else arith.TruncIOp(v.type, x).result

        out = load(0)
        for w in range(1, W):
            out = combine(kind, out, load(w))
        return out


def _is_zero(v) -> bool:
    o = _owner(v)
    return isinstance(o, ir.Operation) and o.name == "arith.constant" \
        and ir.IntegerAttr(o.attributes["value"]).value == 0


def _zero(t: ir.Type) -> ir.Value:
    return b.const(0, t)


def _owner_parent(op):
    p = op.parent
    return p.operation if hasattr(p, "operation") else p


def _remap(op, mapping: dict) -> None:
    for o in [op, *walk_ops(op)]:
        for i, v in enumerate(o.operands):
            if v in mapping:
                o.operands[i] = mapping[v]


def _uses_after(segments: list, tail: list) -> list:
    """Per segment ``s``: the values used by the ops of the later segments and the tail (nested
    ops included)."""
    out = []
    for s in range(len(segments)):
        used = set()
        later = [op for seg, red in segments[s + 1:] for op in [*seg, red]] + list(tail)
        for op in later:
            for o in [op, *walk_ops(op)]:
                used.update(o.operands)
        out.append(used)
    return out


def _merge_loads(ops: list, fn) -> list:
    """``ops`` with each top-level ``view_load`` equal to an earlier one (same buffer, operands
    and attributes) of a view no op of ``fn`` stores to replaced by the earlier one's value."""
    stored = set()
    for op in walk_ops(fn, {"kern.view_store", "kern.view_atomic"}):
        stored.add(op.operands[0])
    seen: dict = {}
    out = []
    for op in ops:
        if op.name == "kern.view_load" and op.operands[0] not in stored:
            key = (tuple(op.operands), tuple(sorted((k, str(op.attributes[k])) for k in op.attributes)))
            if key in seen:
                op.results[0].replace_all_uses_with(seen[key].results[0])
                op.erase()
                continue
            seen[key] = op
        out.append(op)
    return out


def _static_product(values: list):
    p = 1
    for v in values:
        o = _owner(v)
        if not isinstance(o, ir.Operation) or o.name != "arith.constant":
            return None
        p *= ir.IntegerAttr(o.attributes["value"]).value
    return p


def _coord_names(delin, rank: int) -> list:
    if kern.COORD_NAMES_ATTR in delin.attributes:
        return [ir.StringAttr(a).value for a in ir.ArrayAttr(delin.attributes[kern.COORD_NAMES_ATTR])]
    return [f"c{k}" for k in range(rank)]


def _poly_text(v, fn, sig: KernelSignature, op) -> str:
    """The size symbol or constant ``v`` is (the launcher's group count divides ``P`` by the
    product of the reduced extents)."""
    for name, a in zip(sig.arg_names, fn.regions[0].blocks[0].arguments):
        if a == v and name in sig.sizes:
            return name
    c = _static_product([v])
    if c is not None:
        return str(c)
    raise _error(op, "a reduction across items needs the reduced coordinates' extents to be size "
                     "symbols or constants", hint="over (r, j) in (R, N)")


def _load_name(op, fn, sig: KernelSignature) -> str:
    for name, a in zip(sig.arg_names, fn.regions[0].blocks[0].arguments):
        if a == op.operands[0]:
            return f"'{name}'"
    return "a view"
