"""Lowering a checked ``.kern`` program to the kern MLIR dialect (``dialect/kern.py``).

Each kernel becomes a ``func.func @name`` with the arguments ``params..., tables..., sizes...``
(scalars by value, buffers as ``memref<?xT>`` over their flat storage with ``T`` the *storage* type,
the hidden ``shared_indices`` tables of each index param of ``shared``/``shared_sum`` as
``memref<?xi32>``, then one ``index`` per size symbol) and the ``kern.signature`` attribute
(``dialect/signature.py``). The body is the per-thread program of item ``t`` in
``arith``/``math``/``scf`` plus ``kern`` ops (contract: ``docs/accessor-lowering.md``):

- Vectors are scalarised: a K-vector is K SSA values (no MLIR vector types).
- Accessor ops compute in the buffer's *compute* type (``f16``/``bf16`` storage -> ``f32``, or the
  ``compute`` clause): their results/values have that type, the memref keeps the storage type.
- Every buffer the body reads gets exactly one ``kern.read``, hoisted to the start of the body
  (unconditional, so block-wide reads are reached by every thread); accessor ``args`` are computed
  just before: ``(off, s)`` as ``index``, index buffers, table params; the ``default`` value of
  ``strided``/``pair strided`` reads is the op's typed ``default`` attribute (exact: rounded once
  from the literal). ``pair`` reads
  have ``2K`` results (first's ``K`` components, then second's).
- Outputs are written once, at the end of the body, at top level: each ``write``/``add`` buffer's
  pending value lives in SSA variables initialised to zero (``2K`` of them for a ``pair`` output)
  -- for an ``add`` output to the identity of its addition, ``-0.0`` for floats, so that adding a
  component or a path that changes nothing keeps the element's bits;
  assignments update it. A ``write`` output, or an ``add`` output with a per-thread accessor
  (sequential, strided, indexed, atomic), not assigned on every path carries an i1 "assigned" flag
  and its ``kern.write``/``kern.add`` sits in ``scf.if %assigned`` -- except the block-wide
  ``write sum``, ``write block_sum``, ``write pair`` and the collective ``add`` accessors (``sum``,
  ``block_sum``, ``pair``, ``shared_sum``), whose op is always emitted unconditionally (a thread
  that assigns nothing contributes 0). Other outputs never assigned get no op at all.
- ``let`` variables are mutable: values updated inside ``if``/``for`` flow out as ``scf.if`` /
  ``scf.for`` results (SSA construction over structured control flow). A ``for`` with literal
  bounds and at most ``UNROLL_MAX_TRIPS`` iterations (and a small body, ``UNROLL_MAX_NODES``, with
  no loop over runtime bounds in it) is unrolled instead: one copy of the body per iteration, with the loop variable a constant (so
  ``v[k]`` picks its component directly).
- ``return;`` ends the thread: later statements are skipped (a "returned" i1 flag guards the rest of
  the enclosing blocks and later loop iterations). Outputs assigned *before* the return keep their
  value and are written, like stores that already happened in C.
- A call of a function (``fn``) is inlined: its body is lowered in place over a state of its own
  (``lower_functions.py``); the kern IR has no calls.
- ``problem_size`` is the ``over`` size argument itself (or the scalar param, cast to ``index``).
- A dynamic component index ``v[k]`` is a chain of ``arith.select`` (an out-of-range ``k`` yields
  the last component).
- N-D problems ``over (i, j) in (M, N)``: the coordinates are ``kern.delinearize(t, M, N)`` at the
  start of the body (last coordinate fastest); ``problem_size`` is the product of the extents.
- ``view`` buffers are accessed where the program does, in program order: ``x[i, j]`` is a
  ``kern.view_load``, ``x.checked(i, j)`` a checked one (the typed ``default`` attribute: the
  param's ``default v`` or 0), ``x.in_bounds(i, j)`` a ``kern.in_bounds``; writes are
  ``kern.view_store`` (``+=`` loads first, with the same checking). Layout applications
  ``f(args)(m, k)`` are inlined: a functional layout's lets and result as ``index`` arithmetic, a
  strided layer as ``kern.in_bounds`` + ``kern.layout_apply`` (+ ``kern.swizzle``); the layers'
  in-bounds flags are and-ed into the ``mask`` operand of checked accesses (``layouts.md`` 1).
"""

