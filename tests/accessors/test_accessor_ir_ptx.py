"""Structure of the lowered accessors (gpu IR) and their PTX.

- gpu IR, for every accessor: every ``gpu.barrier`` sits at the top level of the kernel body (reached
  by all threads, never under the ``kern.guard`` or any other condition); no ``gpu.shuffle`` is under
  the guard; block-wide reads stage *before* the guard (``pair``'s last in-range step, which only
  reads the staged values after the last barrier, opens the guard's body), block-wide updates
  reduce *after* it;
  per-thread accessors use no workgroup memory, barrier or shuffle; atomics only where the
  semantics need them.
- PTX: a representative subset of the matrix kernels assembles with ``ptxas -arch=sm_90``
  (``kernc.backend.toolkit.run_ptxas``; skipped without ptxas), relaxed device-scope atomics,
  ``bar.sync`` and ``shfl.sync`` where expected, vectorised sequential loads where the layout allows.
"""

from __future__ import annotations

import re

import pytest

from kernc.backend import toolkit
from kernc.compiler import _CTX_LOCK, context
from kernc.support.mlir import ir

import accessor_cases as ac

needs_ptxas = pytest.mark.skipif(toolkit.ptxas_path() is None, reason="ptxas not found")

BLOCK_WIDE = {"shared", "unique", "pair", "pair_strided_default", "shared_sum", "write_block_sum",
              "add_block_sum", "write_sum", "add_sum", "write_pair", "add_pair"}
#: (B, K, dtype, layout, compute): f32 scalar, a soa 3-vector, and f64 7-vectors at B=1024 (staged in
#: several chunks of components).
SHAPES = [(256, 1, "f32", None, None), (256, 3, "f32", "soa", None), (1024, 7, "f64", "aos", None),
          (1024, 7, "f32", "soa", "f64"), (32, 2, "f16", "aos", None)]


def _gpu_func(mod):
    with _CTX_LOCK, context():
        m = ir.Module.parse(mod._compilation.gpu_ir())
        funcs = []

        def visit(op):
            if op.name == "gpu.func":
                funcs.append(op)
            return ir.WalkResult.ADVANCE

        m.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
        assert len(funcs) == 1
        return m, funcs[0]


def _summary(fn):
    """For each interesting op: its name, its ancestors' names (innermost first), whether an ancestor
    is the kern.guard, and its position among the function body's top-level ops."""
    body = fn.regions[0].blocks[0]
    top = list(body.operations)
    guard_pos = [i for i, o in enumerate(top) if o.operation.name == "scf.if" and "kern.guard" in o.operation.attributes]
    assert len(guard_pos) == 1, "exactly one kern.guard at the top level"
    out = []
    for pos, o in enumerate(top):
        def visit(op, pos=pos):
            name = op.name
            if name in ("gpu.barrier", "gpu.shuffle", "memref.atomic_rmw", "memref.store", "memref.load"):
                anc = []
                p = op.parent
                in_guard = False
                while p is not None and p.name != "gpu.func":
                    anc.append(p.name)
                    if p.name == "scf.if" and "kern.guard" in p.attributes:
                        in_guard = True
                    p = p.parent
                space = None
                if name in ("memref.store", "memref.load"):
                    mem = op.operands[1] if name == "memref.store" else op.operands[0]
                    space = "workgroup" if "workgroup" in str(mem.type) else ("private" if "address_space" not in str(mem.type) else "global")
                out.append(dict(name=name, anc=anc, guard=in_guard, pos=pos, space=space))
            return ir.WalkResult.ADVANCE

        o.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return out, guard_pos[0]


def _cases():
    out = []
    for acc in ac.ALL:
        for B, K, dtype, lay, comp in SHAPES:
            out.append(pytest.param(acc, B, K, dtype, lay, comp, marks=ac.known_bug_marks(acc),
                                    id=f"{acc}-B{B}-K{K}{lay or ''}-{dtype}{'c' + comp if comp else ''}"))
    return out


