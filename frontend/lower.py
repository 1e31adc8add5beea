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
  bounds and at most ``UNROLL_MAX_TRIPS`` iterations (and a small body, ``UNROLL_MAX_NODES``) is
  unrolled instead: one copy of the body per iteration, with the loop variable a constant (so
  ``v[k]`` picks its component directly).
- ``return;`` ends the thread: later statements are skipped (a "returned" i1 flag guards the rest of
  the enclosing blocks and later loop iterations). Outputs assigned *before* the return keep their
  value and are written, like stores that already happened in C.
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

from math import copysign
from typing import Optional

from kernc.dialect import kern
from kernc.dialect.signature import SIGNATURE_ATTR
from kernc.errors import CompileError, InternalCompilerError
from kernc.mlir import dialect, ir

from . import ast as A
from . import types as T
from .index_width import index_reach
from .layouts import FnLayer, StridedLayer
from .expressions import literal_fraction
from .language import BLOCK_WIDE_OUTPUTS, FLOAT_UNARY, TABLE_ARGS
from .symbols import KernelInfo, Symbol

arith = dialect("arith")
func = dialect("func")
scf = dialect("scf")
math = dialect("math")

_RETURNED = "returned"

_CMPI = {
    "==": ("eq", "eq"), "!=": ("ne", "ne"),
    "<": ("slt", "ult"), "<=": ("sle", "ule"), ">": ("sgt", "ugt"), ">=": ("sge", "uge"),
}
_CMPF = {"==": "oeq", "!=": "une", "<": "olt", "<=": "ole", ">": "ogt", ">=": "oge"}

#: ``for`` loops with integer-literal bounds are unrolled while lowering (as ``#pragma unroll``
#: does) when they run at most UNROLL_MAX_TRIPS iterations and all the copies of the body -- those
#: of enclosing unrolled loops included -- add up to at most UNROLL_MAX_NODES AST nodes: a loop like
#: ``for k in 0..3`` over a vector's components then costs no loop, no dynamic component selects
#: (``v[k]``) and no LLVM loop passes, while nested short loops cannot multiply the code size.
UNROLL_MAX_TRIPS = 8
UNROLL_MAX_NODES = 512


def _unroll_trips(s: A.For, copies: int) -> Optional[range]:
    """The iterations of ``s`` if it is unrolled (see UNROLL_MAX_TRIPS), else None; ``copies`` is
    how many times the enclosing unrolled loops already repeat it."""
    if not (isinstance(s.start, A.IntLit) and isinstance(s.stop, A.IntLit)):
        return None
    trips = range(s.start.value, s.stop.value)
    if len(trips) > UNROLL_MAX_TRIPS:
        return None
    budget = UNROLL_MAX_NODES // max(1, copies * len(trips))
    if A.count_nodes(s.body, budget) > budget:
        return None
    return trips


def mlir_filename(name: str) -> str:
    """``name`` as MLIR can hold it in a location: a file name that is not UTF-8 reaches Python
    with its bad bytes as surrogate escapes (``os.fsdecode``), which MLIR's strings refuse; they
    become ``\\xNN`` text."""
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")

def lower(program: A.Program, context, verify: bool = True) -> "ir.Module":
    """Lower the checked ``program`` to a kern-IR ``ir.Module`` created in ``context``.

    ``program`` should have passed :func:`kernc.frontend.check.check` (it is checked here if it was
    not, which may raise :class:`kernc.errors.CompileError`). The kern dialect is loaded into
    ``context``. Raises :class:`kernc.errors.InternalCompilerError` if the produced module does not
    verify (a frontend bug, never a user error).

    ``verify=False`` skips module verification (tests inspect the IR).
    """
    if any(k.info is None for k in program.kernels):
        from .check import check

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


def _accessor_op(cls, b, buffer, args, sizes, values=None, **kw):
    """Create a kern.read/write/add of buffer ``b`` (a :class:`BufferInfo`)."""
    syms = b.layout.symbols
    if cls is kern.ReadOp:
        default = None
        if b.accessor in ("strided_default", "pair_strided_default"):
            default = (T.mlir_type(T.default_scalar(b.compute_elem)), b.default_value)
        return kern.read(buffer, args, sizes, b.accessor, str(b.layout), syms, values, default=default)
    kind = "write" if cls is kern.WriteOp else "add"
    return kern.write(kind, buffer, args, sizes, values, b.accessor, str(b.layout), syms)


