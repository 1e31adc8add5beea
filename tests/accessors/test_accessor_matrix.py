"""Every accessor x problem size x block size x element width x storage/compute dtype x layout, on the
CPU interpreter, against numpy references (float64, cast to the storage dtype).

The matrix is sampled (see ``accessor_cases.py`` for the kernels and references):

- ``test_f32_full``: f32 storage, K in {1, 3, 7} (3 and 7 in both soa and aos), B in {32, 256, 1024}
  and the full list of problem sizes ``P`` in {0, 1, 31, 32, 33, B-1, B, B+1, 3B+7};
- ``test_widths_dtypes``: f16, bf16, f64 storage and f32 storage with ``compute f64``, K in
  {1, 2, 3, 4, 7} (one layout per width, alternating), one or two block sizes per width (rotating,
  see ``WIDTH_BLOCKS``), the reduced ``P`` list {0, 1, B+1, 3B+7};
- ``test_other_layouts``: the layouts the previous test leaves out (and f16 with ``compute f64``),
  at B=256 and P=3B+7.

Kernels run with poisoned fresh workgroup/private memory (``uninitialized="poison"``), so a read of
shared memory nobody wrote shows up as NaN in the results. Gathers and copies are compared bitwise;
order-dependent sums within ``SUM_RTOL`` of the sum of the terms' magnitudes.
"""

from __future__ import annotations

import pytest

import accessor_cases as ac

BLOCKS = (32, 256, 1024)


def _params(acc, rest, ids):
    marks = ac.known_bug_marks(acc)
    return pytest.param(acc, *rest, id="-".join([acc, *ids]), marks=marks)


def _f32_full():
    out = []
    for acc in ac.ALL:
        for B in BLOCKS:
            for K, lay in ((1, None), (3, "soa"), (3, "aos"), (7, "soa"), (7, "aos")):
                for P in ac.ps_full(B):
                    out.append(_params(acc, (B, K, lay, P), [f"B{B}", f"K{K}{lay or ''}", f"P{P}"]))
    return out


@pytest.mark.parametrize("acc,B,K,layout,P", _f32_full())
def test_f32_full(acc, B, K, layout, P):
    ac.run_case(acc, B, K, "f32", layout, None, P)


WIDTH_LAYOUT = {1: None, 2: "soa", 3: "aos", 4: "soa", 7: "aos"}
DTYPES = (("f16", None), ("bf16", None), ("f64", None), ("f32", "f64"))
#: (dtype, compute) -> {K: block sizes}: every width for every dtype; block sizes rotate so that the
#: f64-compute staging chunks (2 components per chunk at B=1024) and every B meet every dtype.
WIDTH_BLOCKS = {
    ("f16", None): {1: (32, 1024), 2: (256,), 3: (32,), 4: (1024,), 7: (256,)},
    ("bf16", None): {1: (32, 1024), 2: (256,), 3: (32,), 4: (1024,), 7: (256,)},
    ("f64", None): {1: (32, 256), 2: (1024,), 3: (1024,), 4: (32,), 7: (256, 1024)},
    ("f32", "f64"): {1: (1024,), 2: (32,), 3: (1024,), 4: (256,), 7: (32, 1024)},
}


def _widths():
    out = []
    for acc in ac.ALL:
        for (dtype, compute), per_k in WIDTH_BLOCKS.items():
            for K, blocks in per_k.items():
                lay = WIDTH_LAYOUT[K]
                for B in blocks:
                    for P in ac.ps_reduced(B):
                        out.append(_params(acc, (dtype, compute, B, K, lay, P),
                                           [dtype + (f"c{compute}" if compute else ""), f"B{B}",
                                            f"K{K}{lay or ''}", f"P{P}"]))
    return out


@pytest.mark.parametrize("acc,dtype,compute,B,K,layout,P", _widths())
def test_widths_dtypes(acc, dtype, compute, B, K, layout, P):
    ac.run_case(acc, B, K, dtype, layout, compute, P)


def _other_layouts():
    out = []
    for acc in ac.ALL:
        for dtype, compute in DTYPES + (("f16", "f64"),):
            for K, lay in WIDTH_LAYOUT.items():
                if K == 1:
                    continue
                other = "aos" if lay == "soa" else "soa"
                out.append(_params(acc, (dtype, compute, K, other),
                                   [dtype + (f"c{compute}" if compute else ""), f"K{K}{other}"]))
    return out


@pytest.mark.parametrize("acc,dtype,compute,K,layout", _other_layouts())
def test_other_layouts(acc, dtype, compute, K, layout):
    B = 256
    ac.run_case(acc, B, K, dtype, layout, compute, 3 * B + 7)


def _caspar():
    out = []
    for acc in ac.ALL:
        for dtype, K in (("f32", 2), ("f32", 3), ("f32", 4), ("f16", 3), ("f16", 7), ("f64", 2)):
            for B in (32, 256):
                out.append(_params(acc, (dtype, K, B), [dtype, f"K{K}caspar", f"B{B}"]))
    return out


@pytest.mark.parametrize("acc,dtype,K,B", _caspar())
def test_caspar_layout(acc, dtype, K, B):
    """Caspar's 16-byte chunk layout (``(n, K):(C, 1)`` over ``[n, C]`` storage, ``C = 16/sizeof(T)``):
    the padding lanes (NaN) are never used as values and never written."""
    for P in (1, B + 1, 3 * B + 7):
        ac.run_case(acc, B, K, dtype, "caspar", None, P)


def _other_blocks():
    out = []
    for acc in ac.ALL:
        for B in (64, 128, 512):
            out.append(_params(acc, (B,), [f"B{B}"]))
    return out


@pytest.mark.parametrize("acc,B", _other_blocks())
def test_other_block_sizes(acc, B):
    """Every power-of-two block size works, not only 32/256/1024 (Caspar hard-codes 1024)."""
    for P in (B - 1, B + 1, 3 * B + 7):
        ac.run_case(acc, B, 2, "f32", "soa", None, P)


def _many_blocks():
    out = []
    for acc in ac.ALL:
        for B, K, lay in ((32, 1, None), (1024, 3, "soa")):
            out.append(_params(acc, (B, K, lay), [f"B{B}", f"K{K}{lay or ''}"]))
    return out


@pytest.mark.parametrize("acc,B,K,layout", _many_blocks())
def test_many_blocks(acc, B, K, layout):
    """A problem larger than one interpreter batch (2**16 threads): block-wide steps and atomics
    across batch boundaries; 2188 blocks of 32 threads."""
    ac.run_case(acc, B, K, "f32", layout, None, 70_007)
