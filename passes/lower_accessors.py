"""``kern-lower-accessors``: accessor ops -> ``memref``/``gpu``/``scf`` code inside each ``gpu.func``.

Runs after ``kern-to-gpu``: every accessor op sits in the body of a ``gpu.func`` under the guard
``scf.if t < P`` (``kern.guard``). Semantics: ``docs/design/accessors.md``; IR contract:
``docs/accessor-lowering.md``.

*Per-thread* accessors (``sequential``, ``strided``, ``strided_default``, ``indexed`` reads and
writes, ``atomic`` adds) are lowered in place: the element index ``e`` thread ``t`` reaches, then per
component a ``kern.layout_apply`` offset and a load, store, read-modify-write or atomic.

*Block-wide* accessors need every thread of the block, including those past ``P``:

- reads (``shared``, ``unique``, ``pair``, ``pair_strided_default``) stage through workgroup memory
  *before* the guard, leave the thread's values in a private slot (``memref.alloca``), and the op is
  replaced by loads of that slot inside the guard (a ``pair`` read's last step, which only reads the
  staged values after the last barrier and branches, opens the guard's body: :func:`_merge_into_guard`);
- updates (``shared_sum``, ``block_sum``, ``sum``, ``pair`` writes) store the thread's contribution in
  a private slot inside the guard and reduce *after* the guard (a ``pair`` value ``-w`` of another
  value ``w`` is negated after the guard instead: :func:`_block_update`).

Every sum starts from, and every value a thread past ``P`` or a missing neighbour contributes is,
the identity of addition (``ir_builder.add_identity``: ``-0.0`` for floats, not ``+0.0``), so an
``add`` output that no thread changes keeps its bits, a ``-0.0`` included, as the per-thread
accessors keep them (the frontend's pending update of an ``add`` output starts as ``-0.0`` too).

So every ``gpu.barrier`` and ``gpu.shuffle`` sits outside divergent control flow. Workgroup memory is
one buffer per element type, sized to the largest accessor's need and reused by all accessors of the
kernel (a barrier separates uses); values are staged a chunk of components at a time so that no
accessor needs more than :data:`STAGING_BUDGET` bytes per chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernc.dialect import kern
from kernc.dialect.signature import SIGNATURE_ATTR, KernelSignature
from kernc.dialect.strided import StridedLayout
from kernc.support.errors import CompileError, Diagnostic, InternalCompilerError, SourceLocation
from kernc.support.mlir import ir

from . import ir_builder as b
from . import llvm_ops
from .base import Pass, functions, walk_ops
from .lower_layouts import emit_poly
from .outline_to_gpu import GUARD_ATTR

ACCESSOR_OPS = {"kern.read", "kern.write", "kern.add"}
#: Bytes of workgroup memory one staging chunk may use (components are staged in chunks).
STAGING_BUDGET = 16 * 1024
#: Static shared memory a kernel may use without opting in to more (CUDA: 48 KiB).
SHARED_LIMIT = 48 * 1024
WARP = 32
BLOCK_WIDE_READS = {"shared", "unique", "pair", "pair_strided_default"}
BLOCK_WIDE_UPDATES = {"shared_sum", "block_sum", "sum", "pair"}


def index_const(value: int) -> ir.Value:
    """An ``arith.constant`` of type ``index`` at the current insertion point."""
    return b.idx(value)


@dataclass
class Access:
    """One accessor op, decoded."""

    op: object
    kind: str            # "read" | "write" | "add"
    accessor: str
    buffer: ir.Value
    args: list
    sizes: list
    values: list         # write/add: the values; read: []
    ncomp: int           # components per element (pair: per side)
    layout: StridedLayout
    layout_text: str
    syms: list
    compute: ir.Type     # type of the values
    storage: ir.Type     # element type of the buffer

    @property
    def location(self):
        return self.op.location

    def offset(self, e: ir.Value, c: int) -> ir.Value:
        coords = [e] if self.layout.rank == 1 else [e, b.idx(c)]
        return kern.layout_apply(coords, self.sizes, self.layout_text, self.syms)

    def load(self, e, c) -> ir.Value:
        return b.convert_float(b.load(self.buffer, self.offset(e, c)), self.compute) if b.is_float(self.compute) else b.load(self.buffer, self.offset(e, c))

    def to_storage(self, v):
        return b.convert_float(v, self.storage) if b.is_float(self.storage) else v

    def default_value(self) -> ir.Value:
        """The exact ``default`` attribute of a ``*_default`` read, as an ``arith.constant``."""
        return b.arith.ConstantOp(self.compute, self.op.attributes[kern.DEFAULT_ATTR]).result

    def count(self) -> ir.Value:
        """Number of elements of the buffer's view (the layout's first mode)."""
        env = dict(zip(self.syms, self.sizes))
        return emit_poly(self.layout.shape[0], env)


def decode(op) -> Access:
    """Read an accessor op's operands and attributes into an :class:`Access`."""
    seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
    operands = list(op.operands)
    kind = op.name.split(".")[1]
    accessor = ir.StringAttr(op.attributes["accessor"]).value
    layout_text = ir.StringAttr(op.attributes["layout"]).value
    syms = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes["syms"])]
    values = operands[1 + seg[1] + seg[2]:] if kind != "read" else []
    nvals = len(op.results) if kind == "read" else len(values)
    pairish = accessor in ("pair", "pair_strided_default")
    compute = (op.results[0].type if kind == "read" else values[0].type)
    return Access(
        op=op, kind=kind, accessor=accessor, buffer=operands[0],
        args=operands[1:1 + seg[1]], sizes=operands[1 + seg[1]:1 + seg[1] + seg[2]],
        values=values, ncomp=nvals // 2 if pairish else nvals,
        layout=StridedLayout.parse(layout_text), layout_text=layout_text, syms=syms,
        compute=compute, storage=ir.MemRefType(operands[0].type).element_type,
    )


def source_location(loc) -> "SourceLocation | None":
    """The ``file:line:col`` of an MLIR ``FileLineColLoc`` (``None`` for other locations)."""
    import re

    m = re.search(r'loc\("([^"]+)":(\d+):(\d+)', str(loc))
    return SourceLocation(m.group(1), int(m.group(2)), int(m.group(3))) if m else None