def _emit_poly(poly, env: dict):
    """``poly`` (a :class:`kernc.dialect.strided.Poly`) as ``index`` arithmetic over ``env``
    (size symbol -> value)."""
    idx = ir.IndexType.get()
    total = None
    for syms, coeff in poly.terms:
        term = arith.constant(idx, coeff) if (coeff != 1 or not syms) else None
        for name in syms:
            term = env[name] if term is None else arith.muli(term, env[name])
        total = term if total is None else arith.addi(total, term)
    return total if total is not None else arith.constant(idx, 0)


def _and(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return arith.andi(a, b)


def _is_add_identity(v) -> bool:
    """True if ``v`` is an ``arith.constant`` identity of addition: ``-0.0`` for a float (the
    initial value of a pending ``add`` output, see ``_KernelLowering.prologue``), ``0`` for an
    integer. A float ``+0.0`` is not one: ``+0.0 + (-0.0)`` is ``+0.0``, not ``-0.0``."""
    try:
        op = v.owner
        if not isinstance(op, ir.Operation) and hasattr(op, "operation"):
            op = op.operation
        if op.name != "arith.constant":
            return False
        attr = op.attributes["value"]
        if isinstance(attr, ir.FloatAttr):
            x = ir.FloatAttr(attr).value
            return x == 0.0 and copysign(1.0, x) < 0
        return ir.IntegerAttr(attr).value == 0
    except Exception:
        return False


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


def _flat(v) -> list:
    return list(v) if isinstance(v, list) else [v]


def _unflat(template, values: list, pos: int):
    if isinstance(template, list):
        n = len(template)
        return list(values[pos:pos + n]), pos + n
    return values[pos], pos + 1


#: Float binary operators -> ``arith`` builder names.
_FLOAT_BINARY = {"+": "addf", "-": "subf", "*": "mulf", "/": "divf", "%": "remf"}
#: Integer binary operators -> (signed, unsigned) ``arith`` builder names (C truncating ``/ %``,
#: floor ``//``; bitwise and logical ops are the same for both).
_INT_BINARY = {
    "+": ("addi", "addi"), "-": ("subi", "subi"), "*": ("muli", "muli"),
    "/": ("divsi", "divui"), "%": ("remsi", "remui"), "//": ("floordivsi", "divui"),
    "&": ("andi", "andi"), "&&": ("andi", "andi"), "|": ("ori", "ori"), "||": ("ori", "ori"),
    "^": ("xori", "xori"), "<<": ("shli", "shli"), ">>": ("shrsi", "shrui"),
}


class _KernelLowering:
    def __init__(self, program: A.Program, kernel: A.Kernel, module):
        self.program = program
        self.kernel = kernel
        self.info: KernelInfo = kernel.info
        self.module = module
        self.filename = program.filename
        self.args: dict = {}          # Symbol -> block argument (scalar params, buffers)
        self.size_args: dict = {}     # size symbol name -> block argument
        self.accessor_args: dict = {}  # buffer Symbol -> list of op args
        self.table_args: dict = {}    # (index param, table field) -> block argument
        self.assigned_outputs: set = set()
        self.unrolled: dict = {}      # loop variable Symbol -> its value in the unrolled copy
        self.copies = 1               # how many copies the enclosing unrolled loops make of a statement
        self._stmt_keys: dict = {}    # id(statement) -> (statement, keys it assigns): stmt_keys
        self._may_return: dict = {}   # id(statement) -> (statement, bool): may_return

    # ---- helpers ----------------------------------------------------------------------------

    def loc(self, node) -> "ir.Location":
        loc = node.loc if isinstance(node, (A.Node, Symbol)) else node
        return ir.Location.file(mlir_filename(loc.filename), loc.line, loc.column)

    def component(self, index: A.Expr) -> Optional[int]:
        """The value of a component index known while lowering: a literal, or the variable of an
        unrolled loop (then possibly out of range, see :meth:`update` and ``_expr``)."""
        if isinstance(index, A.IntLit):
            return index.value
        if isinstance(index, A.Name) and index.sym in self.unrolled:
            return self.unrolled[index.sym]
        return None

    def const(self, s: T.ScalarType, value):
        s = T.default_scalar(s)
        ty = T.mlir_type(s)
        if s.is_float:
            return arith.constant(ty, float(value))
        if s.is_bool:
            return arith.constant(ty, 1 if value else 0)
        v = int(value)
        if not s.is_index:
            bits = s.bits
            v &= (1 << bits) - 1
            if v >= 1 << (bits - 1):
                v -= 1 << bits
        return arith.constant(ty, v)

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
            self.epilogue(env)
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
                    values = kern.delinearize(t, [_emit_poly(x, self.size_args) for x in info.extents])
                    # the coordinates' source names, for messages (kern-coalesce-views' remarks)
                    values[0].owner.attributes["coord_names"] = ir.ArrayAttr.get(
                        [ir.StringAttr.get(c.name) for c in info.coords])
            for sym, v in zip(info.coords, values):
                env[sym] = v
        # accessor arguments (strided offsets/strides as index, index buffers)
        for p in info.params:
            if p.kind != "buffer":
                continue
            b = p.buffer
            with self.loc(p):
                self.accessor_args[p] = self.op_args(p, env)
        # one read per buffer the body uses, unconditional, at the start
        for p in info.used_reads:
            b = p.buffer
            syms = b.layout.symbols
            with self.loc(p):
                op = _accessor_op(kern.ReadOp, b, self.args[p], self.accessor_args[p],
                                  [self.size_args[s] for s in syms],
                                  values=[T.mlir_type(b.compute_elem)] * b.flat_width)
                results = list(op.results)
            env[p] = results if (b.components > 1 or b.is_pair) else results[0]
        # pending output values and flags
        assigned = self.modified(self.kernel.body.stmts)
        for p in info.outputs:
            b = p.buffer
            always = b.access == "write" and b.accessor in BLOCK_WIDE_OUTPUTS
            if p not in assigned and not always:
                continue
            self.assigned_outputs.add(p)
            with self.loc(p):
                # An `add` output's pending update starts as the identity of the addition: -0.0
                # for a float (y + (-0.0) == y bitwise, so a component or path that changes
                # nothing keeps the element's bits, a -0.0 included); +0.0 would turn a -0.0
                # element into +0.0. A `write` output's value starts as 0 (+0.0).
                init = -0.0 if (b.access == "add" and T.default_scalar(b.compute_elem).is_float) else 0
                zeros = [self.const(b.compute_elem, init) for _ in range(b.flat_width)]
                env[p] = zeros if (b.components > 1 or b.is_pair) else zeros[0]
                if p in info.flagged_outputs:
                    env[("flag", p)] = self.const(T.BOOL, False)
        if info.nested_return:
            with self.loc(self.kernel.body):
                env[_RETURNED] = self.const(T.BOOL, False)

    def op_args(self, p: Symbol, env: dict) -> list:
        """The ``args`` operands of buffer ``p``'s accessor ops (``docs/accessor-lowering.md``)."""
        b = p.buffer
        acc = b.accessor
        if acc in ("strided", "strided_default", "pair_strided_default"):
            return [self.convert(self.expr(a, env), a.ty, T.INDEX) for a in b.accessor_args]
        if acc in ("indexed", "atomic"):
            idx_sym = next(s for s in self.info.params if s.name == b.index_param)
            return [self.args[idx_sym]]
        if acc in TABLE_ARGS:
            return [self.table_args[(b.index_param, f)] for f in TABLE_ARGS[acc]]
        return []

    def epilogue(self, env: dict) -> None:
        for p in self.info.outputs:
            if p not in self.assigned_outputs:
                continue
            b = p.buffer
            syms = b.layout.symbols
            with self.loc(p):
                values = _flat(env[p])
                sizes = [self.size_args[s] for s in syms]
                op_cls = kern.WriteOp if b.access == "write" else kern.AddOp
                flag = env.get(("flag", p))
                if flag is not None:
                    ifop = scf.IfOp(flag, [], has_else=False)
                    with ir.InsertionPoint(ifop.then_block):
                        _accessor_op(op_cls, b, self.args[p], self.accessor_args[p], sizes, values)
                        scf.YieldOp([])
                else:
                    _accessor_op(op_cls, b, self.args[p], self.accessor_args[p], sizes, values)

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
            not_ret = arith.xori(env[_RETURNED], true)
            types = [v.type for k in keys for v in _flat(env[k])] + [t for ts in new_types for t in ts]
            ifop = scf.IfOp(not_ret, types, has_else=bool(types))
        with ir.InsertionPoint(ifop.then_block), env.scope():
            self.stmts(stmts, env, start, stop)
            with self.loc(loc_node):
                scf.YieldOp([v for k in keys for v in _flat(env[k])] + [v for sym in new for v in _flat(env[sym])])
        if types:
            with ir.InsertionPoint(ifop.else_block), self.loc(loc_node):
                zeros = [self.const(T.scalar_of(sym.ty), 0) for sym, ts in zip(new, new_types) for _ in ts]
                scf.YieldOp([v for k in keys for v in _flat(env[k])] + zeros)
        results = list(ifop.results)
        self.rebind(env, keys, results)
        pos = sum(len(_flat(env[k])) for k in keys)
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
                if _RETURNED in env:
                    with self.loc(s):
                        env[_RETURNED] = self.const(T.BOOL, True)
                return  # the rest of the block is unreachable
            self.stmt(s, env)
            i += 1
            if i < n and _RETURNED in env and self.may_return(s):
                break
        while i < n:  # the guarded segments
            j = i
            while j < n - 1 and not self.may_return(stmts[j]):
                j += 1
            self.guarded(stmts, env, stmts[i], i, j + 1)
            if isinstance(stmts[j], A.Return):
                return  # the rest of the block is unreachable
            i = j + 1

    def stmt(self, s, env: dict) -> None:
        try:
            self._stmt(s, env)
        except RecursionError as err:  # the innermost statement names where (the caller reports it)
            if getattr(err, "kernc_loc", None) is None:
                err.kernc_loc = s.loc
            raise

    def _stmt(self, s, env: dict) -> None:
        if isinstance(s, A.Let):
            v = self.expr(s.value, env)
            env[s.sym] = list(v) if isinstance(v, list) else v
        elif isinstance(s, A.Assign):
            self.assign(s, env)
        elif isinstance(s, A.If):
            self.if_(s, env)
        elif isinstance(s, A.For):
            self.for_(s, env)
        else:  # pragma: no cover
            raise InternalCompilerError(f"cannot lower statement {type(s).__name__}")

    def assigned_value(self, e: A.Expr, env: dict):
        """The value of ``e`` assigned to an output or variable (widened from an output's storage
        type to its compute type where the checker asked for it)."""
        v = self.expr(e, env)
        conv = getattr(e, "out_convert", None)
        if conv is not None:
            with self.loc(e):
                v = self.map(lambda x: self.convert(x, *conv), v)
        return v

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
                if pending and op in ("+", "-") and _is_add_identity(old):
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
                    cur[part * k:(part + 1) * k] = _flat(new)
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
            types = [v.type for k in keys for v in _flat(env[k])]
            has_else = len(branches) > 1 or bool(keys)
            ifop = scf.IfOp(cond, types, has_else=has_else)
        blocks = [ifop.then_block] + ([ifop.else_block] if has_else else [])
        for i, block in enumerate(blocks):
            with ir.InsertionPoint(block), env.scope():
                if i < len(branches):
                    self.stmts(branches[i], env)
                with self.loc(s):
                    scf.YieldOp([v for k in keys for v in _flat(env[k])])
        self.rebind(env, keys, list(ifop.results))

    def for_(self, s: A.For, env: dict) -> None:
        trips = _unroll_trips(s, self.copies)
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
            inits = [v for k in keys for v in _flat(env[k])]
            loop = scf.ForOp(lo, hi, one, inits)
        with ir.InsertionPoint(loop.body), env.scope():
            self.rebind(env, keys, list(loop.inner_iter_args))
            with self.loc(s):
                k = self.convert(loop.induction_variable, T.INDEX, count_ty)
                env[s.sym] = arith.addi(start, k) if by_trips else k
            body = s.body.stmts
            if _RETURNED in env and body and self.may_return(s):
                self.guarded(body, env, s)
            else:
                self.stmts(body, env)
            with self.loc(s):
                scf.YieldOp([v for k in keys for v in _flat(env[k])])
        self.rebind(env, keys, list(loop.results))

    def unrolled_for(self, s: A.For, trips: range, env: dict) -> None:
        """``for k in a..b`` with literal bounds, one copy of the body per iteration (``k`` a
        constant in each): the same operations in the same order as the ``scf.for``."""
        body = s.body.stmts
        guard = _RETURNED in env and self.may_return(s)
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

    # ---- expressions ------------------------------------------------------------------------

    def expr(self, e: A.Expr, env: dict):
        """The SSA value(s) of ``e``: one ``ir.Value`` for scalars, a list for vectors."""
        with self.loc(e):
            inner = getattr(e, "computed_as", None)
            if inner is None:
                return self._expr(e, env)
            # an integer-literal expression in a float context (check.py): computed in its integer
            # type, then converted to the type its parent sees
            outer, e.ty = e.ty, inner
            try:
                v = self._expr(e, env)
            finally:
                e.ty = outer
            return self.map(lambda x: self.convert(x, T.scalar_of(inner), T.scalar_of(outer)), v)

    def _expr(self, e: A.Expr, env: dict):
        if isinstance(e, (A.IntLit, A.FloatLit)):
            s = T.default_scalar(T.scalar_of(e.ty))
            if s.is_float:  # rounded once from the literal's text
                v = T.exact_float(literal_fraction(e), s)
                if v == 0 and isinstance(e, A.FloatLit) and e.text.lstrip().startswith("-"):
                    v = -0.0  # the exact value of "-0.0" is 0: keep the sign the literal spells
                return self.const(s, v if v is not None else float("inf") * (1 if e.value > 0 else -1))
            return self.const(s, e.value)
        if isinstance(e, A.BoolLit):
            return self.const(T.BOOL, e.value)
        if isinstance(e, A.Name):
            return self.name(e, env)
        if isinstance(e, A.Unary):
            v = self.expr(e.operand, env)
            s = T.scalar_of(e.operand.ty)
            return self.map(lambda x: self.scalar_unop(e.op, s, x), v)
        if isinstance(e, A.Binary):
            return self.binary(e, env)
        if isinstance(e, A.Call):
            return self.call(e, env)
        if isinstance(e, A.VectorLit):
            return [self.expr(x, env) for x in e.elems]
        if isinstance(e, (A.Index, A.MultiIndex, A.Method)) and getattr(e, "view", None) is not None:
            return self.view_read(e, env)
        if isinstance(e, A.Index):
            base = self.expr(e.base, env)
            c = self.component(e.index)
            if c is not None:  # an out-of-range index reads the last component, as the selects
                return base[c] if 0 <= c < len(base) else base[-1]
            k = self.expr(e.index, env)
            kt = e.index.ty
            res = base[-1]
            for i in range(len(base) - 2, -1, -1):
                hit = self.scalar_binop("==", kt, k, self.const(kt, i))
                res = arith.select(hit, base[i], res)
            return res
        if isinstance(e, A.Slice):
            base = self.expr(e.base, env)
            lo, hi = e.bounds
            return list(base[lo:hi])
        if isinstance(e, A.Member):  # u.first / u.second of a pair read
            vals = env[e.base.sym]
            k = e.base.sym.buffer.components
            part = vals[:k] if e.name == "first" else vals[k:]
            return list(part) if k > 1 else part[0]
        raise InternalCompilerError(f"cannot lower expression {type(e).__name__}")  # pragma: no cover

    def name(self, e: A.Name, env: dict):
        sym: Symbol = e.sym
        if sym.kind == "builtin":
            if sym.name == "problem_size" and self.info.problem_poly is not None:
                return _emit_poly(self.info.problem_poly, self.size_args)
            if sym.name == "problem_size":
                p = self.info.problem_symbol
                if p.kind == "size":
                    return self.size_args[p.name]
                return self.convert(self.args[p], p.ty, T.INDEX)
            return kern.builtin(sym.name)
        if sym in self.unrolled:
            return self.const(sym.ty, self.unrolled[sym])
        v = env[sym]
        return list(v) if isinstance(v, list) else v

    # ---- views and layouts ------------------------------------------------------------------

    def view_sizes(self, b) -> list:
        return [self.size_args[x] for x in b.layout.symbols]

    def coords(self, args: list, env: dict):
        """``(index values, mask)`` of a view/layout coordinate list: index expressions, or one
        layout application (its layers' in-bounds flag is the mask; None when unchecked)."""
        if len(args) == 1 and getattr(args[0], "layers", None) is not None:
            return self.apply_layout(args[0], env)
        return [self.expr(a, env) for a in args], None

    def apply_layout(self, e, env: dict):
        vals, mask = self.coords(e.inputs, env)
        with self.loc(e):
            for layer in e.layers:
                if isinstance(layer, FnLayer):
                    vals, ok = self.inline_fn(layer, vals, env)
                else:
                    vals, ok = self.apply_strided(layer, vals)
                mask = _and(mask, ok)
        return vals, mask

    def apply_strided(self, layer: StridedLayer, vals: list):
        L = layer.layout
        syms = L.symbols
        sizes = [self.size_args[x] for x in syms]
        text = str(L)
        if len(vals) == L.rank:
            ok = kern.in_bounds(vals, sizes, text, syms)
        else:  # one linear index: CuTe's L(i), split colexicographically (first mode fastest)
            i = vals[0]
            size = _emit_poly(_product(L.shape), self.size_args)
            idx0 = arith.constant(ir.IndexType.get(), 0)
            ok = arith.andi(arith.cmpi(arith.CmpIPredicate.sge, i, idx0),
                            arith.cmpi(arith.CmpIPredicate.slt, i, size))
            rev = kern.delinearize(i, [_emit_poly(x, self.size_args) for x in reversed(L.shape)])
            vals = list(reversed(rev))
        off = kern.layout_apply(vals, sizes, text, syms)
        if layer.swizzle is not None:
            off = kern.swizzle(off, *layer.swizzle)
        return [off], ok

    def inline_fn(self, layer: FnLayer, vals: list, env: dict):
        """A functional layout's body on coordinates ``vals``: ``(results, domain flag or None)``."""
        d = layer.d
        fenv: dict = {}
        for sym, (kind, a) in zip(d.param_syms, layer.args):
            fenv[sym] = self.expr(a, env) if kind == "expr" else _emit_poly(a, self.size_args)
        for sym, v in zip(d.coord_syms, vals):
            fenv[sym] = v
        ok = None
        if d.domain is not None:
            idx0 = arith.constant(ir.IndexType.get(), 0)
            for c, ext in zip(vals, d.domain):
                ok = _and(ok, arith.cmpi(arith.CmpIPredicate.sge, c, idx0))
                if not (isinstance(ext, A.Name) and ext.id == "_"):
                    ok = _and(ok, arith.cmpi(arith.CmpIPredicate.slt, c, self.expr(ext, fenv)))
        for s in d.lets:
            self.stmt(s, fenv)
        results = d.result.elems if isinstance(d.result, A.TupleLit) else [d.result]
        return [self.expr(r, fenv) for r in results], ok

    def view_read(self, e, env: dict):
        b = e.view.buffer
        vals, mask = self.coords(e.coords, env)
        ct = T.mlir_type(b.compute_elem)
        buf, sizes, syms = self.args[e.view], self.view_sizes(b), b.layout.symbols
        if isinstance(e, A.Method) and e.name == "in_bounds":
            return _and(kern.in_bounds(vals, sizes, b.layout_text, syms), mask)
        if isinstance(e, A.Method):  # checked
            return kern.view_load(buf, vals, sizes, b.layout_text, syms, ct, checked=True,
                                  default=b.default_value, mask=mask)
        return kern.view_load(buf, vals, sizes, b.layout_text, syms, ct)

    def view_store(self, s: A.Assign, env: dict) -> None:
        sym = s.sym
        b = sym.buffer
        target = s.target
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

    def map(self, fn, *vals):
        """Apply a scalar function elementwise, broadcasting scalars against vectors."""
        n = max((len(v) for v in vals if isinstance(v, list)), default=None)
        if n is None:
            return fn(*vals)
        cols = [v if isinstance(v, list) else [v] * n for v in vals]
        return [fn(*xs) for xs in zip(*cols)]

    def binary(self, e: A.Binary, env: dict):
        a = self.expr(e.left, env)
        b = self.expr(e.right, env)
        s = T.scalar_of(e.left.ty)
        return self.map(lambda x, y: self.scalar_binop(e.op, s, x, y), a, b)

    def scalar_unop(self, op: str, s: T.ScalarType, x):
        if op == "-":
            if s.is_float:
                return arith.negf(x)
            return arith.subi(self.const(s, 0), x)
        if op == "!":
            return arith.xori(x, self.const(T.BOOL, True))
        if op == "~":
            return arith.xori(x, self.const(s, -1))
        raise InternalCompilerError(f"unary '{op}'")  # pragma: no cover

    def scalar_binop(self, op: str, s: T.ScalarType, a, b):
        """One scalar binary op on operands of type ``s`` (signedness picks the arith op)."""
        s = T.default_scalar(s)
        if op in _CMPF and s.is_float:
            return arith.cmpf(getattr(arith.CmpFPredicate, _CMPF[op].upper()), a, b)
        if op in _CMPI:
            signed, unsigned = _CMPI[op]
            pred = unsigned if (s.is_unsigned or s.is_bool) else signed
            return arith.cmpi(getattr(arith.CmpIPredicate, pred), a, b)
        if s.is_float:
            if op in _FLOAT_BINARY:
                return getattr(arith, _FLOAT_BINARY[op])(a, b)
            if op == "//":
                return math.floor(arith.divf(a, b))
            if op == "%%":
                r = arith.remf(a, b)
                zero = self.const(s, 0.0)
                nonzero = arith.cmpf(arith.CmpFPredicate.UNE, r, zero)
                r_neg = arith.cmpf(arith.CmpFPredicate.OLT, r, zero)
                b_neg = arith.cmpf(arith.CmpFPredicate.OLT, b, zero)
                fix = arith.andi(nonzero, arith.xori(r_neg, b_neg))
                # a zero result takes the divisor's sign (numpy's mod, Python's %): -3 %% 3 is +0.0
                signed_zero = arith.select(b_neg, self.const(s, -0.0), zero)
                return arith.select(nonzero, arith.select(fix, arith.addf(r, b), r), signed_zero)
        else:
            unsigned = s.is_unsigned
            if op in _INT_BINARY:  # (signed, unsigned) op names: signedness reaches the IR here
                return getattr(arith, _INT_BINARY[op][1 if unsigned else 0])(a, b)
            if op == "%%":
                if unsigned:
                    return arith.remui(a, b)
                r = arith.remsi(a, b)
                zero = self.const(s, 0)
                nonzero = arith.cmpi(arith.CmpIPredicate.ne, r, zero)
                signs_differ = arith.cmpi(arith.CmpIPredicate.slt, arith.xori(r, b), zero)
                fix = arith.andi(nonzero, signs_differ)
                return arith.addi(r, arith.select(fix, b, zero))
        raise InternalCompilerError(f"binary '{op}' on {s}")  # pragma: no cover

    def _abs(self, x, s: T.ScalarType):
        """``|x|``: ``math.absf`` for floats; for signed integers ``x < 0 ? 0 - x : x`` (wrapping, so
        ``abs(INT_MIN) == INT_MIN`` as in C and PTX ``abs.s32``; ``math.absi`` has no LLVM lowering for
        every width); unsigned values are their own absolute value."""
        if s.is_float:
            return math.absf(x)
        if s.is_unsigned:
            return x
        zero = self.const(s, 0)
        return arith.select(arith.cmpi(arith.CmpIPredicate.slt, x, zero), arith.subi(zero, x), x)

    def call(self, e: A.Call, env: dict):
        f = e.func
        if f in T.SCALARS:
            (a,) = e.args
            v = self.expr(a, env)
            frm = T.scalar_of(a.ty)
            return self.map(lambda x: self.convert(x, frm, T.SCALARS[f]), v)
        args = [self.expr(a, env) for a in e.args]
        s = T.default_scalar(T.scalar_of(e.ty))
        if f in FLOAT_UNARY:
            op = getattr(math, f)
            return self.map(lambda x: op(x), args[0])
        if f == "abs":
            return self.map(lambda x: self._abs(x, s), args[0])
        if f in ("min", "max"):
            if s.is_float:
                op = arith.minnumf if f == "min" else arith.maxnumf
            elif s.is_unsigned:
                op = arith.minui if f == "min" else arith.maxui
            else:
                op = arith.minsi if f == "min" else arith.maxsi
            return self.map(lambda x, y: op(x, y), *args)
        if f == "fma":
            return self.map(lambda x, y, z: math.fma(x, y, z), *args)
        if f == "select":
            return self.map(lambda c, x, y: arith.select(c, x, y), *args)
        raise InternalCompilerError(f"cannot lower call to '{f}'")  # pragma: no cover

    def convert(self, v, frm: T.ScalarType, to: T.ScalarType):
        """Convert scalar ``v`` of type ``frm`` to ``to`` (numeric conversion, C semantics)."""
        frm, to = T.default_scalar(frm), T.default_scalar(to)
        if frm == to:
            return v
        tt = T.mlir_type(to)
        if to.is_bool:
            zero = self.const(frm, 0)
            if frm.is_float:
                return arith.cmpf(arith.CmpFPredicate.UNE, v, zero)
            return arith.cmpi(arith.CmpIPredicate.ne, v, zero)
        if frm.is_bool:
            if to.is_float:
                return arith.uitofp(tt, v)
            if to.is_index:
                return arith.index_castui(tt, v)
            return arith.extui(tt, v)
        if frm.is_int and to.is_int:
            if frm.is_index:
                return arith.index_cast(tt, v)
            if to.is_index:
                return arith.index_castui(tt, v) if frm.is_unsigned else arith.index_cast(tt, v)
            if to.bits > frm.bits:
                return arith.extui(tt, v) if frm.is_unsigned else arith.extsi(tt, v)
            if to.bits < frm.bits:
                return arith.trunci(tt, v)
            return v  # same width, other signedness: same bits
        if frm.is_int and to.is_float:
            if frm.is_index:
                v = arith.index_cast(ir.IntegerType.get_signless(64), v)
                return arith.sitofp(tt, v)
            return arith.uitofp(tt, v) if frm.is_unsigned else arith.sitofp(tt, v)
        if frm.is_float and to.is_int:
            if to.is_index:
                v = arith.fptosi(ir.IntegerType.get_signless(64), v)
                return arith.index_cast(tt, v)
            if to.bits < 32:
                # i8/u8/i16/u16: convert to 32 bits (saturating, NaN -> 0: PTX cvt.rzi, and the
                # CPU interpreter), then keep the low bits -- one meaning on both devices (an LLVM
                # fptosi/fptoui to i8 of an out-of-range value would be poison)
                i32 = ir.IntegerType.get_signless(32)
                v = arith.fptoui(i32, v) if to.is_unsigned else arith.fptosi(i32, v)
                return arith.trunci(tt, v)
            return arith.fptoui(tt, v) if to.is_unsigned else arith.fptosi(tt, v)
        # float -> float
        if {frm.name, to.name} == {"f16", "bf16"}:
            v = arith.extf(ir.F32Type.get(), v)
            return arith.truncf(tt, v)
        if to.bits > frm.bits:
            return arith.extf(tt, v)
        return arith.truncf(tt, v)


def _product(polys):
    from kernc.dialect.strided import Poly

    out = Poly.const(1)
    for p in polys:
        out = out * p
    return out
