"""An ordering ``arith.cmpi`` of an index affine in the block and thread ids against a uniform bound
(a bounds guard) is decided once per batch when every lane of the batch agrees
(``numeric._bounded_compare``): every predicate, both operand orders, a bound below, inside and
beyond the batches' ranges, a thread-only (block-periodic) value, and negative values under an
unsigned predicate give numpy's lane-by-lane answer, and the once-per-batch path is taken."""

from __future__ import annotations

import numpy as np
import pytest

from kernc.backend.interpreter import Interpreter, launch, numeric
from kernc.support.mlir import ir

G = "#gpu.address_space<global>"
BUF = f"memref<?xi32, {G}>"
B = 64
PREDICATES = ["slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge"]
NP = {"slt": np.less, "sle": np.less_equal, "sgt": np.greater, "sge": np.greater_equal}


def _module(pred: str, value: str, swapped: bool) -> ir.Module:
    """out[t] = cmpi pred (value, k) (or (k, value)) as i32, for t = block_id * 64 + thread_id."""
    lhs, rhs = ("%k", "%v") if swapped else ("%v", "%k")
    text = f"""module attributes {{gpu.container_module}} {{
  gpu.module @kernels {{
    gpu.func @k(%out: {BUF}, %k: index) kernel {{
      %c64 = arith.constant 64 : index
      %c3 = arith.constant 3 : index
      %c2 = arith.constant 2 : index
      %bid = gpu.block_id x
      %tid = gpu.thread_id x
      %b0 = arith.muli %bid, %c64 : index
      %t = arith.addi %b0, %tid : index
      %tt = arith.muli %tid, %c2 : index
      %s = arith.subi %t, %c3 : index
      %v = {value}
      %c = arith.cmpi {pred}, {lhs}, {rhs} : index
      %e = arith.extui %c : i1 to i32
      memref.store %e, %out[%t] : {BUF}
      gpu.return
    }}
  }}
}}
"""
    with ir.Context():
        return ir.Module.parse(text)


#: the compared value: its IR and its lane-by-lane numpy form from t = block_id * 64 + thread_id
VALUES = {
    "t": ("arith.addi %b0, %tid : index", lambda t: t),
    "thread": ("arith.addi %tt, %c3 : index", lambda t: (t % B) * 2 + 3),
    "t - 3": ("arith.subi %t, %c3 : index", lambda t: t - 3),
}


def _want(pred, v, k, swapped):
    if pred[0] == "u":  # unsigned: as uint64
        v, k = v.astype(np.uint64), np.uint64(k % 2**64)
        fn = NP["s" + pred[1:]]
    else:
        fn = NP[pred]
    return (fn(k, v) if swapped else fn(v, k)).astype(np.int32)


@pytest.mark.parametrize("pred", PREDICATES)
@pytest.mark.parametrize("name", ["t", "thread", "t - 3"])
def test_guards_decided_per_batch_match_numpy(pred, name, monkeypatch):
    monkeypatch.setattr(launch, "MAX_LANES_PER_BATCH", 4 * B)  # batches of 4 blocks: 256 lanes
    decided = []
    bounded = numeric._bounded_compare

    def recording(*a):
        known = bounded(*a)
        if known is None:
            return None

        def f(fr):
            r = known(fr)
            decided.append(r)
            return r
        return f

    monkeypatch.setattr(numeric, "_bounded_compare", recording)
    value, ref = VALUES[name]
    grid = 10
    t = np.arange(grid * B, dtype=np.int64)
    for swapped in (False, True):
        it = Interpreter(_module(pred, value, swapped))
        for k in (-5, 0, 1, 200, 256, 300, 511, 512, 640, 10**6):
            out = np.full(grid * B, -1, np.int32)
            it.run("k", grid, B, [out, k], index_bits=64)
            np.testing.assert_array_equal(out, _want(pred, ref(t), k, swapped), err_msg=f"{swapped} {k}")
    assert True in decided and False in decided  # the path is taken, both ways