def _chunks(ncomp: int, block: int, elem_bytes: int) -> list[range]:
    per = max(1, min(ncomp, STAGING_BUDGET // (block * elem_bytes)))
    return [range(c, min(c + per, ncomp)) for c in range(0, ncomp, per)]


@dataclass
class KernelContext:
    """Per-``gpu.func`` state: the guard, thread ids, and the shared workgroup buffers."""

    fn: object
    sig: KernelSignature
    guard: object
    block: int
    smem: dict = field(default_factory=dict)       # str(type) -> [block arg, elements, type]
    smem_users: list = field(default_factory=list)  # (accessor description, bytes)
    smem_used: bool = False
    in_range: list = field(default_factory=list)  # the t < P tests of block-wide read stagings

    def workgroup(self, elem: ir.Type, n: int, user: str, region: str = "data", location=None) -> ir.Value:
        """A workgroup buffer of at least ``n`` elements of ``elem``, shared by all accessors that
        ask for the same element type and ``region`` (uses are separated by barriers)."""
        key = (str(elem), region)
        space = ir.Attribute.parse("#gpu.address_space<workgroup>")
        if key not in self.smem:
            entry = self.fn.regions[0].blocks[0]
            arg = entry.add_argument(ir.MemRefType.get([n], elem, memory_space=space), self.fn.location)
            self.smem[key] = [arg, n, elem]
            count = ir.IntegerAttr(self.fn.attributes["workgroup_attributions"]).value if "workgroup_attributions" in self.fn.attributes else 0
            self.fn.attributes["workgroup_attributions"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), count + 1)
        entry_ = self.smem[key]
        if n > entry_[1]:
            entry_[1] = n
            entry_[0].set_type(ir.MemRefType.get([n], elem, memory_space=space))
        self.smem_users.append((user, n * (b.bits(elem) // 8), location or ir.Location.current))
        return entry_[0]

    @property
    def deterministic(self) -> bool:
        return "deterministic" in self.sig.attributes

    def arg(self, name: str) -> ir.Value:
        """The ``gpu.func`` argument of the signature's argument ``name``."""
        return self.fn.regions[0].blocks[0].arguments[self.sig.arg_names.index(name)]

    def param_of(self, value: ir.Value) -> str:
        """The signature name of the ``gpu.func`` argument ``value``."""
        for name, arg in zip(self.sig.arg_names, self.fn.regions[0].blocks[0].arguments):
            if arg == value:
                return name
        raise ValueError("not an argument of the kernel")

    def begin_staging(self) -> None:
        """A barrier before re-using workgroup memory another staging step may still be reading."""
        if self.smem_used:
            b.barrier()
        self.smem_used = True

    def check_limit(self) -> None:
        """``CompileError`` at the kernel's first shared-memory user when the workgroup buffers
        exceed :data:`SHARED_LIMIT`, naming every accessor and its bytes."""
        total = sum(n * (b.bits(t) // 8) for _, n, t in self.smem.values())
        if total > SHARED_LIMIT:
            users = ", ".join(f"{u} ({n} bytes)" for u, n, _ in self.smem_users)
            raise CompileError(Diagnostic(
                f"kernel '{self.sig.name}' needs {total} bytes of shared memory, more than the "
                f"{SHARED_LIMIT} bytes a block may use; accessors: {users}",
                source_location(self.smem_users[0][2]),
                hint="use a smaller @block size",
            ))


_ACCESSORS_AND_IFS = ACCESSOR_OPS | {"scf.if"}


class LowerAccessors(Pass):
    """Rewrite every accessor op into ``memref``/``gpu``/``scf`` code."""

    name = "kern-lower-accessors"
    summary = "lower kern.read/write/add to memory, workgroup staging, shuffles and atomics"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        for fn in functions(module, {"gpu.func", "func.func"}):
            ops = walk_ops(fn, _ACCESSORS_AND_IFS)  # one walk finds the guard and the accessors
            accessors = [op for op in ops if op.name != "scf.if"]
            guards = [op for op in ops if op.name == "scf.if" and GUARD_ATTR in op.attributes]
            if fn.name == "gpu.func" and SIGNATURE_ATTR in fn.attributes and len(guards) == 1:
                _check_inside_guard(accessors, guards[0])
                sig = KernelSignature.from_json(ir.StringAttr(fn.attributes[SIGNATURE_ATTR]).value)
                kc = KernelContext(fn, sig, guards[0], int(sig.block))
                for op in accessors:
                    lower_access(kc, decode(op))
                _merge_into_guard(kc)
                kc.check_limit()
            else:  # not an outlined kernel (kernc opt on kern IR): per-thread lowering in place
                for op in accessors:
                    lower_access(None, decode(op))


def _check_inside_guard(accessors: list, guard) -> None:
    """``CompileError`` at the first accessor op of an outlined kernel that is not inside its guard
    ``scf.if t < P {kern.guard}``: the lowering relies on it (per-thread accesses stay in range;
    block-wide staging goes just before the guard). Only hand-edited IR (``kernc opt``) breaks
    this; ``kern-to-gpu`` puts the whole body in the guard."""
    for op in accessors:
        if not _inside(op, guard.operation):
            raise CompileError(Diagnostic(
                f"'{op.name}' must be inside the kernel body, the scf.if {{kern.guard}} that kern-to-gpu "
                f"builds", source_location(op.location)))


def _merge_into_guard(kc: KernelContext) -> None:
    """Make the last in-range step of a block-wide read's staging (the ``scf.if t < P`` after its
    last barrier) the start of the guard's body when that step branches itself (``pair``: the
    neighbour from workgroup memory or, at the block's edge, from global memory). Two regions on
    ``t < P`` in a row become one: the staged value reaches the body without crossing a join, and
    ptxas needs one reconvergence region where it had one per region (``laplacian_1d``: 69 -> 65
    SASS instructions). A step without branches of its own (``shared``, ``unique``) stays where it
    is: ptxas predicates it for free, and merged, it hoists the body's address arithmetic above the
    barrier (``edge_update``: 23 -> 25 registers).

    Exact: only the private slots of block-wide updates (``memref.alloca`` and zero stores into
    them, :func:`_block_update`) may sit between the two regions, and they touch neither the
    step's memory nor its values. The workgroup memory the step reads is not written again before
    the next barrier: block-wide updates begin their staging with one
    (:meth:`KernelContext.begin_staging`)."""
    guard = kc.guard.operation
    body = guard.regions[0].blocks[0]
    between = []
    before = _ops_before(guard)
    prev = before.pop() if before else None
    while prev is not None and prev.name in ("arith.constant", "memref.alloca", "memref.store"):
        between.append(prev)
        prev = before.pop() if before else None
    if (prev is None or prev.name != "scf.if" or len(prev.results) or len(prev.regions[1].blocks)
            or not any(prev.operands[0] == c for c in kc.in_range) or not _branches(prev)
            or not all(_stores_constant_into(op, between) for op in between if op.name == "memref.store")):
        return
    first = body.operations[0]
    for op in list(prev.regions[0].blocks[0].operations)[:-1]:  # all but the scf.yield
        op.move_before(first)
    prev.erase()


def _branches(region_op) -> bool:
    """Whether the body of ``region_op`` holds an op with regions of its own (an ``scf.if``)."""
    return any(len(op.operation.regions) for op in region_op.regions[0].blocks[0].operations)


def _stores_constant_into(store, ops: list) -> bool:
    """Whether ``store`` (a ``memref.store``) stores an ``arith.constant`` into a ``memref.alloca``
    among ``ops``."""
    value, slot = _owner(store.operands[0]), _owner(store.operands[1])
    return (isinstance(value, ir.Operation) and value.name == "arith.constant"
            and isinstance(slot, ir.Operation) and slot.name == "memref.alloca"
            and any(slot == o for o in ops))


def _owner(value: ir.Value):
    """The operation that defines ``value`` (a block argument's block for arguments)."""
    owner = value.owner
    return owner.operation if hasattr(owner, "operation") else owner


def _ops_before(op) -> list:
    """The operations before ``op`` in its block, in order (one pass over the block)."""
    before = []
    for other in op.block.operations:
        other = other.operation
        if other == op:
            return before
        before.append(other)
    raise ValueError("the operation is not in its own block")  # pragma: no cover - MLIR invariant


def _tid_values():
    from kernc.support.mlir import dialect

    gpu = dialect("gpu")
    t = kern.builtin("thread_id")
    tid = gpu.ThreadIdOp(gpu.Dimension.x).result
    blk = kern.builtin("block_id")
    p = kern.builtin("problem_size")
    return t, tid, blk, p


def element_index(acc: Access, t: ir.Value) -> ir.Value:
    """The element index thread ``t`` reaches through a per-thread accessor."""
    if acc.accessor in ("sequential", "pair", "unique", "sum", "block_sum"):
        return t
    if acc.accessor in ("strided", "strided_default", "pair_strided_default"):
        off, step = acc.args[0], acc.args[1]
        return b.add(off, b.mul(t, step))
    if acc.accessor in ("indexed", "atomic"):
        return b.index_cast_ui(b.load(acc.args[0], t))
    raise ValueError(f"no element index for accessor '{acc.accessor}'")


def _load_default(acc: Access, e: ir.Value, c: int, default: ir.Value) -> ir.Value:
    """``X[e]`` component ``c`` if ``0 <= e < M`` else ``default`` (signed compare: e may be < 0)."""
    inb = b.and_(b.cmp("sge", e, b.idx(0)), b.cmp("slt", e, acc.count()))
    return b.if_else(inb, [acc.compute], lambda: [acc.load(e, c)], lambda: [default])[0]


def lower_access(kc: KernelContext | None, acc: Access) -> None:
    """Lower one accessor op: in place when per-thread, around the guard when block-wide (``kc``)."""
    op = acc.op
    block_wide = (acc.kind == "read" and acc.accessor in BLOCK_WIDE_READS) or (
        acc.kind != "read" and acc.accessor in BLOCK_WIDE_UPDATES
    )
    if block_wide and kc is None:
        raise CompileError(Diagnostic(
            f"accessor '{acc.accessor}' can only be lowered inside a gpu.func (run kern-to-gpu first)"))
    with acc.location:
        if not block_wide:
            with ir.InsertionPoint(op):
                results = _per_thread(acc, kc)
        elif acc.kind == "read":
            results = _block_read(kc, acc)
        else:
            _block_update(kc, acc)
            results = []
    for old, new in zip(op.results, results):
        old.replace_all_uses_with(new)
    op.erase()


#: Bytes of one vector access, widest first: 16 (``ld.global.v4.f32`` and friends), then 8
#: (``ld.global.v2.f32``) for elements whose size is a multiple of 8 but not of 16.
_VECTOR_SIZES = (16, 8)


def _whole_padded_elements(kc: KernelContext | None, acc: Access) -> bool:
    """Whether the buffer's storage holds every element's padding, up to the element stride
    (``caspar``: storage ``[n, 4]`` for ``(n,3):(4,1)``). A layout's own storage (its cosize) ends
    with the last element's last component, so reading a padding lane there reads past the end."""
    buffer = acc.buffer.maybe_downcast() if hasattr(acc.buffer, "maybe_downcast") else acc.buffer
    if kc is None or not isinstance(buffer, ir.BlockArgument) or acc.layout.rank != 2:
        return False
    index = buffer.arg_number
    if index >= len(kc.sig.params):
        return False
    p = kc.sig.params[index]
    if p.kind != "buffer" or p.layout != acc.layout_text or len(p.storage_shape) != 2:
        return False
    return str(p.storage_shape[1]) == str(acc.layout.stride[0])


def _vector_plan(acc: Access, kc: KernelContext | None) -> tuple[int, int] | None:
    """How to access this accessor's element with vector loads/stores: ``(w, n)``, ``n`` vectors of
    ``w`` elements each (``w * esize`` is 16 or 8 bytes), or ``None`` when the components of an
    element are not contiguous, suitably aligned storage.

    The component stride must be 1 and the element stride a multiple of ``w`` (so every element
    starts at a multiple of the vector size from the buffer's base). The ``ncomp`` components are
    covered exactly by ``n * w`` elements (an ``f32[n, 8]`` element is two 16-byte vectors, an
    ``f32[n, 2]`` one 8-byte vector); reads may also use trailing padding lanes when the storage
    holds them (:func:`_whole_padded_elements`, as for ``caspar``'s ``(n,3):(4,1)``), writes never.
    16-byte vectors are preferred, then 8-byte ones, each first without padding."""
    if acc.layout.rank != 2 or acc.ncomp < 2:
        return None
    d0, d1 = acc.layout.stride
    esize = b.bits(acc.storage) // 8
    if not (d1.is_const and d1.value == 1 and d0.is_const):
        return None
    sizes = [v for v in _VECTOR_SIZES if v % esize == 0 and v // esize >= 2 and d0.value % (v // esize) == 0]
    for v in sizes:
        w = v // esize
        if acc.ncomp % w == 0:
            return w, acc.ncomp // w
    if acc.kind == "read" and _whole_padded_elements(kc, acc):
        for v in sizes:
            w = v // esize
            span = -(-acc.ncomp // w) * w
            if span <= d0.value:
                return w, span // w
    return None


def _vectorised(acc: Access, e: ir.Value, plan: tuple[int, int], scalar) -> list:
    """The access as ``plan = (w, n)``: ``n`` ``vector<w x T>`` loads/stores, when the buffer's base
    address is aligned to the vector size (tested at run time: uniform across the launch), else
    ``scalar()`` -- never a misaligned vector access."""
    from kernc.support.mlir import dialect

    vector = dialect("vector")
    w, n = plan
    nbytes = w * b.bits(acc.storage) // 8
    vt = ir.VectorType.get([w], acc.storage)
    base = acc.offset(e, 0)
    bases = [base] + [b.add(base, b.idx(k * w)) for k in range(1, n)]
    ptr = b.memref.ExtractAlignedPointerAsIndexOp(acc.buffer).result
    aligned = b.cmp("eq", b.arith.RemUIOp(ptr, b.idx(nbytes)).result, b.idx(0))

    def to_c(v):
        return b.convert_float(v, acc.compute) if b.is_float(acc.compute) else v

    def load_all():
        vs = [vector.LoadOp(vt, acc.buffer, [at], alignment=nbytes).result for at in bases]
        return [to_c(vector.ExtractOp(vs[c // w], [], [c % w]).result) for c in range(n * w)]

    def vec():
        if acc.kind == "read":
            return load_all()[:acc.ncomp]
        if acc.kind == "write":
            new = [acc.to_storage(v) for v in acc.values]
        else:
            old = load_all()
            new = [acc.to_storage(b.add(old[c], acc.values[c])) for c in range(n * w)]
        for k, at in enumerate(bases):
            vector.StoreOp(vector.FromElementsOp(vt, new[k * w:(k + 1) * w]).result, acc.buffer, [at],
                           alignment=nbytes)
        return []

    types = [acc.compute] * acc.ncomp if acc.kind == "read" else []
    return b.if_else(aligned, types, vec, scalar)


def _per_thread(acc: Access, kc: KernelContext | None = None) -> list:
    t = kern.builtin("thread_id")
    e = element_index(acc, t)
    plan = _vector_plan(acc, kc) if acc.accessor in ("sequential", "strided", "indexed") else None
    if plan is not None:
        return _vectorised(acc, e, plan, lambda: _scalar_access(acc, e))
    return _scalar_access(acc, e)


def _scalar_access(acc: Access, e: ir.Value) -> list:
    out = []
    for c in range(acc.ncomp):
        if acc.kind == "read":
            if acc.accessor == "strided_default":
                out.append(_load_default(acc, e, c, acc.default_value()))
            else:
                out.append(acc.load(e, c))
            continue
        v = acc.values[c]
        if acc.kind == "add" and b.is_add_identity(v):
            continue  # a component the thread does not change (-0.0): no update, no atomic
        off = acc.offset(e, c)
        if acc.accessor == "atomic":
            b.atomic_add(acc.to_storage(v), acc.buffer, off)
        elif acc.kind == "write":
            b.store(acc.to_storage(v), acc.buffer, off)
        else:
            old = b.load(acc.buffer, off)
            if b.is_float(acc.compute):
                new = acc.to_storage(b.add(b.convert_float(old, acc.compute), v))
            else:
                new = b.add(old, v)
            b.store(new, acc.buffer, off)
    return out


# --- block-wide reads ------------------------------------------------------------------------

def _inside(op, ancestor) -> bool:
    parent = op.parent
    while parent is not None:
        if parent == ancestor:
            return True
        parent = parent.parent
    return False


def _hoist_before_guard(kc: KernelContext, values) -> None:
    """Move the (side-effect free, ``arith``/``kern`` builtin) ops that compute ``values`` from inside
    the guard to just before it, so block-wide staging before the guard can use them (e.g. the
    ``off``/``s`` of ``pair strided(off, s)``, computed from scalar params at the kernel entry)."""
    guard = kc.guard.operation
    for v in values:
        owner = v.owner
        op = owner.operation if hasattr(owner, "operation") else owner
        if not isinstance(op, ir.Operation) or not _inside(op, guard):
            continue
        if not (op.name.startswith("arith.") or op.name in ("kern.thread_id", "kern.block_id",
                                                              "kern.block_dim", "kern.problem_size")):
            raise InternalCompilerError(
                f"an accessor operand ({op.name}) cannot be computed before the kernel body")
        _hoist_before_guard(kc, list(op.operands))
        op.move_before(guard)


def _block_read(kc: KernelContext, acc: Access) -> list:
    nres = len(acc.op.results)
    _hoist_before_guard(kc, acc.args)
    with ir.InsertionPoint(kc.guard):
        slot = b.alloca(acc.compute, nres)
        t, tid, blk, p = _tid_values()
        in_range = b.cmp("ult", t, p)
        kc.in_range.append(in_range)
        stage = {
            "shared": _stage_shared,
            "unique": _stage_unique,
            "pair": _stage_pair,
            "pair_strided_default": _stage_pair,
        }[acc.accessor]
        stage(kc, acc, slot, t, tid, blk, p, in_range)
    with ir.InsertionPoint(acc.op):
        return [b.load(slot, b.idx(i)) for i in range(nres)]


def _stage_shared(kc, acc, slot, t, tid, blk, p, in_range):
    """Each block loads each distinct element it needs once (ascending, coalesced) into workgroup
    memory; thread ``t`` then reads its copy at its rank. One coalesced load of the ``shared_indices``
    table, ``target[t] = rank | count << 16``, gives both the rank and the block's number of
    distinct elements (``count``); a thread past the problem reads 0 (it reads nothing).

    Thread ``tid`` of the block stages element ``unique[block*B + tid]``. That table entry is loaded
    by every thread, unconditionally and alongside ``target[t]`` (the table has ``ceil(P/B)*B``
    entries), and the element itself too, at index 0 past ``count`` (entries there may be anything,
    e.g. in a prebuilt table; the copy in workgroup memory is never read): the three global loads
    form a chain of two, ``target``/``unique`` then ``X``, as ``indexed``'s ``I`` then ``X``. Guarded
    by ``tid < count``, ``unique`` waited for ``target`` (LLVM sinks a load into the only block that
    uses it); on an H200 that made a 2^24-element gather 1.24x slower."""
    unique, target = acc.args
    B = kc.block
    i32 = ir.IntegerType.get_signless(32)
    base = b.mul(blk, b.idx(B))
    packed = b.if_else(in_range, [i32], lambda: [b.load(target, t)], lambda: [b.zero(i32)])[0]
    entry = b.index_cast_ui(b.load(unique, b.add(base, tid)))
    cnt = b.index_cast_ui(b.arith.ShRUIOp(packed, b.const(16, i32)).result)
    r = b.index_cast_ui(b.arith.AndIOp(packed, b.const(0xFFFF, i32)).result)
    e = b.select(b.cmp("ult", tid, cnt), entry, b.idx(0))
    esize = b.bits(acc.compute) // 8
    chunks = _chunks(acc.ncomp, B, esize)
    plan = _vector_plan(acc, kc) if len(chunks) == 1 else None
    for chunk in chunks:
        smem = kc.workgroup(acc.compute, B * len(chunk), f"shared({acc.layout_text})",
                            location=acc.location)
        kc.begin_staging()
        if plan is not None:  # the whole element in vector loads when aligned
            comps = _vectorised(acc, e, plan, lambda: [acc.load(e, c) for c in chunk])
        else:
            comps = [acc.load(e, c) for c in chunk]
        for j, v in enumerate(comps):
            b.store(v, smem, b.add(b.idx(j * B), tid))
        b.barrier()
        with b.if_(in_range):
            for j, c in enumerate(chunk):
                b.store(b.load(smem, b.add(b.idx(j * B), r)), slot, b.idx(c))


def _stage_unique(kc, acc, slot, t, tid, blk, p, in_range):
    """Thread 0 of the block loads ``X[0]`` once; every thread reads it from workgroup memory."""
    smem = kc.workgroup(acc.compute, acc.ncomp, "unique")
    kc.begin_staging()
    with b.if_(b.cmp("eq", tid, b.idx(0))):
        for c in range(acc.ncomp):
            b.store(acc.load(b.idx(0), c), smem, b.idx(c))
    b.barrier()
    with b.if_(in_range):
        for c in range(acc.ncomp):
            b.store(b.load(smem, b.idx(c)), slot, b.idx(c))


def _stage_pair(kc, acc, slot, t, tid, blk, p, in_range):
    """``(X[e(t)], X[e(t+1)])``: each thread loads its own element into workgroup memory and takes
    its neighbour's from there; the last thread of the block (and of the problem) loads the second
    element from global memory. ``pair_strided_default`` reads ``Xd(off + t*s)`` with a default."""
    B = kc.block
    K = acc.ncomp
    strided = acc.accessor == "pair_strided_default"

    def fetch(t_value, c):
        e = element_index(acc, t_value)
        return _load_default(acc, e, c, acc.default_value()) if strided else acc.load(e, c)

    t1 = b.add(t, b.idx(1))
    tid1 = b.add(tid, b.idx(1))
    interior = b.and_(b.cmp("ult", tid1, b.idx(B)), b.cmp("ult", t1, p))
    esize = b.bits(acc.compute) // 8
    for chunk in _chunks(K, B, esize):
        smem = kc.workgroup(acc.compute, B * len(chunk), f"pair({acc.layout_text})")
        kc.begin_staging()
        with b.if_(in_range):
            for j, c in enumerate(chunk):
                v = fetch(t, c)
                b.store(v, smem, b.add(b.idx(j * B), tid))
                b.store(v, slot, b.idx(c))
        b.barrier()
        with b.if_(in_range):
            for j, c in enumerate(chunk):
                second = b.if_else(
                    interior, [acc.compute],
                    lambda j=j: [b.load(smem, b.add(b.idx(j * B), tid1))],
                    lambda c=c: [fetch(t1, c)],
                )[0]
                b.store(second, slot, b.idx(K + c))


# --- block-wide updates -----------------------------------------------------------------------

def _negations(values: list) -> dict:
    """``{i: j}`` for every ``values[i]`` that is ``arith.negf(values[j])`` of another of the values
    (``out = (-d, d)``) whose own slot is kept: no ``j`` is itself a key."""
    out = {}
    for i, v in enumerate(values):
        op = _owner(v)
        if not isinstance(op, ir.Operation) or op.name != "arith.negf":
            continue
        if i in out.values():  # the source of an earlier negation keeps its slot
            continue
        for j, w in enumerate(values):
            if j != i and j not in out and w == op.operands[0]:
                out[i] = j
                break
    return out


def _block_update(kc: KernelContext, acc: Access) -> None:
    """The thread's values cross the guard in a private slot initialised to the identity of
    addition (``-0.0`` for floats); after the guard the accessor's block-wide part runs on the
    slot's contents (the identity for threads past ``P``).

    ``pair`` uses a thread's values only where that thread is in range (its own ``first`` and
    ``second`` under ``t < P``, its ``second`` as the neighbour of thread ``t + 1 < P``), so a value
    that is ``-w`` of another value ``w`` of the op does not cross the guard: it is negated after
    the guard (``+0`` instead of the identity ``-0`` past ``P``, where nothing reads it). LLVM then sees
    ``fadd(fneg w, x)``, which it folds to ``fsub(x, w)`` -- exact: IEEE 754 defines ``x - w`` as
    ``x + (-w)``, signed zeros included, and nvcc folds the same CUDA expression alike -- instead of
    adding a value that is ``-w`` on one path and ``0`` on the other (a ``phi`` it cannot fold: one
    more ``FADD`` and one more initialised register). The CPU interpreter runs the same
    ``negf`` and ``addf`` on the same values: bitwise the same results."""
    n = len(acc.values)
    derived = _negations(acc.values) if acc.accessor == "pair" else {}
    kept = [i for i in range(n) if i not in derived]
    with ir.InsertionPoint(kc.guard):
        slot = b.alloca(acc.compute, len(kept))
        for k in range(len(kept)):
            b.store(b.add_identity(acc.compute), slot, b.idx(k))
    with ir.InsertionPoint(acc.op):
        for k, i in enumerate(kept):
            b.store(acc.values[i], slot, b.idx(k))
    # after the guard, in lowering order (before the gpu.return that ends the function body)
    with ir.InsertionPoint.at_block_terminator(kc.guard.operation.block):
        t, tid, blk, p = _tid_values()
        loaded = {i: b.load(slot, b.idx(k)) for k, i in enumerate(kept)}
        vals = [loaded[i] if i in loaded else b.arith.NegFOp(loaded[derived[i]]).result
                for i in range(n)]
        {
            "sum": _reduce_sum,
            "block_sum": _reduce_sum,
            "shared_sum": _shared_sum,
            "pair": _pair_update,
        }[acc.accessor](kc, acc, vals, t, tid, blk, p)


def _warp_sum(v: ir.Value) -> ir.Value:
    """Butterfly (xor) reduction over the 32 lanes of a warp: every lane gets the warp's sum."""
    for off in (16, 8, 4, 2, 1):
        other, _ = b.shuffle("xor", v, off)
        v = b.add(v, other)
    return v


def _block_totals(kc, acc, vals, tid, finish) -> None:
    """Sum ``vals`` over the threads of the block in a fixed order: warp butterflies, one partial per
    warp in workgroup memory, then warp 0 reduces the partials and, still inside warp 0's region,
    its lane 0 (thread 0) calls ``finish(totals)`` to store or add them. No value crosses the join
    of warp 0's region, so ptxas sees the final butterfly as convergent (a yielded total used by
    ``tid == 0`` after the join made it emit a divergent copy of the butterfly). Every thread must
    call it (it has a barrier)."""
    B = kc.block
    nw = B // WARP
    K = len(vals)
    lane = b.arith.RemUIOp(tid, b.idx(WARP)).result
    warp = b.arith.DivUIOp(tid, b.idx(WARP)).result
    sums = [_warp_sum(v) for v in vals]
    smem = kc.workgroup(acc.compute, nw * K, f"{acc.accessor} partials")
    kc.begin_staging()
    with b.if_(b.cmp("eq", lane, b.idx(0))):
        for c in range(K):
            b.store(sums[c], smem, b.add(b.idx(c * nw), warp))
    b.barrier()
    # warp 0 as ``tid < 32`` rather than ``warp == 0``: the warp id then need not live to the end of
    # the kernel (edge_update: 23 registers instead of 25)
    with b.if_(b.cmp("ult", tid, b.idx(WARP))):
        totals = []
        for c in range(K):
            part = b.if_else(
                b.cmp("ult", lane, b.idx(nw)), [acc.compute],
                lambda c=c: [b.load(smem, b.add(b.idx(c * nw), lane))],
                lambda: [b.add_identity(acc.compute)],
            )[0]
            totals.append(_warp_sum(part))
        with b.if_(b.cmp("eq", lane, b.idx(0))):
            finish(totals)


def _add_to(acc: Access, e: ir.Value, c: int, v: ir.Value) -> None:
    """``X[e] += v`` for component ``c`` as a plain read-modify-write (one writer)."""
    off = acc.offset(e, c)
    old = b.load(acc.buffer, off)
    new = b.add(b.convert_float(old, acc.compute), v) if b.is_float(acc.compute) else b.add(old, v)
    b.store(acc.to_storage(new), acc.buffer, off)


def _reduce_sum(kc, acc, vals, t, tid, blk, p):
    """Block reduction (:func:`_block_totals`). ``sum``: one atomic per component per block into
    ``O[0]`` (``@deterministic``: per-block partials combined in block order by the last block);
    ``block_sum``: thread 0 writes/adds ``O[block]``. Thread 0 issues them inside warp 0's region."""
    if acc.accessor == "sum" and kc.deterministic:
        _deterministic_sum(kc, acc, vals, tid, blk)
        return

    def finish(totals):
        target = b.idx(0) if acc.accessor == "sum" else blk
        for c in range(acc.ncomp):
            if acc.accessor == "sum":
                b.atomic_add(acc.to_storage(totals[c]), acc.buffer, acc.offset(target, c))
            elif acc.kind == "write":
                b.store(acc.to_storage(totals[c]), acc.buffer, acc.offset(target, c))
            else:
                _add_to(acc, target, c, totals[c])

    _block_totals(kc, acc, vals, tid, finish)


def _last_block(kc, name: str, tid, blk) -> ir.Value:
    """After each block stored its partials: thread 0 fences (device scope), counts the block in
    ``NAME.counter`` and tells its block whether it was the last one to finish (the CUDA
    "threadFenceReduction" pattern). Every thread must call it; returns a block-uniform i1."""
    from kernc.support.mlir import dialect

    gpu = dialect("gpu")
    i32 = ir.IntegerType.get_signless(32)
    counter = kc.arg(f"{name}.counter")
    flag = kc.workgroup(i32, 1, "deterministic flag", region="flag")
    nblocks = gpu.GridDimOp(gpu.Dimension.x).result
    with b.if_(b.cmp("eq", tid, b.idx(0))):
        llvm_ops.fence_acq_rel("device")
        old = b.memref.AtomicRMWOp(b.arith.AtomicRMWKind.addi, b.const(1, i32), counter, [b.idx(0)]).result
        last = b.cmp("eq", b.index_cast_ui(old), b.sub(nblocks, b.idx(1)))
        b.store(b.arith.ExtUIOp(i32, last).result, flag, b.idx(0))
    b.barrier()
    is_last = b.cmp("ne", b.load(flag, b.idx(0)), b.const(0, i32))
    return is_last


def _deterministic_sum(kc, acc, vals, tid, blk):
    """``@deterministic`` sum: each block stores its totals (:func:`_block_totals`) in
    ``O.partials[block]``; the last block to finish sums the partials in a fixed order (thread i
    takes blocks i, i+B, ..., then the fixed block reduction) and adds the result to ``O`` -- bitwise
    reproducible from run to run."""
    from kernc.support.mlir import dialect

    gpu = dialect("gpu")
    name = kc.param_of(acc.buffer)
    partials = kc.arg(f"{name}.partials")
    K = acc.ncomp

    def store_partials(totals):
        for c in range(K):
            b.store(totals[c], partials, b.add(b.mul(blk, b.idx(K)), b.idx(c)))

    _block_totals(kc, acc, vals, tid, store_partials)
    is_last = _last_block(kc, name, tid, blk)
    with b.if_(is_last):
        llvm_ops.fence_acq_rel("device")
        nblocks = gpu.GridDimOp(gpu.Dimension.x).result
        loop = b.scf.ForOp(tid, nblocks, b.idx(kc.block), [b.add_identity(acc.compute)] * K)
        with ir.InsertionPoint(loop.body):
            q = loop.induction_variable
            b.scf.YieldOp([b.add(loop.inner_iter_args[c], b.load(partials, b.add(b.mul(q, b.idx(K)), b.idx(c))))
                           for c in range(K)])

        def add_final(final):
            for c in range(K):
                _add_to(acc, b.idx(0), c, final[c])

        _block_totals(kc, acc, list(loop.results), tid, add_final)


def _shared_sum(kc, acc, vals, t, tid, blk, p):
    """``X[u] += sum of y_t over I[t] = u``: the block's values are permuted into sorted index order
    (the ``perm`` table), runs of equal index are reduced with a segmented inclusive scan (warp
    ``shuffle up`` steps, then the run's parts in earlier warps from workgroup memory, in order),
    and the last entry of each run issues one atomic add per component, at ascending addresses.

    Sorted position ``j`` learns its source thread and its run key (the rank of its index value)
    from one coalesced load, ``perm[block*B + j] = thread | rank << 16``; positions past the
    block's threads get the key ``B``, above every rank, so no run continues into them."""
    unique, perm = acc.args
    B = kc.block
    nw = B // WARP
    K = acc.ncomp
    i32 = ir.IntegerType.get_signless(32)
    base = b.mul(blk, b.idx(B))
    nvalid = b.minui(b.idx(B), b.sub(p, base))
    valid = b.cmp("ult", tid, nvalid)
    lane = b.arith.RemUIOp(tid, b.idx(WARP)).result
    warp = b.arith.DivUIOp(tid, b.idx(WARP)).result
    # 1. permute values into sorted order: sorted position j = tid takes the value of thread
    # perm[j] & 0xFFFF (its run key is perm[j] >> 16). perm is loaded before the exchange's
    # barrier and the run's element, unique[block*B + key], right after it (every position loads
    # it, unconditionally: LLVM would sink a load used only by the run ends into their branch), so
    # neither load waits behind the barrier or the scan: on an H200 a 2^24-element scatter-add
    # took 112.5 us with perm loaded after the barrier and unique at the run ends, 84.1 us so.
    def from_perm():
        entry = b.load(perm, b.add(base, tid))
        src = b.index_cast_ui(b.arith.AndIOp(entry, b.const(0xFFFF, i32)).result)
        return [src, b.arith.ShRUIOp(entry, b.const(16, i32)).result]

    src, key = b.if_else(valid, [b.index_t(), i32], from_perm, lambda: [b.idx(0), b.const(B, i32)])
    w = _exchange(kc, acc, vals[:K], tid, lambda: src, valid, f"shared_sum({acc.layout_text})")
    if not kc.deterministic:
        run = b.select(valid, b.index_cast_ui(key), b.idx(0))  # (key B past the block's threads)
        element = b.index_cast_ui(b.load(unique, b.add(base, run)))
    # 2. keys of all sorted positions, for run ends and run starts in earlier warps
    keys = kc.workgroup(i32, B, "shared_sum keys", region="keys")
    b.store(key, keys, tid)
    # 3. segmented inclusive scan within each warp (keys are sorted, so runs are contiguous)
    d = 1
    while d < WARP:
        kup, ok = b.shuffle("up", key, d)
        same = b.and_(ok, b.cmp("eq", kup, key))
        for c in range(K):
            wup, _ = b.shuffle("up", w[c], d)
            w[c] = b.select(same, b.add(w[c], wup), w[c])
        d *= 2
    b.barrier()  # every read of the staged values and every key store is done
    # 4. the last lane of each warp publishes its (partial run) sums
    parts = kc.workgroup(acc.compute, nw * K, "shared_sum partials")
    with b.if_(b.cmp("eq", lane, b.idx(WARP - 1))):
        for c in range(K):
            b.store(w[c], parts, b.add(b.idx(c * nw), warp))
    b.barrier()
    # 5. run ends add the run's parts from earlier warps (in order) and issue the atomics
    nxt = b.if_else(b.cmp("ult", b.add(tid, b.idx(1)), nvalid), [i32],
                    lambda: [b.load(keys, b.add(tid, b.idx(1)))], lambda: [b.const(-1, i32)])[0]
    is_end = b.and_(valid, b.cmp("ne", nxt, key))
    with b.if_(is_end):
        totals = _add_earlier_parts(w, key, keys, parts, warp, nw, acc.compute)
        if kc.deterministic:
            partials = kc.arg(f"{kc.param_of(acc.buffer)}.partials")
            slot = b.mul(b.add(base, b.index_cast_ui(key)), b.idx(K))
            for c in range(K):
                b.store(totals[c], partials, b.add(slot, b.idx(c)))
        else:
            for c in range(K):
                b.atomic_add(acc.to_storage(totals[c]), acc.buffer, acc.offset(element, c))
    if kc.deterministic:
        _deterministic_shared_sum(kc, acc, tid, blk)


def _add_earlier_parts(w, key, keys, parts, warp, nw, compute) -> list:
    """A run end's totals: its warp's scan values ``w`` plus the partial sums ``parts`` of the
    earlier warps its run reaches into, added nearest warp first. An ``scf.while`` over
    ``k = 1, 2, ...`` that continues while ``k <= warp`` and warp ``warp - k`` ends with ``key``
    (its last key ``keys[(warp-k)*32 + 31]``), so it stops at the first earlier warp of another
    run (a flag-carrying ``scf.for`` up to ``warp`` was unrolled by ptxas at a large cost)."""
    scf = b.scf
    K = len(w)
    i1 = ir.IntegerType.get_signless(1)
    types = [b.index_t()] + [compute] * K
    loop = scf.WhileOp(types, [b.idx(1)] + list(w))
    before = loop.before.blocks.append(*types)
    with ir.InsertionPoint(before):
        k = before.arguments[0]

        def same_key():
            prev = b.sub(warp, k)
            last_key = b.load(keys, b.add(b.mul(prev, b.idx(WARP)), b.idx(WARP - 1)))
            return [b.cmp("eq", last_key, key)]

        more = b.if_else(b.cmp("ule", k, warp), [i1], same_key, lambda: [b.const(0, i1)])[0]
        scf.ConditionOp(more, list(before.arguments))
    after = loop.after.blocks.append(*types)
    with ir.InsertionPoint(after):
        k = after.arguments[0]
        prev = b.sub(warp, k)
        new = [b.add(after.arguments[1 + c], b.load(parts, b.add(b.idx(c * nw), prev))) for c in range(K)]
        scf.YieldOp([b.add(k, b.idx(1))] + new)
    return list(loop.results)[1:]


def _deterministic_shared_sum(kc, acc, tid, blk):
    """``@deterministic`` shared_sum: blocks store their per-index run totals in ``X.partials`` (at
    ``block*B + rank``); the last block to finish adds, for each distinct index ``u`` of the whole
    problem, the partials of the blocks that hold ``u`` in block order (the ``gunique``/``gstart``/
    ``gpos``/``gcount`` merge tables of ``shared_indices``), one plain update per ``u``."""

    name = kc.param_of(acc.buffer)
    index = kc.sig.param(name).index_param
    partials = kc.arg(f"{name}.partials")
    gunique, gstart, gpos, gcount = (kc.arg(f"{index}.{f}") for f in ("gunique", "gstart", "gpos", "gcount"))
    K = acc.ncomp
    is_last = _last_block(kc, name, tid, blk)
    with b.if_(is_last):
        llvm_ops.fence_acq_rel("device")
        G = b.index_cast_ui(b.load(gcount, b.idx(0)))
        outer = b.scf.ForOp(tid, G, b.idx(kc.block))
        with ir.InsertionPoint(outer.body):
            g = outer.induction_variable
            lo = b.index_cast_ui(b.load(gstart, g))
            hi = b.index_cast_ui(b.load(gstart, b.add(g, b.idx(1))))
            inner = b.scf.ForOp(lo, hi, b.idx(1), [b.add_identity(acc.compute)] * K)
            with ir.InsertionPoint(inner.body):
                pos = b.index_cast_ui(b.load(gpos, inner.induction_variable))
                base = b.mul(pos, b.idx(K))
                b.scf.YieldOp([b.add(inner.inner_iter_args[c], b.load(partials, b.add(base, b.idx(c))))
                               for c in range(K)])
            u = b.index_cast_ui(b.load(gunique, g))
            for c in range(K):
                _add_to(acc, u, c, inner.results[c])
            b.scf.YieldOp([])


def _exchange(kc, acc, values, tid, source, valid, label: str) -> list:
    """Threads trade values through workgroup memory: each stores its ``values`` (one per component,
    in ``acc.compute``), then, after a barrier, reads those of thread ``source()`` (an ``index``
    built where it is read) where ``valid`` holds, else the identity of addition (``-0.0``: a
    missing neighbour adds nothing, bitwise). Staged in chunks of components that
    fit the staging budget; every thread must call it (barriers)."""
    B = kc.block
    out = [None] * len(values)
    for chunk in _chunks(len(values), B, b.bits(acc.compute) // 8):
        smem = kc.workgroup(acc.compute, B * len(chunk), label)
        kc.begin_staging()
        for j, c in enumerate(chunk):
            b.store(values[c], smem, b.add(b.idx(j * B), tid))
        b.barrier()
        for j, c in enumerate(chunk):
            out[c] = b.if_else(valid, [acc.compute], lambda j=j: [b.load(smem, b.add(b.idx(j * B), source()))],
                               lambda: [b.add_identity(acc.compute)])[0]
    return out


def _pair_update(kc, acc, vals, t, tid, blk, p):
    """``X[j] (=|+=) first_j + second_{j-1}``: neighbours' ``second`` values are exchanged through
    workgroup memory; the two elements a block shares with its neighbours (its first element and the
    one past its last thread) are updated with atomics. ``write pair`` relies on the launcher having
    zeroed the buffer (``zero_init``)."""
    B = kc.block
    K = acc.ncomp
    first, second = vals[:K], vals[K:]
    in_range = b.cmp("ult", t, p)
    has_prev = b.cmp("ugt", tid, b.idx(0))
    prev = _exchange(kc, acc, second, tid, lambda: b.sub(tid, b.idx(1)), b.and_(has_prev, in_range),
                     f"pair({acc.layout_text})")
    with b.if_(in_range):
        t1 = b.add(t, b.idx(1))
        edge = b.and_(b.cmp("eq", tid, b.idx(0)), b.cmp("ugt", t, b.idx(0)))
        last = b.or_(b.cmp("eq", tid, b.idx(B - 1)), b.cmp("eq", t1, p))
        for c in range(K):
            off = acc.offset(t, c)
            total = b.add(first[c], prev[c])

            def interior(off=off, total=total):
                if acc.kind == "write":
                    b.store(acc.to_storage(total), acc.buffer, off)
                else:
                    old = b.load(acc.buffer, off)
                    new = b.add(b.convert_float(old, acc.compute), total) if b.is_float(acc.compute) else b.add(old, total)
                    b.store(acc.to_storage(new), acc.buffer, off)
                return []

            b.if_else(edge, [], lambda off=off, total=total: (b.atomic_add(acc.to_storage(total), acc.buffer, off), [])[1], interior)
            with b.if_(last):
                b.atomic_add(acc.to_storage(second[c]), acc.buffer, acc.offset(t1, c))