@pytest.mark.parametrize("acc,B,K,dtype,layout,compute", _cases())
def test_sync_ops_are_never_under_the_guard(acc, B, K, dtype, layout, compute):
    mod = ac.module(acc, B, K, dtype, layout, compute)
    with _CTX_LOCK, context():
        _m, fn = _gpu_func(mod)
        ops, guard = _summary(fn)
        workgroup_attrs = int(ir.IntegerAttr(fn.attributes["workgroup_attributions"]).value) \
            if "workgroup_attributions" in fn.attributes else 0
    barriers = [o for o in ops if o["name"] == "gpu.barrier"]
    shuffles = [o for o in ops if o["name"] == "gpu.shuffle"]
    atomics = [o for o in ops if o["name"] == "memref.atomic_rmw"]
    wg = [o for o in ops if o["space"] == "workgroup"]
    for o in barriers:
        assert o["anc"] == [], f"gpu.barrier nested in {o['anc']}"
    for o in shuffles:
        assert not o["guard"], "gpu.shuffle under the kern.guard"
        assert "scf.for" not in o["anc"]
    if acc not in BLOCK_WIDE:
        assert not barriers and not shuffles and not wg and workgroup_attrs == 0
        assert bool(atomics) == (acc == "atomic")
        return
    assert barriers and wg and workgroup_attrs >= 1
    assert not any(o["guard"] and o["name"] == "memref.store" for o in wg), "workgroup memory written under the guard"
    if acc in ac.READS:
        # stage before the guard; nothing block-wide after it; no atomics. The staging's last
        # in-range step (after its last barrier) may open the guard's body (pair: the neighbour's
        # value is read there), so workgroup loads may sit under the guard -- but only pair's
        guarded = [o for o in wg if o["guard"]]
        assert all(o["name"] == "memref.load" for o in guarded)
        assert bool(guarded) == (acc in ("pair", "pair_strided_default"))
        assert all(o["pos"] < guard for o in barriers + wg if not o["guard"])
        assert not atomics and not shuffles
    else:
        assert all(o["pos"] > guard for o in barriers + wg + shuffles)
        sums_with_shuffles = {"shared_sum", "write_block_sum", "add_block_sum", "write_sum", "add_sum"}
        assert bool(shuffles) == (acc in sums_with_shuffles)
        assert bool(atomics) == (acc in {"shared_sum", "write_sum", "add_sum", "write_pair", "add_pair"})
        assert all(not o["guard"] for o in atomics)


def test_staging_chunks_fit_the_budget():
    """f64 7-vectors at B=1024 are staged two components at a time (16 KiB of workgroup memory),
    not all seven at once (56 KiB, over the 48 KiB a block may use)."""
    mod = ac.module("shared", 1024, 7, "f64", "aos", None)
    text = mod._compilation.gpu_ir()
    sizes = [int(s) for s in re.findall(r"memref<(\d+)xf64, #gpu.address_space<workgroup>>", text)]
    assert sizes and max(sizes) * 8 <= 16 * 1024
    with _CTX_LOCK, context():
        _m, fn = _gpu_func(mod)
        ops, guard = _summary(fn)
    # 4 chunks: a barrier after each chunk's staging, and one before re-using the buffer for the next
    assert len([o for o in ops if o["name"] == "gpu.barrier"]) == 7


# ---- PTX ------------------------------------------------------------------------------------

PTX_SHAPES = [(256, 1, "f32", None, None), (1024, 3, "f16", "soa", None), (32, 7, "f64", "aos", None),
              (1024, 4, "f32", "soa", "f64"), (256, 2, "bf16", "aos", None)]


def _ptx_cases():
    out = []
    for acc in ac.ALL:
        for B, K, dtype, lay, comp in PTX_SHAPES:
            out.append(pytest.param(acc, B, K, dtype, lay, comp, marks=ac.known_bug_marks(acc),
                                    id=f"{acc}-B{B}-K{K}{lay or ''}-{dtype}{'c' + comp if comp else ''}"))
    return out


ATOM_SUFFIX = {"f32": "add.f32", "f64": "add.f64", "f16": "add.noftz.f16", "bf16": "add.noftz.bf16"}


@needs_ptxas
@pytest.mark.parametrize("acc,B,K,dtype,layout,compute", _ptx_cases())
def test_ptx_assembles_with_ptxas(acc, B, K, dtype, layout, compute):
    mod = ac.module(acc, B, K, dtype, layout, compute)
    ptx = mod.ptx
    result = toolkit.run_ptxas(ptx, arch="sm_90")
    assert result.ok, result.log[-3000:]
    assert result.spills.get("k", (0, 0)) == (0, 0), result.log[-2000:]
    atoms = set(re.findall(r"\batom\.[\w.]+", ptx))
    if acc in {"atomic", "shared_sum", "write_sum", "add_sum", "write_pair", "add_pair"}:
        assert atoms == {f"atom.relaxed.gpu.global.{ATOM_SUFFIX[dtype]}"}, atoms
    else:
        assert not atoms
    assert ("bar.sync" in ptx) == (acc in BLOCK_WIDE)
    if acc in {"write_sum", "add_sum", "write_block_sum", "add_block_sum"}:
        assert "shfl.sync.bfly.b32" in ptx
    if acc == "shared_sum":
        assert "shfl.sync.up.b32" in ptx


@needs_ptxas
@pytest.mark.parametrize("acc", ["shared", "shared_sum", "write_pair", "add_sum"])
def test_ptx_64_bit_index_assembles(acc):
    mod = ac.module(acc, 256, 3, "f32", "soa", None)
    result = toolkit.run_ptxas(mod._compilation.ptx(64), arch="sm_90")
    assert result.ok, result.log[-3000:]


@pytest.mark.parametrize("K,dtype,vec", [(4, "f32", "v4.b32"), (2, "f32", "v2.b32"), (2, "f64", "v2.b64")])
def test_sequential_aos_loads_are_vectorised(K, dtype, vec):
    """``sequential``: "vectorised 16-byte loads where the layout allows" (accessors.md)."""
    ptx = ac.module("sequential", 256, K, dtype, "aos", None).ptx
    assert f"ld.global.{vec}" in ptx or f"ld.global.nc.{vec}" in ptx, re.findall(r"ld\.global[\w.]*", ptx)