from __future__ import annotations

from typing import Optional

from kernc.dialect import kern
from kernc.dialect.poly_arith import emit_poly
from kernc.dialect.signature import SIGNATURE_ATTR
from kernc.support.errors import CompileError, InternalCompilerError
from kernc.support.mlir import dialect, ir

from . import ast as A
from . import types as T
from .check import check
from .index_width import index_bound_program, index_reach
from .lower_buffers import BufferLowering, is_add_identity
from .lower_expr import flat, mlir_filename
from .lower_functions import FunctionLowering, result_key, returned_key
from .symbols import Symbol

arith = dialect("arith")
func = dialect("func")
scf = dialect("scf")

_RETURNED = "returned"

#: ``for`` loops with integer-literal bounds are unrolled while lowering (as ``#pragma unroll``
#: does) when they run at most UNROLL_MAX_TRIPS iterations and all the copies of the body -- those
#: of enclosing unrolled loops included -- add up to at most UNROLL_MAX_NODES AST nodes: a loop like
#: ``for k in 0..3`` over a vector's components then costs no loop, no dynamic component selects
#: (``v[k]``) and no LLVM loop passes, while nested short loops cannot multiply the code size.
UNROLL_MAX_TRIPS = 8
UNROLL_MAX_NODES = 512


def _unroll_trips(s: A.For, copies: int, nest_level: bool = False) -> Optional[range]:
    """The iterations of ``s`` if it is unrolled (see UNROLL_MAX_TRIPS), else None; ``copies`` is
    how many times the enclosing unrolled loops already repeat it; ``nest_level``: ``s`` is the
    whole body of a loop that is not unrolled, in a kernel over an N-D problem -- an inner level of
    a loop nest (``for r in 0..R { for c in 0..3 { acc += ... } }``, a convolution over RGB
    channels), which stays a loop: its copies would make the nest imperfect, and
    kern-tile-contractions and kern-mma-contractions tile only perfect nests (LLVM still unrolls
    it where they do not take it)."""
    if nest_level or not (isinstance(s.start, A.IntLit) and isinstance(s.stop, A.IntLit)):
        return None
    trips = range(s.start.value, s.stop.value)
    if len(trips) > UNROLL_MAX_TRIPS:
        return None
    if any(isinstance(n, A.For) and not (isinstance(n.start, A.IntLit) and isinstance(n.stop, A.IntLit))
           for n in A.iter_nodes(s.body)):
        # a loop around a loop over a runtime extent: the inner loop's iterations dominate, and
        # copies of it would split a perfect nest that kern-tile-contractions and
        # kern-mma-contractions tile as one (`for k1 in 0..4 { for k2 in 0..Q { ... } }`)
        return None
    budget = UNROLL_MAX_NODES // max(1, copies * len(trips))
    if A.count_nodes(s.body, budget) > budget:
        return None
    return trips


