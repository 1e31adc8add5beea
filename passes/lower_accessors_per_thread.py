"""The per-thread accessors: ``sequential``, ``strided``, ``strided_default`` and ``indexed``
reads and updates, ``atomic`` adds (``kern-lower-accessors``).

Each is lowered in place, inside the guard ``t < P``: the element index ``e`` thread ``t`` reaches
(``lower_accessors_element.element_index``), then per component a ``kern.layout_apply`` offset
and a load, store, read-modify-write (one writer per element) or atomic add; a read with a
default loads only in bounds (``0 <= e < M``, signed). An element whose components are
contiguous and suitably aligned moves in 16- or 8-byte vector loads and stores
(:func:`vector_plan`), when the buffer's base address is aligned (tested at run time).
"""

from __future__ import annotations

from kernc.dialect import kern
from kernc.dialect.access import Access
from kernc.dialect.accessors import ADD, WRITE
from kernc.dialect.strided import Poly, parse_pieces
from kernc.support.mlir import dialect, ir

from . import ir_builder as b
from .lower_accessors_element import default_value, element_index, load, load_default, offset, to_storage
from .workgroup import KernelContext


#: Bytes of one vector access, widest first: 16 (``ld.global.v4.f32`` and friends), then 8
#: (``ld.global.v2.f32``) for elements whose size is a multiple of 8 but not of 16.
_VECTOR_SIZES = (16, 8)


def whole_padded_elements(kc: KernelContext | None, acc: Access) -> bool:
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
    if p.kind != "buffer" or len(p.storage_shape) != 2 or not p.layout:
        return False
    if p.layout == acc.layout_text and str(p.storage_shape[1]) == str(acc.layout.stride[0]):
        return True  # an [n, C] array of padded elements
    # Caspar's planes (frontend/caspar.py): a [rows, M] array, chunk k of width d_k at rows
    # R_k .. R_k + d_k - 1 (the piece (M, c_k):(d_k, 1)+R_k*M); its padding lanes are in the array
    # when R_k + d_k <= rows
    if acc.layout_text not in [str(x) for x in parse_pieces(p.layout)]:
        return False
    (m, _), (d, _) = acc.layout.shape, acc.layout.stride
    rows = str(p.storage_shape[0])
    if str(p.storage_shape[1]) != str(m) or not d.is_const or not rows.isdigit():
        return False
    start = next((r for r in range(int(rows) + 1) if Poly.const(r) * m == acc.layout.start), None)
    return start is not None and start + d.value <= int(rows)


def vector_plan(acc: Access, kc: KernelContext | None) -> tuple[int, int] | None:
    """How to access this accessor's element with vector loads/stores: ``(w, n)``, ``n`` vectors of
    ``w`` elements each (``w * esize`` is 16 or 8 bytes), or ``None`` when the components of an
    element are not contiguous, suitably aligned storage.

    The component stride must be 1 and the element stride a multiple of ``w`` (so every element
    starts at a multiple of the vector size from the buffer's base). The ``ncomp`` components are
    covered exactly by ``n * w`` elements (an ``f32[n, 8]`` element is two 16-byte vectors, an
    ``f32[n, 2]`` one 8-byte vector); reads may also use trailing padding lanes when the storage
    holds them (:func:`whole_padded_elements`, as for ``caspar``'s ``(n,3):(4,1)``), writes never.
    16-byte vectors are preferred, then 8-byte ones, each first without padding."""
    if acc.layout.rank != 2 or acc.components < 2:
        return None
    d0, d1 = acc.layout.stride
    esize = b.bits(acc.storage) // 8
    if not (d1.is_const and d1.value == 1 and d0.is_const):
        return None
    sizes = [v for v in _VECTOR_SIZES if v % esize == 0 and v // esize >= 2 and d0.value % (v // esize) == 0
             and all(c % (v // esize) == 0 for _, c in acc.layout.start.terms)]  # aligned planes
    for v in sizes:
        w = v // esize
        if acc.components % w == 0:
            return w, acc.components // w
    if acc.is_read and whole_padded_elements(kc, acc):
        for v in sizes:
            w = v // esize
            span = -(-acc.components // w) * w
            if span <= d0.value:
                return w, span // w
    return None


def vectorised(acc: Access, e: ir.Value, plan: tuple[int, int], scalar) -> list:
    """The access as ``plan = (w, n)``: ``n`` ``vector<w x T>`` loads/stores, when the buffer's base
    address is aligned to the vector size (tested at run time: uniform across the launch), else
    ``scalar()`` -- never a misaligned vector access."""
    vector = dialect("vector")
    w, n = plan
    nbytes = w * b.bits(acc.storage) // 8
    vt = ir.VectorType.get([w], acc.storage)
    base = offset(acc, e, 0)
    bases = [base] + [b.add(base, b.idx(k * w)) for k in range(1, n)]
    ptr = b.memref.ExtractAlignedPointerAsIndexOp(acc.buffer).result
    aligned = b.cmp("eq", b.arith.RemUIOp(ptr, b.idx(nbytes)).result, b.idx(0))

    def to_c(v):
        return b.convert_float(v, acc.compute) if b.is_float(acc.compute) else v

    def load_all():
        vs = [vector.LoadOp(vt, acc.buffer, [at], alignment=nbytes).result for at in bases]
        return [to_c(vector.ExtractOp(vs[c // w], [], [c % w]).result) for c in range(n * w)]

    def vec():
        if acc.is_read:
            return load_all()[:acc.components]
        if acc.mode == WRITE:
            new = [to_storage(acc, v) for v in acc.values]
        else:
            old = load_all()
            new = [to_storage(acc, b.add(old[c], acc.values[c])) for c in range(n * w)]
        for k, at in enumerate(bases):
            vector.StoreOp(vector.FromElementsOp(vt, new[k * w:(k + 1) * w]).result, acc.buffer, [at],
                           alignment=nbytes)
        return []

    types = [acc.compute] * acc.components if acc.is_read else []
    return b.if_else(aligned, types, vec, scalar)


def lower(acc: Access, kc: KernelContext | None = None) -> list:
    t = kern.builtin("thread_id")
    e = element_index(acc, t)
    plan = vector_plan(acc, kc) if acc.kind.vector else None
    if plan is not None:
        return vectorised(acc, e, plan, lambda: _scalar_access(acc, e))
    return _scalar_access(acc, e)


def _scalar_access(acc: Access, e: ir.Value) -> list:
    out = []
    for c in range(acc.components):
        if acc.is_read:
            if acc.kind.default:
                out.append(load_default(acc, e, c, default_value(acc)))
            else:
                out.append(load(acc, e, c))
            continue
        v = acc.values[c]
        if acc.mode == ADD and b.is_add_identity(v):
            continue  # a component the thread does not change (-0.0): no update, no atomic
        off = offset(acc, e, c)
        if acc.kind.atomic:
            b.atomic_add(to_storage(acc, v), acc.buffer, off)
        elif acc.mode == WRITE:
            b.store(to_storage(acc, v), acc.buffer, off)
        else:
            old = b.load(acc.buffer, off)
            if b.is_float(acc.compute):
                new = to_storage(acc, b.add(b.convert_float(old, acc.compute), v))
            else:
                new = b.add(old, v)
            b.store(new, acc.buffer, off)
    return out