def lower(program: A.Program, context, verify: bool = True) -> "ir.Module":
    """Lower the checked ``program`` to a kern-IR ``ir.Module`` created in ``context``.

    ``program`` should have passed :func:`kernc.frontend.check.check` (it is checked here if it was
    not, which may raise :class:`kernc.errors.CompileError`). The kern dialect is loaded into
    ``context``. Raises :class:`kernc.errors.InternalCompilerError` if the produced module does not
    verify (a frontend bug, never a user error).

    ``verify=False`` skips module verification (tests inspect the IR).
    """
    if any(k.info is None for k in program.kernels):
        check(program)
    _load_kern(context)
    with context, ir.Location.file(mlir_filename(program.filename), 1, 1):
        module = ir.Module.create()
        for k in program.kernels:
            try:
                _KernelLowering(program, k, module).run()
            except (CompileError, InternalCompilerError, RecursionError):  # RecursionError: reported by the caller
                raise
            except Exception as exc:  # pragma: no cover - a frontend bug
                raise InternalCompilerError(f"lowering kernel '{k.name}' failed: {exc!r}") from exc
        if not verify:
            return module
        try:
            ok = module.operation.verify()
        except ir.MLIRError as exc:  # pragma: no cover - a frontend bug
            raise InternalCompilerError(f"the lowered kern module does not verify: {exc}") from exc
        if not ok:  # pragma: no cover
            raise InternalCompilerError("the lowered kern module does not verify")
    return module


def _load_kern(context) -> None:
    """Load the kern dialect into ``context``."""
    kern.load(context)


class _Env(dict):
    """The SSA state while lowering (state key -> value(s)) with nested scopes undone in place.

    A region (an ``scf.if`` branch, a loop body, a guarded segment of a block) is lowered in
    ``with env.scope():``; its writes are logged and undone when it ends, so the state outside
    is the state before the region. Copying the whole state for each region instead (``dict(env)``)
    cost the number of variables per ``if``: quadratic on a long body of lets and ifs."""

    _MISSING = object()

    def __init__(self):
        super().__init__()
        self._logs: list = []  # one list of (key, old value or _MISSING) per open scope

    def __setitem__(self, key, value):
        if self._logs:
            self._logs[-1].append((key, dict.get(self, key, self._MISSING)))
        dict.__setitem__(self, key, value)

    def scope(self):
        return _EnvScope(self)


class _EnvScope:
    def __init__(self, env: _Env):
        self.env = env

    def __enter__(self):
        self.env._logs.append([])
        return self.env

    def __exit__(self, *exc):
        log = self.env._logs.pop()
        for key, old in reversed(log):  # the oldest value of a key is restored last
            if old is _Env._MISSING:
                dict.pop(self.env, key, None)
            else:
                dict.__setitem__(self.env, key, old)
        return False


def _unflat(template, values: list, pos: int):
    if isinstance(template, list):
        n = len(template)
        return list(values[pos:pos + n]), pos + n
    return values[pos], pos + 1



class _KernelLowering(FunctionLowering, BufferLowering):
    """The lowering of one kernel: its ``func.func`` and the body's statements and control flow,
    over the SSA state ``env`` (:class:`_Env`); calls of functions are inlined
    (:class:`~kernc.frontend.lower_functions.FunctionLowering`)."""

    def __init__(self, program: A.Program, kernel: A.Kernel, module):
        super().__init__(program, kernel, module)
        self.returned_key = _RETURNED  # the "returned" flag a `return` sets (a function's in its body)
        self.copies = 1               # how many copies the enclosing unrolled loops make of a statement
        self._stmt_keys: dict = {}    # id(statement) -> (statement, keys it assigns): stmt_keys
        self._may_return: dict = {}   # id(statement) -> (statement, bool): may_return
        self._nest_levels: set = set()  # id(for statement): the inner levels of loop nests (_unroll_trips)

    # ---- kernel -----------------------------------------------------------------------------

    def run(self) -> None:
        info = self.info
        arg_types = []
        for p in info.params:
            if p.kind == "scalar":
                arg_types.append(T.mlir_type(p.ty))
            else:
                dyn = ir.ShapedType.get_dynamic_size()
                arg_types.append(ir.MemRefType.get([dyn], T.mlir_type(p.buffer.elem)))
        dyn = ir.ShapedType.get_dynamic_size()
        arg_types += [ir.MemRefType.get([dyn], ir.IntegerType.get_signless(32))] * len(info.tables)
        arg_types += [ir.IndexType.get()] * len(info.sizes)
        with self.loc(self.kernel), ir.InsertionPoint(self.module.body):
            f = func.FuncOp(info.name, ir.FunctionType.get(arg_types, []))
            f.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(info.signature().to_json())
            entry = f.add_entry_block()
        args = list(entry.arguments)
        for p, a in zip(info.params, args):
            self.args[p] = a
        rest = args[len(info.params):]
        for t, a in zip(info.tables, rest):
            self.table_args[(t.table_of, t.field)] = a
        for name, a in zip(info.sizes, rest[len(info.tables):]):
            self.size_args[name] = a
        with ir.InsertionPoint(entry):
            env = _Env()
            self.prologue(env)
            self.stmts(self.kernel.body.stmts, env)
            self.write_outputs(env)
            with self.loc(self.kernel.body):
                func.ReturnOp([])
        self.record_index_reach(f)

    def record_index_reach(self, f) -> None:
        """Complete the signature with what reaches ``index`` arithmetic in the body just lowered
        (:func:`~kernc.frontend.index_width.index_reach`): the non-``index`` scalar params whose
        values do (``KernelSignature.index_inputs``) and the constants' bound, with the program's
        own ``index`` constants the checker found (``index_literal_max``)."""
        info = self.info
        scalars = [p for p in info.params if p.kind == "scalar" and p.ty is not None]
        reach = index_reach(f.operation, [(self.args[p], p.ty.name) for p in scalars])
        sig = info.signature()
        sig.index_inputs = [scalars[k].name for k in reach.params
                            if not (scalars[k].ty.is_index or scalars[k].ty.is_bool)]
        sig.index_literal_max = max(sig.index_literal_max, reach.constant_bound)
        sig.index_bound = index_bound_program(f.operation, [(self.args[p], p.name, p.ty.name) for p in scalars],
                                              [(self.size_args[n], n) for n in info.sizes],
                                              (sig.problem_size, sig.block))
        f.attributes[SIGNATURE_ATTR] = ir.StringAttr.get(sig.to_json())

    def prologue(self, env: dict) -> None:
        info = self.info
        for p in info.params:
            if p.kind == "scalar":
                env[p] = self.args[p]
        for name, sym in info.size_symbols.items():
            env[sym] = self.size_args[name]
        if info.coords:
            with self.loc(self.kernel.over):
                t = kern.ThreadIdOp(ir.IndexType.get()).result
                if len(info.coords) == 1:
                    values = [t]
                else:
                    values = kern.delinearize(t, [emit_poly(x, self.size_args) for x in info.extents])
                    # the coordinates' source names, for messages (kern-coalesce-views' remarks)
                    values[0].owner.attributes["coord_names"] = ir.ArrayAttr.get(
                        [ir.StringAttr.get(c.name) for c in info.coords])
            for sym, v in zip(info.coords, values):
                env[sym] = v
        self.bind_accessor_args(env)
        self.read_buffers(env)
        self.init_outputs(env, self.modified(self.kernel.body.stmts))
        if info.nested_return:
            with self.loc(self.kernel.body):
                env[_RETURNED] = self.const(T.BOOL, False)

    # ---- SSA state --------------------------------------------------------------------------

    def modified(self, stmts: list, out: Optional[dict] = None) -> list:
        """State keys assigned by ``stmts`` (ordered, unique): locals, outputs, flags, returned."""
        if out is None:
            out = {}
        for s in stmts:
            out.update(dict.fromkeys(self.stmt_keys(s)))
        return list(out)

    def stmt_keys(self, s) -> list:
        """The state keys statement ``s`` assigns, in order of first assignment (nested blocks
        included), without the locals it declares inside itself (which no code after it sees).
        Computed once per statement: a block's statements are asked again by every enclosing
        region and every guard, and walking them anew each time was quadratic in the nesting."""
        memo = self._stmt_keys
        got = memo.get(id(s))
        if got is not None:
            return got[1]
        keys: dict = {}
        declared: set = set()
        if isinstance(s, A.Assign):
            keys[s.sym] = None
            if s.sym in self.info.flagged_outputs:
                keys[("flag", s.sym)] = None
        elif isinstance(s, A.Return) and s.fn is not None:  # `return value;` of a function
            keys[result_key(s.fn)] = None
            if self.function(s.fn).nested_return:
                keys[returned_key(s.fn)] = None
        elif isinstance(s, A.Return):
            if self.info.nested_return:
                keys[_RETURNED] = None
        else:
            blocks = []
            if isinstance(s, A.If):
                blocks.append(s.then.stmts)
                if isinstance(s.orelse, A.Block):
                    blocks.append(s.orelse.stmts)
                elif isinstance(s.orelse, A.If):
                    blocks.append([s.orelse])
            elif isinstance(s, A.For):
                blocks.append(s.body.stmts)
            for block in blocks:
                for x in block:
                    if isinstance(x, A.Let):
                        declared.add(x.sym)
                    for k in self.stmt_keys(x):
                        keys.setdefault(k, None)
        result = [k for k in keys if k not in declared]
        memo[id(s)] = (s, result)  # s kept alive: its id stays its own
        return result

    def may_return(self, s) -> bool:
        """Whether statement ``s`` may execute a ``return`` (memoised per statement, as
        :meth:`stmt_keys`)."""
        got = self._may_return.get(id(s))
        if got is not None:
            return got[1]
        if isinstance(s, A.Return):
            r = True
        elif isinstance(s, A.If):
            r = any(self.may_return(x) for x in s.then.stmts)
            if not r and isinstance(s.orelse, A.Block):
                r = any(self.may_return(x) for x in s.orelse.stmts)
            elif not r and isinstance(s.orelse, A.If):
                r = self.may_return(s.orelse)
        elif isinstance(s, A.For):
            r = any(self.may_return(x) for x in s.body.stmts)
        else:
            r = False
        self._may_return[id(s)] = (s, r)
        return r

    def guarded(self, stmts: list, env: dict, loc_node, start: int = 0, stop: Optional[int] = None) -> None:
        """Lower the segment ``stmts[start:stop]`` inside ``scf.if !returned`` (the thread may
        already have returned). The keys the segment assigns flow out as the ``scf.if`` results,
        and so do the locals it declares when statements follow it in the block (they may read
        them): on the path that had returned they are zeros, never read, since every later
        segment is guarded too."""
        stop = len(stmts) if stop is None else stop
        segment = stmts[start:stop]
        keys = [k for k in self.modified(segment) if k in env]
        new = [x.sym for x in segment if isinstance(x, A.Let)] if stop < len(stmts) else []
        new_types = [[T.mlir_type(T.scalar_of(sym.ty))] * T.width(sym.ty) for sym in new]
        with self.loc(loc_node):
            true = self.const(T.BOOL, True)
            not_ret = arith.xori(env[self.returned_key], true)
            types = [v.type for k in keys for v in flat(env[k])] + [t for ts in new_types for t in ts]
            ifop = scf.IfOp(not_ret, types, has_else=bool(types))
        with ir.InsertionPoint(ifop.then_block), env.scope():
            self.stmts(stmts, env, start, stop)
            with self.loc(loc_node):
                scf.YieldOp([v for k in keys for v in flat(env[k])] + [v for sym in new for v in flat(env[sym])])
        if types:
            with ir.InsertionPoint(ifop.else_block), self.loc(loc_node):
                zeros = [self.const(T.scalar_of(sym.ty), 0) for sym, ts in zip(new, new_types) for _ in ts]
                scf.YieldOp([v for k in keys for v in flat(env[k])] + zeros)
        results = list(ifop.results)
        self.rebind(env, keys, results)
        pos = sum(len(flat(env[k])) for k in keys)
        for sym, ts in zip(new, new_types):
            env[sym] = results[pos:pos + len(ts)] if isinstance(sym.ty, T.VectorType) else results[pos]
            pos += len(ts)

    @staticmethod
    def rebind(env: dict, keys: list, values: list) -> None:
        pos = 0
        for k in keys:
            env[k], pos = _unflat(env[k], values, pos)

    # ---- statements -------------------------------------------------------------------------

    def stmts(self, stmts: list, env: dict, start: int = 0, stop: Optional[int] = None) -> None:
        """Lower ``stmts[start:stop]``. After a statement that may return, the rest of the block
        runs only while the thread has not returned: it is cut into segments, each up to and
        including the next statement that may return, each in its own guard, one after the other
        (:meth:`guarded`). Guards nested one inside the other (as before) made ``n`` early returns
        ``n`` nested ``scf.if``: too deep for the recursion limit past a few hundred, and
        superlinear in MLIR's canonicalizer and the interpreter; and slicing the rest of the block
        after every statement made a long body quadratic."""
        n = len(stmts) if stop is None else stop
        i = start
        while i < n:
            s = stmts[i]
            if isinstance(s, A.Return):
                if s.value is not None:
                    self.function_return(s, env)
                if self.returned_key in env:
                    with self.loc(s):
                        env[self.returned_key] = self.const(T.BOOL, True)
                return  # the rest of the block is unreachable
            self.stmt(s, env)
            i += 1
            if i < n and self.returned_key in env and self.may_return(s):
                break
        while i < n:  # the guarded segments
            j = i
            while j < n - 1 and not self.may_return(stmts[j]):
                j += 1
            self.guarded(stmts, env, stmts[i], i, j + 1)
            if isinstance(stmts[j], A.Return):
                return  # the rest of the block is unreachable
            i = j + 1

    def _stmt(self, s, env: dict) -> None:
        """One statement (:meth:`stmt` of :class:`ExprLowering` reports where a RecursionError
        happened); a ``let`` is lowered there."""
        if isinstance(s, A.Assign):
            self.assign(s, env)
        elif isinstance(s, A.If):
            self.if_(s, env)
        elif isinstance(s, A.For):
            self.for_(s, env)
        else:
            super()._stmt(s, env)

    def assign(self, s: A.Assign, env: dict) -> None:
        sym: Symbol = s.sym
        if sym.kind == "buffer" and sym.buffer.is_view:
            self.view_store(s, env)
            return
        target = s.target
        index = target.index if isinstance(target, A.Index) else None
        inner = target.base if isinstance(target, A.Index) else target
        b = sym.buffer if sym.kind == "buffer" else None
        if b is not None and b.is_pair:
            # pending: 2K values, first's K components then second's
            if isinstance(s.value, A.TupleLit):
                parts = [(0, s.value.elems[0]), (1, s.value.elems[1])]
            else:
                parts = [(0 if inner.name == "first" else 1, s.value)]
            values = [(part, self.assigned_value(e, env)) for part, e in parts]
        else:
            values = [(None, self.assigned_value(s.value, env))]
        with self.loc(s):
            elem = T.scalar_of(sym.ty)
            op = s.op[:-1] if s.op != "=" else None

            # An `add` output's pending value starts as the identity -0.0 (0 for integers):
            # `o += x` is then `x` and `o -= x` is `-x`, bitwise (-0.0 + x == x and
            # -0.0 - x == -x for every x, signed zeros included), without the `0 - x` that would
            # hide the product of `o -= a*b` from kern-contract-fma; the accessor then adds it to
            # the element, and e + (-x) == e - x. Only the identity itself folds so: after
            # `o = 0.0`, `o -= x` is `+0.0 - x`. A `write` output stores its value as it is, so
            # there `o -= x` stays `0 - x` (+0.0 for x = +0.0, where -x is -0.0), as does a
            # variable's `s -= x`.
            pending = sym.kind == "buffer" and b is not None and b.access == "add"

            def combine(old, new):
                if op is None:
                    return new
                if pending and op in ("+", "-") and is_add_identity(old):
                    if op == "+":
                        return new
                    if elem.is_float:
                        return arith.negf(new)
                return self.scalar_binop(op, elem, old, new)

            if b is not None and b.is_pair:
                k = b.components
                cur = list(env[sym])
                for part, v in values:
                    seg = cur[part * k:(part + 1) * k]
                    new = self.update(seg if k > 1 else seg[0], index, v, combine, env)
                    cur[part * k:(part + 1) * k] = flat(new)
                env[sym] = cur
            else:
                env[sym] = self.update(env[sym], index, values[0][1], combine, env)
            if ("flag", sym) in env:
                env[("flag", sym)] = self.const(T.BOOL, True)

    def update(self, cur, index, v, combine, env: dict):
        """``cur`` (a scalar or a list of components) after ``combine`` with ``v``; ``index`` is the
        component index expression of ``x[k] = v`` (or None: the whole value, scalars broadcast)."""
        if index is not None:
            cur = list(cur)
            c = self.component(index)
            if c is not None:  # an out-of-range index changes nothing, as the selects below
                if 0 <= c < len(cur):
                    cur[c] = combine(cur[c], v)
                return cur
            k = self.expr(index, env)
            out = []
            for i, c in enumerate(cur):
                hit = self.scalar_binop("==", index.ty, k, self.const(index.ty, i))
                out.append(arith.select(hit, combine(c, v), c))
            return out
        if isinstance(cur, list):
            vals = v if isinstance(v, list) else [v] * len(cur)
            return [combine(c, x) for c, x in zip(cur, vals)]
        return combine(cur, v)

    def if_(self, s: A.If, env: dict) -> None:
        branches = [s.then.stmts]
        if isinstance(s.orelse, A.Block):
            branches.append(s.orelse.stmts)
        elif isinstance(s.orelse, A.If):
            branches.append([s.orelse])
        keys = [k for k in self.stmt_keys(s) if k in env]
        cond = self.expr(s.cond, env)
        with self.loc(s):
            types = [v.type for k in keys for v in flat(env[k])]
            has_else = len(branches) > 1 or bool(keys)
            ifop = scf.IfOp(cond, types, has_else=has_else)
        blocks = [ifop.then_block] + ([ifop.else_block] if has_else else [])
        for i, block in enumerate(blocks):
            with ir.InsertionPoint(block), env.scope():
                if i < len(branches):
                    self.stmts(branches[i], env)
                with self.loc(s):
                    scf.YieldOp([v for k in keys for v in flat(env[k])])
        self.rebind(env, keys, list(ifop.results))

    def for_(self, s: A.For, env: dict) -> None:
        trips = _unroll_trips(s, self.copies, id(s) in self._nest_levels)
        if trips is not None:
            self.unrolled_for(s, trips, env)
            return
        ty = s.sym.ty
        start, stop = self.expr(s.start, env), self.expr(s.stop, env)
        # scf.for compares its bounds as signed, in `index`: unsigned bounds on either side of
        # 2^(w-1) (a u64 loop across 2^63) would run no iteration, and 64-bit bounds beyond 2^31
        # would be truncated by the GPU code's 32-bit index. Such a loop runs over its trip count
        # instead: max(b - a, 0) (b > a compared in the bounds' own signedness), from 0, with
        # k = a + i. The count itself is an index compared signed, so 2^63 trips or more run none.
        by_trips = not ty.is_index and ty.is_int and (ty.is_unsigned or ty.bits > 32)
        count_ty = T.SCALARS[f"u{ty.bits}"] if by_trips else ty  # b - a and i are counts
        if by_trips:
            with self.loc(s):
                gt = arith.CmpIPredicate.ugt if ty.is_unsigned else arith.CmpIPredicate.sgt
                trips = arith.select(arith.cmpi(gt, stop, start), arith.subi(stop, start), self.const(ty, 0))
            lo = self.const(T.INDEX, 0)
            hi = self.convert(trips, count_ty, T.INDEX)
        else:
            lo, hi = self.convert(start, ty, T.INDEX), self.convert(stop, ty, T.INDEX)
        keys = [k for k in self.stmt_keys(s) if k in env]
        with self.loc(s):
            one = self.const(T.INDEX, 1)
            inits = [v for k in keys for v in flat(env[k])]
            loop = scf.ForOp(lo, hi, one, inits)
        with ir.InsertionPoint(loop.body), env.scope():
            self.rebind(env, keys, list(loop.inner_iter_args))
            with self.loc(s):
                k = self.convert(loop.induction_variable, T.INDEX, count_ty)
                env[s.sym] = arith.addi(start, k) if by_trips else k
            body = s.body.stmts
            if len(body) == 1 and isinstance(body[0], A.For) and self.kernel.over.extents is not None:
                self._nest_levels.add(id(body[0]))  # (see _unroll_trips)
            if self.returned_key in env and body and self.may_return(s):
                self.guarded(body, env, s)
            else:
                self.stmts(body, env)
            with self.loc(s):
                scf.YieldOp([v for k in keys for v in flat(env[k])])
        self.rebind(env, keys, list(loop.results))

    def unrolled_for(self, s: A.For, trips: range, env: dict) -> None:
        """``for k in a..b`` with literal bounds, one copy of the body per iteration (``k`` a
        constant in each): the same operations in the same order as the ``scf.for``."""
        body = s.body.stmts
        guard = self.returned_key in env and self.may_return(s)
        keys = [k for k in self.stmt_keys(s) if k in env]
        outer_copies, self.copies = self.copies, self.copies * len(trips)
        with env.scope():  # the body's locals end with the loop; the keys' values flow out
            for k in trips:
                self.unrolled[s.sym] = k  # a use of the variable is this constant (see ``name``)
                if guard:  # a later iteration runs only while the thread has not returned
                    self.guarded(body, env, s)
                else:
                    self.stmts(body, env)
            values = [env[key] for key in keys]
        self.unrolled.pop(s.sym, None)
        self.copies = outer_copies
        for key, v in zip(keys, values):
            env[key] = v

    def view_store(self, s: A.Assign, env: dict) -> None:
        sym = s.sym
        b = sym.buffer
        target = s.target
        if s.atomic is not None:
            self.view_atomic(s, env)
            return
        checked = isinstance(target, A.Method)
        vals, mask = self.coords(target.coords, env)
        v = self.assigned_value(s.value, env)
        with self.loc(s):
            buf, sizes, syms = self.args[sym], self.view_sizes(b), b.layout.symbols
            if s.op != "=":
                ct = T.mlir_type(b.compute_elem)
                old = kern.view_load(buf, vals, sizes, b.layout_text, syms, ct, checked=checked,
                                     default=0, mask=mask if checked else None)
                v = self.scalar_binop(s.op[:-1], b.compute_elem, old, v)
            kern.view_store(buf, vals, sizes, v, b.layout_text, syms, checked=checked,
                            mask=mask if checked else None)

    def view_atomic(self, s: A.Assign, env: dict) -> None:
        """``x.atomic(c) += v`` (``-= v`` adds ``-v``; two's complement for integers),
        ``x.atomic_min(c) = v``, ``x.atomic_max(c) = v``: one ``kern.view_atomic``."""
        sym = s.sym
        b = sym.buffer
        vals, mask = self.coords(s.target.coords, env)
        v = self.assigned_value(s.value, env)
        with self.loc(s):
            if s.op == "-=":
                # -0.0 - v is -v exactly (0.0 - 0.0 would turn an added -0.0 into +0.0)
                zero = self.const(b.compute_elem, -0.0 if b.compute_elem.is_float else 0)
                v = self.scalar_binop("-", b.compute_elem, zero, v)
            if b.compute_elem != b.elem:  # f16/bf16: computed in f32, added in the storage type
                v = self.convert(v, b.compute_elem, b.elem)
            kern.view_atomic(self.args[sym], vals, self.view_sizes(b), v, b.layout_text,
                             b.layout.symbols, s.atomic, mask=mask)
