"""The CPU reference interpreter: a vectorised SIMT executor, in numpy, of kernc's gpu-level IR.

It executes the ``gpu.func`` kernels of a module in the form described in ``docs/gpu-ir.md``
(``gpu``, ``arith``, ``math``, ``scf`` and ``memref`` ops on 1-D flat buffers, workgroup memory as
``gpu.func`` workgroup attributions) with the semantics the same IR has on an NVIDIA GPU once lowered
through NVVM:

- **Lanes.** All threads of a *batch* of consecutive blocks are the lanes of numpy arrays of shape
  ``(nblocks_in_batch * block,)``; lane ``l`` of a batch starting at block ``b0`` is thread
  ``l % block`` of block ``b0 + l // block``. Batches hold at most ``MAX_LANES_PER_BATCH`` (``2**16``)
  lanes, fewer when the kernel has large private or workgroup arrays, so memory stays bounded for any
  grid (and the arrays stay cache-sized, which measured fastest). Every SSA value
  is such an array, or a numpy scalar when it is uniform over the batch (constants, scalar arguments,
  values computed only from those).
- **Control flow** runs in lockstep under a boolean lane mask: ``scf.if`` runs its regions under
  ``mask & cond`` and ``mask & ~cond`` and merges the yielded values with ``np.where``; ``scf.for``
  with lane-varying bounds and ``scf.while`` iterate until no lane is active, each lane keeping its own
  induction variable and iteration arguments. Pure ops compute on every lane (inactive lanes hold
  values nobody reads); only memory ops, atomics, shuffles and barriers consult the mask.
- **Integers** are signless: values of ``iN`` are stored in the signed numpy type of that width
  (``i1`` as ``bool``, ``index`` as ``int64``) and every op that cares about signedness (``divui``,
  ``cmpi ult``, ``shrui``, ``extui``, ``uitofp``, ...) computes on the unsigned view. Arithmetic wraps
  modulo ``2**N``; ``divsi``/``remsi`` truncate toward zero (C semantics). Operations whose result is
  undefined on the GPU (division by zero, shift amounts ``>= N``, out-of-range ``fptosi``) produce a
  value (0, or a saturated conversion as ``cvt.rzi`` does) and never raise.
- **Floats** are computed in the operand's precision (``f32`` ops on ``float32`` arrays, ``f16`` on
  ``float16``, ``bf16`` on ``ml_dtypes.bfloat16``, which rounds to nearest even like PTX ``cvt.rn``).
  Fast-math flags are ignored. ``math.fma`` is rounded once, like PTX ``fma.rn``
  (:mod:`kernc.backend.exact_fma`).
- **Memory.** Global buffers are the caller's numpy arrays, read and written in place. Every active
  lane's index is bounds-checked; a fault raises :class:`~kernc.errors.KerncRuntimeError` naming the
  buffer, the global thread id and the index. Workgroup attributions are allocated per block,
  ``memref.alloca`` and private attributions per thread, both bounds-checked the same way. When
  several lanes store to one address in one step the highest lane wins; atomics are serialised in lane
  order so the old values they return form one consistent sequence.
- **Statistics** (:class:`RunStats`): global load/store *requests* and 32-byte *sectors* per warp
  request, atomics, shared-memory requests and *bank conflicts* -- the CPU-measurable proxy for
  coalescing quality.

The public API is :class:`Interpreter` (translate a module once, run its kernels many times) and
:class:`RunStats`. Each ``gpu.func`` is translated on its first run into a plan of Python closures
over numpy (one per op, nested per region) that is cached on the :class:`Interpreter`; running a
kernel never walks the MLIR bindings objects again.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

import numpy as np

from kernc.backend import exact_fma
from kernc.backend.stats_table import stats_html, stats_table
from kernc.support.errors import KerncLaunchError, KerncRuntimeError
from kernc.support.mlir import ir

__all__ = ["Interpreter", "RunStats", "InterpreterUnsupportedError", "MAX_LANES_PER_BATCH", "WARP_SIZE"]

#: Upper bound on the number of lanes (threads) executed together in one batch of blocks.
MAX_LANES_PER_BATCH = 1 << 16
#: Threads per warp (NVIDIA).
WARP_SIZE = 32
#: Bytes per global-memory sector (CUDA Programming Guide, "Device Memory Accesses").
SECTOR_BYTES = 32
#: Shared-memory banks and their width (CUDA Programming Guide, "Shared Memory", compute capability 5.x+).
SHARED_BANKS = 32
BANK_BYTES = 4
#: Budget for per-batch private + workgroup allocations (bytes); batches shrink to stay below it.
_SCRATCH_BUDGET = 1 << 28
_KEY_SHIFT = 40  # (warp << _KEY_SHIFT) | address-derived key, for np.unique over (warp, address) pairs


class InterpreterUnsupportedError(KerncRuntimeError, NotImplementedError):
    """The IR uses an op, type or attribute the CPU interpreter does not implement."""


# ------------------------------------------------------------------------------------------------
# statistics


@dataclass
class RunStats:
    """Memory-traffic counters of one :meth:`Interpreter.run`.

    Definitions (after the CUDA C++ Programming Guide, "Device Memory Accesses" and "Shared Memory"):

    - a *request* is one warp-level execution of a load/store instruction with at least one active
      lane; warps are the groups of 32 consecutive threads of a block (the last one may be partial);
    - ``global_*_sectors``: per request, the number of distinct 32-byte segments
      (``byte_address // 32``, byte address = element index * itemsize, buffers assumed 256-byte
      aligned) touched by the warp's active lanes, summed over requests;
    - ``global_atomics``: active lanes that executed a global ``memref.atomic_rmw``;
    - ``shared_requests``: warp requests to workgroup memory (loads, stores and atomics);
    - ``shared_bank_conflicts``: per shared request, (the maximum over the 32 banks of the number of
      distinct 4-byte words the warp accesses in that bank) - 1, summed; bank =
      ``(byte_address // 4) % 32`` within the attribution (each attribution is assumed 128-byte
      aligned); several lanes reading one word is a broadcast, not a conflict; an 8-byte (16-byte)
      element occupies two (four) words, and its request is served in 2 (4) phases of 16 (8)
      consecutive lanes, 128 bytes each, counted separately (a conflict-free f64 warp access counts
      0, as Nsight Compute's excess wavefronts do);
    - ``threads`` = grid * block, ``blocks`` = grid.
    """

    global_load_requests: int = 0
    global_load_sectors: int = 0
    global_store_requests: int = 0
    global_store_sectors: int = 0
    global_atomics: int = 0
    shared_requests: int = 0
    shared_bank_conflicts: int = 0
    threads: int = 0
    blocks: int = 0

    def to_dict(self) -> dict:
        """The counters as a JSON-serialisable ``dict`` of ``int`` (keys as the field names)."""
        return {k: int(v) for k, v in asdict(self).items()}

    def __str__(self) -> str:  # an aligned table (backend/stats_table.py)
        return stats_table(self)

    def _repr_html_(self) -> str:  # Jupyter
        return stats_html(self)


def _count_runs(sorted_keys: np.ndarray) -> int:
    """Number of distinct values of a non-decreasing integer array."""
    n = sorted_keys.size
    if n == 0:
        return 0
    return 1 + int(np.count_nonzero(sorted_keys[1:] != sorted_keys[:-1]))


def _count_distinct_pairs(warps: np.ndarray, keys: np.ndarray) -> int:
    """Number of distinct ``(warp, key)`` pairs; ``warps`` is non-decreasing, ``keys`` >= 0.

    Warps whose keys are non-decreasing (the common, coalesced case) are counted in O(n) without
    sorting; only the other warps go through ``np.unique``.
    """
    n = keys.size
    if n == 0:
        return 0
    dk = keys[1:] != keys[:-1]
    dw = warps[1:] != warps[:-1]
    broken = (keys[1:] < keys[:-1]) & ~dw
    if not broken.any():
        return 1 + int(np.count_nonzero(dk | dw))
    bad_warps = np.unique(warps[1:][broken])
    in_bad = np.isin(warps, bad_warps)
    total = int(np.unique((warps[in_bad] << _KEY_SHIFT) | keys[in_bad]).size)
    good = ~in_bad
    if good.any():
        gw, gk = warps[good], keys[good]
        total += 1 + int(np.count_nonzero((gk[1:] != gk[:-1]) | (gw[1:] != gw[:-1])))
    return total


def _bank_conflicts(warps: np.ndarray, words: np.ndarray) -> int:
    """Sum over warps (or phases: any integer group id) of (max over banks of distinct words in the
    bank) - 1."""
    if warps.size == 0:
        return 0
    keys = np.unique((warps << _KEY_SHIFT) | words)
    w = keys >> _KEY_SHIFT
    bank = (keys & ((1 << _KEY_SHIFT) - 1)) % SHARED_BANKS
    wb, counts = np.unique((w << 5) | bank, return_counts=True)
    ww = wb >> 5
    starts = np.flatnonzero(np.concatenate(([True], ww[1:] != ww[:-1])))
    worst = np.maximum.reduceat(counts, starts)
    return int((worst - 1).sum())


# ------------------------------------------------------------------------------------------------
# types


class _Ty:
    """A scalar type of the IR: ``kind`` is ``"f"`` (float) or ``"i"`` (integer, ``index``, ``i1``)."""

    __slots__ = ("name", "kind", "bits", "dtype", "sdtype", "udtype")

    def __init__(self, name, kind, bits, dtype, sdtype=None, udtype=None):
        self.name, self.kind, self.bits = name, kind, bits
        self.dtype = np.dtype(dtype)
        self.sdtype = np.dtype(sdtype) if sdtype is not None else self.dtype
        self.udtype = np.dtype(udtype) if udtype is not None else self.dtype

    def zero(self):
        return self.dtype.type(0)

    def __repr__(self):
        return self.name


_INT_DTYPES = {8: (np.int8, np.uint8), 16: (np.int16, np.uint16), 32: (np.int32, np.uint32),
               64: (np.int64, np.uint64)}
_TY_CACHE: dict[str, _Ty] = {}


def _scalar_ty(name: str) -> _Ty:
    ty = _TY_CACHE.get(name)
    if ty is not None:
        return ty
    if name in ("f16", "f32", "f64"):
        dt = {"f16": np.float16, "f32": np.float32, "f64": np.float64}[name]
        ty = _Ty(name, "f", int(name[1:]), dt)
    elif name == "index":
        ty = _Ty(name, "i", 64, np.int64, np.int64, np.uint64)
    elif name == "i1":
        ty = _Ty(name, "i", 1, np.bool_, np.int8, np.uint8)
    elif re.fullmatch(r"i(8|16|32|64)", name):
        bits = int(name[1:])
        s, u = _INT_DTYPES[bits]
        ty = _Ty(name, "i", bits, s, s, u)
    elif name == "bf16":
        try:  # numpy has no bfloat16; ml_dtypes' is a numpy dtype (conversions round to nearest even)
            import ml_dtypes
        except ImportError:
            raise InterpreterUnsupportedError(
                "the CPU interpreter runs bf16 only with the ml_dtypes package (pip install ml_dtypes)"
            ) from None
        ty = _Ty(name, "f", 16, ml_dtypes.bfloat16)
    else:
        raise InterpreterUnsupportedError(f"the CPU interpreter does not support the type '{name}'")
    _TY_CACHE[name] = ty
    return ty


def _is_memref(t) -> bool:
    return str(t).startswith("memref<")


class _MemTy:
    """A memref type: element type, static dims (``None`` for ``?``) and address space."""

    __slots__ = ("elem", "dims", "space")

    def __init__(self, t):
        mt = ir.MemRefType(t)
        self.elem = _scalar_ty(str(mt.element_type))
        dyn = ir.ShapedType.get_dynamic_size()
        self.dims = tuple(None if d == dyn else int(d) for d in mt.shape)
        ms = mt.memory_space
        s = "" if ms is None else str(ms)
        if "workgroup" in s or s.strip() == "3":
            self.space = "workgroup"
        elif "private" in s or s.strip() == "5":
            self.space = "private"
        else:
            self.space = "global"
        layout = str(mt.layout)
        if "strided" in layout and layout.replace(" ", "") not in ("strided<[1]>", "strided<[1],offset:0>"):
            raise InterpreterUnsupportedError(f"the CPU interpreter does not support the memref layout of {t}")

    @property
    def size(self) -> int:
        return int(np.prod([d for d in self.dims], dtype=np.int64)) if self.dims else 1


# ------------------------------------------------------------------------------------------------
# integer helpers (signless values stored in the signed dtype, bool for i1)


def _s(x):
    """A 0-d array to a numpy scalar (np.where and friends return 0-d arrays for scalar inputs)."""
    if type(x) is np.ndarray and x.ndim == 0:
        return x[()]
    return x


def _sv(x, ty: _Ty):
    """Signed view of an integer value (``i1``: ``True`` is -1)."""
    if ty.bits == 1:
        return -(np.asarray(x).astype(np.int8)) if type(x) is np.ndarray else np.int8(-1 if x else 0)
    return x


def _uv(x, ty: _Ty):
    """Unsigned view of an integer value."""
    if ty.bits == 1:
        return x.astype(np.uint8)
    return x.view(ty.udtype)


def _back(r, ty: _Ty):
    """A result computed in a (same-width) signed/unsigned or wider type back to ``ty``'s storage."""
    if ty.bits == 1:
        return (r & 1).astype(np.bool_)
    if r.dtype == ty.dtype:
        return r
    if r.dtype.itemsize == ty.dtype.itemsize:
        return r.view(ty.dtype)
    return r.astype(ty.dtype)


def _from_unsigned(u, ty: _Ty):
    """Zero-extend/truncate an unsigned-view value to ``ty``."""
    if ty.bits == 1:
        return (u & 1).astype(np.bool_)
    return u.astype(ty.udtype).view(ty.dtype)


def _int_const(v: int, ty: _Ty):
    """A Python int as a value of integer type ``ty`` (wrapping modulo 2**bits)."""
    if ty.bits == 1:
        return np.bool_(v & 1)
    v &= (1 << ty.bits) - 1
    if v >= 1 << (ty.bits - 1):
        v -= 1 << ty.bits
    return ty.dtype.type(v)


def _dense_elements(attr, ty: _Ty, n: int) -> list:
    """The ``n`` elements of a non-splat ``DenseElementsAttr`` of element type ``ty``. The bindings
    read integers and f16/f32/f64 as a buffer but not bf16, whose elements are read from the
    attribute's text: a decimal, or ``0x...`` for the bit pattern (MLIR prints a value that does not
    round-trip as decimal that way)."""
    try:
        return list(np.array(attr).reshape(-1)[:n])
    except Exception:  # the bindings' buffer has no format for this element type
        pass
    body = re.fullmatch(r"dense<\[(.*)\]>\s*:.*", str(attr), re.S)
    if body is None:
        raise InterpreterUnsupportedError(f"the CPU interpreter cannot read the constant {attr}")
    out = []
    for tok in body.group(1).split(","):
        tok = tok.strip()
        if tok.lower().startswith("0x"):
            bits = np.dtype(f"u{np.dtype(ty.dtype).itemsize}")
            out.append(np.array([int(tok, 16)], bits).view(ty.dtype)[0])
        else:
            out.append(float(tok))
    return out


def _nonzero_divisor(b):
    bz = b == 0
    return b | bz.astype(b.dtype), bz


def _divsi(x, y, ty):
    a, b = _sv(x, ty), _sv(y, ty)
    bs, bz = _nonzero_divisor(b)
    q = a // bs
    r = a - q * bs
    q = q + ((r != 0) & ((a < 0) != (bs < 0))).astype(q.dtype)
    return _back(q * (~bz).astype(q.dtype), ty), q, bs, bz, a


def _op_divsi(x, y, ty):
    return _divsi(x, y, ty)[0]


def _op_remsi(x, y, ty):
    _, q, bs, bz, a = _divsi(x, y, ty)
    return _back((a - q * bs) * (~bz).astype(a.dtype), ty)


def _quotient(a, b, ty, fn):
    """``fn(a, b)`` lane by lane (``a``, ``b``: the signed or unsigned views), 0 where ``b == 0``:
    integer division by zero is undefined on the GPU and gives 0 here, never a numpy error."""
    bs, bz = _nonzero_divisor(b)
    q = fn(a, bs)
    return _back(q * (~bz).astype(q.dtype), ty)


def _op_divui(x, y, ty):
    return _quotient(_uv(x, ty), _uv(y, ty), ty, lambda a, b: a // b)


def _op_remui(x, y, ty):
    return _quotient(_uv(x, ty), _uv(y, ty), ty, lambda a, b: a % b)


def _op_floordivsi(x, y, ty):
    return _quotient(_sv(x, ty), _sv(y, ty), ty, lambda a, b: a // b)


def _ceil_div(a, b):
    q = a // b
    return q + ((a - q * b) != 0).astype(q.dtype)


def _op_ceildivsi(x, y, ty):
    return _quotient(_sv(x, ty), _sv(y, ty), ty, _ceil_div)


def _op_ceildivui(x, y, ty):
    return _quotient(_uv(x, ty), _uv(y, ty), ty, _ceil_div)


def _shift_amount(y, ty):
    s = _uv(y, ty)
    ok = s < ty.bits
    return (s * ok.astype(s.dtype)).astype(ty.sdtype), ok


def _op_shli(x, y, ty):
    sa, ok = _shift_amount(y, ty)
    return _back(np.left_shift(_sv(x, ty), sa) * ok.astype(ty.sdtype), ty)


def _op_shrsi(x, y, ty):
    # PTX shr.sN clamps the shift amount to N: amounts >= N fill with the sign bit
    s = _uv(y, ty)
    sa = np.minimum(s, ty.bits - 1).astype(ty.sdtype)
    return _back(np.right_shift(_sv(x, ty), sa), ty)


def _op_shrui(x, y, ty):
    sa, ok = _shift_amount(y, ty)
    u = _uv(x, ty)
    return _back(np.right_shift(u, sa.astype(u.dtype)) * ok.astype(u.dtype), ty)


def _wrap_signed(fn):
    def op(x, y, ty):
        return _back(fn(_sv(x, ty), _sv(y, ty)), ty)
    return op


def _wrap_unsigned(fn):
    def op(x, y, ty):
        return _back(fn(_uv(x, ty), _uv(y, ty)), ty)
    return op


def _plain_or_i1(fn):
    """add/sub/mul: native wrapping in the signed dtype; i1 via int8 and & 1."""
    def op(x, y, ty):
        if ty.bits == 1:
            return _back(fn(_sv(x, ty), _sv(y, ty)), ty)
        return fn(x, y)
    return op


_INT_BINOPS = {
    "arith.addi": _plain_or_i1(np.add),
    "arith.subi": _plain_or_i1(np.subtract),
    "arith.muli": _plain_or_i1(np.multiply),
    "arith.andi": lambda x, y, ty: np.bitwise_and(x, y),
    "arith.ori": lambda x, y, ty: np.bitwise_or(x, y),
    "arith.xori": lambda x, y, ty: np.bitwise_xor(x, y),
    "arith.divsi": _op_divsi,
    "arith.remsi": _op_remsi,
    "arith.divui": _op_divui,
    "arith.remui": _op_remui,
    "arith.floordivsi": _op_floordivsi,
    "arith.ceildivsi": _op_ceildivsi,
    "arith.ceildivui": _op_ceildivui,
    "arith.shli": _op_shli,
    "arith.shrsi": _op_shrsi,
    "arith.shrui": _op_shrui,
    "arith.maxsi": _wrap_signed(np.maximum),
    "arith.minsi": _wrap_signed(np.minimum),
    "arith.maxui": _wrap_unsigned(np.maximum),
    "arith.minui": _wrap_unsigned(np.minimum),
}


def _zeros_ordered(base, smaller: bool):
    """``base`` (a numpy max/min ufunc) with ``-0.0 < +0.0``: where the operands compare equal the
    result is the one of the wanted sign (``smaller``: the negative one), so a zero result does
    not depend on the operands' order (numpy returns its first zero, and its scalar and array paths
    differ). NaN handling is ``base``'s: ``np.maximum`` propagates a NaN (``arith.maximumf``),
    ``np.fmax`` ignores one (IEEE maxNum, ``arith.maxnumf``, like CUDA ``fmaxf``)."""

    def op(a, b):
        neg = np.signbit(a)
        return np.where(a == b, np.where(neg, a, b) if smaller else np.where(neg, b, a), base(a, b))

    return op


_maximumf, _minimumf = _zeros_ordered(np.maximum, False), _zeros_ordered(np.minimum, True)
_maxnumf, _minnumf = _zeros_ordered(np.fmax, False), _zeros_ordered(np.fmin, True)


_FLOAT_BINOPS = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.remf": np.fmod,
    "arith.maximumf": _maximumf,
    "arith.minimumf": _minimumf,
    "arith.maxnumf": _maxnumf,
    "arith.minnumf": _minnumf,
    "math.powf": np.power,
    "math.atan2": np.arctan2,
    "math.copysign": np.copysign,
}

# arith.cmpi predicates, by their enum value (eq ne slt sle sgt sge ult ule ugt uge)
_CMPI = [
    ("eq", None, np.equal), ("ne", None, np.not_equal),
    ("slt", "s", np.less), ("sle", "s", np.less_equal), ("sgt", "s", np.greater),
    ("sge", "s", np.greater_equal),
    ("ult", "u", np.less), ("ule", "u", np.less_equal), ("ugt", "u", np.greater),
    ("uge", "u", np.greater_equal),
]


def _uno(a, b):
    return np.isnan(a) | np.isnan(b)


# arith.cmpf predicates, by their enum value
_CMPF = [
    lambda a, b: np.zeros(np.broadcast(a, b).shape, np.bool_),  # false
    np.equal,                                                   # oeq
    np.greater,                                                 # ogt
    np.greater_equal,                                           # oge
    np.less,                                                    # olt
    np.less_equal,                                              # ole
    lambda a, b: np.less(a, b) | np.greater(a, b),              # one
    lambda a, b: ~_uno(a, b),                                   # ord
    lambda a, b: np.equal(a, b) | _uno(a, b),                   # ueq
    lambda a, b: ~np.less_equal(a, b),                          # ugt
    lambda a, b: ~np.less(a, b),                                # uge
    lambda a, b: ~np.greater_equal(a, b),                       # ult
    lambda a, b: ~np.greater(a, b),                             # ule
    np.not_equal,                                               # une
    _uno,                                                       # uno
    lambda a, b: np.ones(np.broadcast(a, b).shape, np.bool_),   # true
]


def _f64_via(fn):
    """A float function numpy lacks, computed in float64 and rounded to the operand's dtype."""
    vec = np.frompyfunc(fn, 1, 1)

    def op(x):
        r = vec(np.asarray(x, dtype=np.float64)).astype(np.float64)
        return _s(r.astype(x.dtype))
    return op


def _round_half_away(x):
    t = np.trunc(x)
    return np.where(np.abs(x - t) >= x.dtype.type(0.5), t + np.sign(x), t).astype(x.dtype)


def _rsqrt(x):
    """1/sqrt(x) rounded once to ``x``'s type: computed in float64 (exact enough that rounding the
    result is rounding the true value, except in rare double-rounding ties), as the GPU rounds
    ``rsqrt.approx.f32`` once to f16/bf16. ``1 / sqrt(x)`` in ``x``'s type rounds twice: for f16
    and bf16 about a quarter of all inputs came out one unit in the last place off (found by a
    fuzzing trial)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        r = 1.0 / np.sqrt(np.asarray(x, dtype=np.float64))
    return _s(r.astype(x.dtype))


_FLOAT_UNOPS = {
    "arith.negf": np.negative,
    "math.absf": np.abs,
    "math.exp": np.exp, "math.exp2": np.exp2, "math.expm1": np.expm1,
    "math.log": np.log, "math.log2": np.log2, "math.log10": np.log10, "math.log1p": np.log1p,
    "math.sqrt": np.sqrt, "math.rsqrt": _rsqrt, "math.cbrt": np.cbrt,
    "math.sin": np.sin, "math.cos": np.cos, "math.tan": np.tan,
    "math.asin": np.arcsin, "math.acos": np.arccos, "math.atan": np.arctan,
    "math.sinh": np.sinh, "math.cosh": np.cosh, "math.tanh": np.tanh,
    "math.asinh": np.arcsinh, "math.acosh": np.arccosh, "math.atanh": np.arctanh,
    "math.floor": np.floor, "math.ceil": np.ceil, "math.trunc": np.trunc,
    "math.round": _round_half_away, "math.roundeven": np.rint,
    "math.erf": _f64_via(math.erf), "math.erfc": _f64_via(math.erfc),
}

_FLOAT_PREDICATES = {
    "math.isnan": np.isnan,
    "math.isinf": np.isinf,
    "math.isfinite": np.isfinite,
    "math.isnormal": lambda x: np.isfinite(x) & (np.abs(x) >= np.finfo(x.dtype).tiny),
}


def _ctpop(x, ty):
    return _back(np.bitwise_count(_uv(x, ty)).astype(ty.udtype), ty)


def _ctlz(x, ty):
    u = _uv(x, ty)
    n = np.zeros(np.shape(u), dtype=np.int64)
    v = np.array(u, copy=True)
    shift = ty.bits // 2
    while shift >= 1:  # binary search: are the top `shift` bits zero?
        top_zero = (v >> np.array(ty.bits - shift, dtype=u.dtype)) == 0
        n = n + np.where(top_zero, shift, 0)
        v = np.where(top_zero, v << np.array(shift, dtype=u.dtype), v)
        shift //= 2
    n = np.where(u == 0, ty.bits, n)
    return _s(_back(n.astype(ty.udtype), ty))


def _cttz(x, ty):
    u = _uv(x, ty)
    low = u & (~u + np.array(1, dtype=u.dtype))  # isolate the lowest set bit
    n = np.bitwise_count(low - np.array(1, dtype=u.dtype)).astype(np.int64)
    n = np.where(u == 0, ty.bits, n)
    return _s(_back(n.astype(ty.udtype), ty))


def _ipowi(x, y, ty):
    a, e = _sv(x, ty), _sv(y, ty)
    a = np.asarray(a)
    e = np.asarray(e)
    shape = np.broadcast(a, e).shape
    res = np.ones(shape, dtype=a.dtype)
    base = np.broadcast_to(a, shape).copy()
    ee = np.broadcast_to(e, shape).astype(np.int64)
    neg = ee < 0
    ue = np.where(neg, 0, ee)
    for _ in range(ty.bits):
        res = np.where(ue & 1, res * base, res)
        base = base * base
        ue = ue >> 1
    # negative exponents: 1 / a**|e| truncated toward zero
    one = a.dtype.type(1)
    inv = np.where(a == one, one, np.where(a == -one, np.where(ee & 1, -one, one), 0)).astype(a.dtype)
    return _s(_back(np.where(neg, inv, res).astype(a.dtype), ty))


def _fptoi(x, ty: _Ty, signed: bool):
    """fptosi/fptoui with the saturating semantics of PTX cvt.rzi (NaN -> 0)."""
    t = np.trunc(np.asarray(x, dtype=np.float64))
    t = np.where(np.isnan(t), 0.0, t)
    if ty.bits == 1:
        return _s(t != 0)
    if signed:
        lo, hi = -(2 ** (ty.bits - 1)), 2 ** (ty.bits - 1) - 1
        dt = ty.sdtype
    else:
        lo, hi = 0, 2 ** ty.bits - 1
        dt = ty.udtype
    over = t >= float(hi)
    under = t <= float(lo)
    safe = np.where(over | under, 0.0, t).astype(dt)
    r = np.where(over, dt.type(hi), np.where(under, dt.type(lo), safe)).astype(dt)
    return _s(_back(r, ty))


# ------------------------------------------------------------------------------------------------
# atomics


def _atomic_apply(data: np.ndarray, addr: np.ndarray, vals: np.ndarray, fn) -> np.ndarray:
    """Apply ``data[a] = fn(data[a], v)`` for each (a, v) in lane order; return the old values.

    ``fn`` is a numpy ufunc (its ``accumulate`` gives the exact sequential semantics) or ``None`` for
    ``assign``. Lanes hitting one address are serialised in lane order: for multiplicity ``m`` the
    ``k``-th lane sees the value after the first ``k - 1`` updates. Vectorised: groups of equal
    address are bucketed by ``floor(log2(m))`` and each bucket is one 2-D ``ufunc.accumulate``.
    """
    n = addr.size
    if n == 0:
        return vals[:0].copy()
    order = np.argsort(addr, kind="stable")
    sa = addr[order]
    sv = vals[order]
    newg = np.empty(n, dtype=np.bool_)
    newg[0] = True
    np.not_equal(sa[1:], sa[:-1], out=newg[1:])
    starts = np.flatnonzero(newg)
    ng = starts.size
    if ng == n:  # all addresses distinct
        old = data[addr]
        data[addr] = vals if fn is None else fn(old, vals)
        return old
    counts = np.diff(np.append(starts, n))
    gid = np.cumsum(newg) - 1
    rank = np.arange(n) - starts[gid]
    uaddr = sa[starts]
    init = data[uaddr]
    old_sorted = np.empty(n, dtype=data.dtype)
    if fn is None:
        prev = np.empty_like(sv)
        prev[1:] = sv[:-1]
        old_sorted[:] = np.where(rank == 0, init[gid], prev)
        final = sv[starts + counts - 1]
    else:
        final = np.empty(ng, dtype=data.dtype)
        bucket = np.floor(np.log2(counts)).astype(np.int64)
        lane_bucket = bucket[gid]
        row_of = np.empty(ng, dtype=np.int64)
        for b in np.unique(bucket):
            gsel = np.flatnonzero(bucket == b)
            width = 1 << (int(b) + 1)
            row_of[gsel] = np.arange(gsel.size)
            mat = np.zeros((gsel.size, width), dtype=data.dtype)
            mat[:, 0] = init[gsel]
            lsel = np.flatnonzero(lane_bucket == b)
            rows = row_of[gid[lsel]]
            cols = rank[lsel] + 1
            mat[rows, cols] = sv[lsel]
            acc = fn.accumulate(mat, axis=1, dtype=data.dtype)
            old_sorted[lsel] = acc[rows, cols - 1]
            final[gsel] = acc[np.arange(gsel.size), counts[gsel]]
    data[uaddr] = final
    old = np.empty(n, dtype=data.dtype)
    old[order] = old_sorted
    return old


# arith::AtomicRMWKind enum values -> (name, ufunc or None for assign, view: "s" | "u" | "f")
_ATOMIC_KINDS = {
    0: ("addf", np.add, "f"), 1: ("addi", np.add, "s"), 2: ("andi", np.bitwise_and, "s"),
    3: ("assign", None, "s"), 4: ("maximumf", np.maximum, "f"), 5: ("maxnumf", np.fmax, "f"),
    6: ("maxs", np.maximum, "s"), 7: ("maxu", np.maximum, "u"), 8: ("minimumf", np.minimum, "f"),
    9: ("minnumf", np.fmin, "f"), 10: ("mins", np.minimum, "s"), 11: ("minu", np.minimum, "u"),
    12: ("mulf", np.multiply, "f"), 13: ("muli", np.multiply, "s"), 14: ("ori", np.bitwise_or, "s"),
    15: ("xori", np.bitwise_xor, "s"),
}


# ------------------------------------------------------------------------------------------------
# runtime objects


class _Buf:
    """A memref value at run time.

    ``data`` is the flat storage; ``size`` the elements of one instance (the whole global buffer, one
    block's workgroup array, one thread's private array); ``base`` ``None`` (global) or an int64 lane
    array of instance offsets into ``data``; ``dims``/``strides`` give the logical (row-major) shape.
    """

    __slots__ = ("name", "kind", "data", "size", "base", "dims", "strides", "itemsize")

    def __init__(self, name, kind, data, dims, base=None):
        self.name, self.kind, self.data, self.base = name, kind, data, base
        self.dims = tuple(int(d) for d in dims)
        self.size = int(np.prod(self.dims, dtype=np.int64)) if self.dims else 1
        strides, acc = [], 1
        for d in reversed(self.dims):
            strides.append(acc)
            acc *= d
        self.strides = tuple(reversed(strides))
        self.itemsize = data.dtype.itemsize

    def describe(self) -> str:
        return {"global": "buffer", "workgroup": "workgroup buffer", "private": "private buffer"}[self.kind] + \
            f" '{self.name}'"


class _Frame:
    """Execution state of one batch of blocks."""

    __slots__ = ("env", "L", "B", "nb", "first_block", "grid", "full", "lane", "blk", "tid", "bid",
                 "lane_in_warp", "warp", "nwarps", "stats", "collect", "uninit", "index32")

    def thread_id(self, lane: int) -> int:
        return self.first_block * self.B + int(lane)


def _empty_alloc(n, dtype, uninit):
    if uninit == "poison":
        a = np.empty(n, dtype=dtype)
        if a.dtype.kind == "f":
            a.fill(np.nan)
        elif a.dtype.kind == "b":
            a.fill(True)
        else:
            a.view(np.uint8).fill(0xA5)
        return a
    return np.zeros(n, dtype=dtype)


def _access(fr: _Frame, mask, buf: _Buf, idxs, what: str):
    """Active lanes and indices of a memory access; raises on an out-of-bounds active lane.

    Returns ``(act, rel)``: ``act`` is ``None`` (every lane active), or an int64 array of active
    lanes (possibly empty); ``rel`` the element offsets inside the instance, a scalar (uniform) or
    an array aligned with ``act`` (or with all lanes when ``act`` is ``None``).
    """
    if mask is fr.full:
        act = None
    else:
        act = np.flatnonzero(mask)
        if act.size == 0:
            return act, None
    sel = []
    for i in idxs:
        if type(i) is np.ndarray and act is not None:
            i = i[act]
        sel.append(i)
    if len(sel) == 1:
        rel = sel[0]
        bad = (rel < 0) | (rel >= buf.size)
        if type(bad) is np.ndarray:
            if bad.any():
                k = int(np.argmax(bad))
                _oob(fr, buf, what, k if act is None else act[k], int(rel[k]))
        elif bad:
            _oob(fr, buf, what, 0 if act is None else act[0], int(rel))
    else:
        bad = np.zeros((), dtype=np.bool_)
        for d, i in zip(buf.dims, sel):
            bad = bad | (i < 0) | (i >= d)
        if bad.any():
            k = int(np.argmax(bad)) if bad.ndim else 0
            lane = k if act is None else act[k]
            index = tuple(int(i[k]) if type(i) is np.ndarray else int(i) for i in sel)
            _oob(fr, buf, what, lane, index)
        rel = 0
        for st, i in zip(buf.strides, sel):
            rel = rel + i * st
    return act, rel


def _check_store_race(fr, buf, act, addr, rel, val) -> None:
    """Several lanes storing to one address in one step is a data race (the GPU keeps an unspecified
    value, and a read-modify-write loses updates): raise ``KerncRuntimeError`` naming the buffer, two
    threads and the index. This catches, e.g., duplicate indices in ``write/add indexed(I)`` (use
    ``atomic(I)`` or ``shared_sum(I)`` to accumulate)."""
    lanes = (np.arange(fr.L) if act is None else act)
    if type(addr) is not np.ndarray:
        if lanes.size > 1 and (type(val) is np.ndarray or act is None or act.size > 1):
            _race(fr, buf, lanes[0], lanes[1], rel if type(rel) is not np.ndarray else rel[0])
        return
    if addr.size < 2:
        return
    order = np.argsort(addr, kind="stable")
    sa = addr[order]
    dup = np.flatnonzero(sa[1:] == sa[:-1])
    if dup.size:
        k = int(dup[0])
        index = rel[order[k]] if type(rel) is np.ndarray else rel
        _race(fr, buf, lanes[order[k]], lanes[order[k + 1]], index)


#: index ops whose result can leave int32 although their operands are in it (the GPU's 32-bit
#: index arithmetic wraps there; see :func:`_checked_index32`)
_INDEX_WRAPS = ("arith.addi", "arith.subi", "arith.muli", "arith.shli")
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _checked_index32(f, r, o):
    """``f`` (the closure of op ``o``, result in slot ``r``) followed, in a run whose launch the
    GPU would make with 32-bit ``index`` arithmetic (``Interpreter.run(index_bits=32)``), by a check
    that no active lane's result left int32: the interpreter computes ``index`` values exactly
    (64 bits), the 32-bit PTX would wrap them, and the two devices would disagree silently."""
    loc = str(o.location)

    def g(fr, mask):
        f(fr, mask)
        if not fr.index32:
            return
        v = fr.env[r]
        if type(v) is np.ndarray:
            a = v if mask is fr.full else v[mask]
            if not a.size:
                return
            lo, hi = int(a.min()), int(a.max())
        else:
            if mask is not fr.full and not mask.any():
                return
            lo = hi = int(v)
        if lo < _INT32_MIN or hi > _INT32_MAX:
            bad = hi if hi > _INT32_MAX else lo
            raise KerncRuntimeError(
                f"index arithmetic gives {bad}, outside int32 (at {loc}): this launch's sizes let "
                "the GPU run it with 32-bit index arithmetic, which would wrap it; compute such "
                "values in i64 and convert the in-range result with index(...)")
    return g


def _race(fr, buf, lane_a, lane_b, index):
    raise KerncRuntimeError(
        f"data race on {buf.describe()}: threads {fr.thread_id(int(lane_a))} and "
        f"{fr.thread_id(int(lane_b))} both store to index {int(index)} in the same step "
        f"(indexed/strided writes need distinct targets; use atomic(I) or shared_sum(I) to accumulate)"
    )


def _oob(fr, buf, what, lane, index):
    verb = {"load": ("load from", "read"), "store": ("store to", "wrote"),
            "atomic": ("atomic_rmw on", "accessed")}[what]
    if isinstance(index, tuple):
        shape = f"has shape {buf.dims}"
    else:
        shape = f"has {buf.size} elements"
    where = ""
    if buf.kind == "workgroup":
        where = f" (workgroup memory of block {fr.first_block + int(lane) // fr.B})"
    raise KerncRuntimeError(
        f"out-of-bounds {verb[0]} {buf.describe()}{where}: thread {fr.thread_id(lane)} {verb[1]} "
        f"index {index}, buffer {shape}")


def _addr(fr, buf, act, rel):
    """Flat addresses into ``buf.data`` of the accessed lanes (an array, or a scalar if uniform)."""
    if buf.base is None:
        return rel
    base = buf.base if act is None else buf.base[act]
    return base + rel


def _count_vector(fr: _Frame, buf: _Buf, act, rel, n: int, kind: str):
    """Statistics of one ``n``-element vector access per lane: one request per warp; the sectors are
    those the lanes' ``n * itemsize``-byte ranges touch."""
    st = fr.stats
    if buf.kind != "global":
        _count(fr, buf, act, rel, kind)
        return
    warps = fr.warp if act is None else fr.warp[act]
    nreq = fr.nwarps if act is None else _count_runs(warps)
    if type(rel) is np.ndarray:
        lo = (rel * buf.itemsize) // SECTOR_BYTES
        hi = ((rel + n) * buf.itemsize - 1) // SECTOR_BYTES
        keys = np.stack([lo, hi], axis=1).reshape(-1)
        nsec = int(np.unique((np.repeat(warps, 2) << _KEY_SHIFT) | keys).size)
    else:
        nsec = nreq
    if kind == "load":
        st.global_load_requests += nreq
        st.global_load_sectors += nsec
    else:
        st.global_store_requests += nreq
        st.global_store_sectors += nsec


def _count(fr: _Frame, buf: _Buf, act, rel, kind: str):
    """Update the memory statistics for one executed memory op (``kind``: load/store/atomic)."""
    st = fr.stats
    if buf.kind == "private":
        return
    if act is None:
        warps = fr.warp
        nreq = fr.nwarps
    else:
        warps = fr.warp[act]
        nreq = _count_runs(warps)
    if buf.kind == "global":
        if kind == "atomic":
            st.global_atomics += int(warps.size)
            return
        if type(rel) is np.ndarray:
            nsec = _count_distinct_pairs(warps, (rel * buf.itemsize) // SECTOR_BYTES)
        else:
            nsec = nreq
        if kind == "load":
            st.global_load_requests += nreq
            st.global_load_sectors += nsec
        else:
            st.global_store_requests += nreq
            st.global_store_sectors += nsec
        return
    # workgroup memory
    st.shared_requests += nreq
    if type(rel) is not np.ndarray:
        return  # every lane touches the same word(s): broadcast
    isz = buf.itemsize
    if isz <= BANK_BYTES:
        words = (rel * isz) // BANK_BYTES
        w = warps
    else:
        # an 8- or 16-byte access is served in 2 or 4 phases of 16 or 8 lanes (128 bytes each):
        # a bank conflict is a second word in one bank within a phase, not across phases
        k = isz // BANK_BYTES
        lanes = fr.lane_in_warp if act is None else fr.lane_in_warp[act]
        phase = warps * k + lanes // (WARP_SIZE // k)
        words = (rel[:, None] * k + np.arange(k)).reshape(-1)
        w = np.repeat(phase, k)
    st.shared_bank_conflicts += _bank_conflicts(w, words)


# ------------------------------------------------------------------------------------------------
# translation of a gpu.func into a plan


def _run_ops(ops, fr, mask):
    for f in ops:
        f(fr, mask)


class _Plan:
    """The translated form of one kernel (built once, run many times)."""

    def __init__(self):
        self.name = ""
        self.params = []          # per argument: ("scalar", _Ty) or ("buffer", _MemTy, written)
        self.arg_slots = []
        self.wg = []              # (slot, _MemTy, name)
        self.priv = []            # (slot, _MemTy, name)
        self.body = []
        self.nslots = 0
        self.sig_names = None
        self.signature = None
        self.known_block = None
        self.private_bytes_per_lane = 0
        self.wg_bytes_per_block = 0


class _Translator:
    def __init__(self, func_op):
        self.fop = func_op
        self.slots = {}
        self.nslots = 0
        self.written = set()      # slots of memrefs stored/atomically updated
        self.nalloca = 0
        self.private_bytes = 0

    # -- SSA slots
    def define(self, value) -> int:
        s = self.nslots
        self.nslots += 1
        self.slots[value] = s
        return s

    def use(self, value) -> int:
        try:
            return self.slots[value]
        except KeyError:
            raise InterpreterUnsupportedError(f"value used before definition: {value}") from None

    def unsupported(self, o, what=None):
        raise InterpreterUnsupportedError(
            f"the CPU interpreter does not support {what or repr(o.name)} (at {o.location})")

    def ty(self, t, o=None) -> _Ty:
        s = str(t)
        if s.startswith(("vector<", "tensor<")):
            raise InterpreterUnsupportedError(
                f"the CPU interpreter does not support vector/tensor values ({s})"
                + (f" (at {o.location})" if o is not None else ""))
        return _scalar_ty(s)

    # -- blocks
    def block(self, block):
        """Translate a block: its ops (without terminator) and the terminator's operand slots."""
        ops = []
        term = None
        for opv in block.operations:
            o = opv.operation
            if o.name in ("scf.yield", "scf.condition", "gpu.return", "func.return"):
                term = o
                break
            f = self.op(o)
            if f is not None:
                ops.append(f)
        tslots = [self.use(v) for v in term.operands] if term is not None else []
        return ops, tslots

    def op(self, o):
        name = o.name
        h = _HANDLERS.get(name)
        if h is not None:
            return h(self, o)
        if name in _INT_BINOPS or name in _FLOAT_BINOPS:
            return self.binop(o)
        if name in _FLOAT_UNOPS:
            return self.float_unop(o, _FLOAT_UNOPS[name])
        if name in _FLOAT_PREDICATES:
            return self.float_unop(o, _FLOAT_PREDICATES[name])
        self.unsupported(o)

    # -- generic elementwise
    def binop(self, o):
        ty = self.ty(o.results[0].type, o)
        a, b = self.use(o.operands[0]), self.use(o.operands[1])
        r = self.define(o.results[0])
        name = o.name
        if name in _INT_BINOPS:
            if ty.kind != "i":
                self.unsupported(o, f"{name} on {ty}")
            fn = _INT_BINOPS[name]

            def f(fr, mask):
                env = fr.env
                env[r] = _s(fn(env[a], env[b], ty))
            if ty.name == "index" and name in _INDEX_WRAPS:
                return _checked_index32(f, r, o)
        else:
            if ty.kind != "f":
                self.unsupported(o, f"{name} on {ty}")
            fn = _FLOAT_BINOPS[name]

            def f(fr, mask):
                env = fr.env
                env[r] = _s(fn(env[a], env[b]))
        return f

    def float_unop(self, o, fn):
        ty = self.ty(o.operands[0].type, o)
        if ty.kind != "f":
            self.unsupported(o, f"{o.name} on {ty}")
        a = self.use(o.operands[0])
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            env[r] = _s(fn(env[a]))
        return f

    def int_unop(self, o, fn):
        ty = self.ty(o.operands[0].type, o)
        a = self.use(o.operands[0])
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            env[r] = _s(fn(env[a], ty))
        return f

    def unary(self, o, fn):
        """An op with one operand, one result, ``fn(value) -> value``."""
        a = self.use(o.operands[0])
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            env[r] = _s(fn(env[a]))
        return f

    # -- arith
    def c_constant(self, o):
        attr = o.attributes["value"]
        rt = str(o.results[0].type)
        if rt.startswith("vector<"):
            return self._vector_constant(o, attr)
        if rt.startswith("tensor<"):
            self.unsupported(o, f"arith.constant of type {rt}")
        ty = self.ty(o.results[0].type, o)
        if isinstance(attr, ir.BoolAttr):
            v = np.bool_(attr.value)
        elif isinstance(attr, ir.IntegerAttr):
            v = _int_const(int(attr.value), ty)
        elif isinstance(attr, ir.FloatAttr):
            v = ty.dtype.type(attr.value)
        elif isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
            sp = attr.get_splat_value()
            v = ty.dtype.type(sp.value) if ty.kind == "f" else _int_const(int(sp.value), ty)
        else:
            self.unsupported(o, f"arith.constant {attr}")
        r = self.define(o.results[0])

        def f(fr, mask):
            fr.env[r] = v
        return f

    def c_poison(self, o):
        ty = self.ty(o.results[0].type, o)
        v = ty.zero()
        r = self.define(o.results[0])

        def f(fr, mask):
            fr.env[r] = v
        return f

    def c_cmpi(self, o):
        ty = self.ty(o.operands[0].type, o)
        pred = int(o.attributes["predicate"].value)
        _, view, fn = _CMPI[pred]
        a, b = self.use(o.operands[0]), self.use(o.operands[1])
        r = self.define(o.results[0])
        if view is None:
            def f(fr, mask):
                env = fr.env
                env[r] = fn(env[a], env[b])
        else:
            conv = _sv if view == "s" else _uv

            def f(fr, mask):
                env = fr.env
                env[r] = fn(conv(env[a], ty), conv(env[b], ty))
        return f

    def c_cmpf(self, o):
        self.ty(o.operands[0].type, o)
        fn = _CMPF[int(o.attributes["predicate"].value)]
        a, b = self.use(o.operands[0]), self.use(o.operands[1])
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            env[r] = _s(fn(env[a], env[b]))
        return f

    def c_select(self, o):
        c, a, b = (self.use(v) for v in o.operands)
        if _is_memref(o.results[0].type):
            self.unsupported(o, "arith.select of memrefs")
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            cv = env[c]
            if type(cv) is np.ndarray:
                env[r] = np.where(cv, env[a], env[b])
            else:
                env[r] = env[a] if cv else env[b]
        return f

    def c_cast(self, o):
        name = o.name
        src = self.ty(o.operands[0].type, o)
        dst = self.ty(o.results[0].type, o)
        if name == "arith.extsi":
            def fn(x):
                return _sv(x, src).astype(dst.dtype)
        elif name == "arith.extui":
            def fn(x):
                return _from_unsigned(_uv(x, src), dst)
        elif name == "arith.trunci":
            def fn(x):
                return (x & 1).astype(np.bool_) if dst.bits == 1 else x.astype(dst.dtype)
        elif name == "arith.index_cast":
            def fn(x):
                if dst.bits == 1:
                    return (x & 1).astype(np.bool_)
                return _sv(x, src).astype(dst.dtype)
        elif name == "arith.index_castui":
            def fn(x):
                if dst.bits == 1:
                    return (x & 1).astype(np.bool_)
                return _from_unsigned(_uv(x, src), dst)
        elif name == "arith.sitofp":
            def fn(x):
                return _round_to(_sv(x, src), dst.dtype)
        elif name == "arith.uitofp":
            def fn(x):
                return _round_to(_uv(x, src), dst.dtype)
        elif name == "arith.fptosi":
            def fn(x):
                return _fptoi(x, dst, True)
        elif name == "arith.fptoui":
            def fn(x):
                return _fptoi(x, dst, False)
        elif name in ("arith.extf", "arith.truncf"):
            def fn(x):
                return _round_to(x, dst.dtype)
        elif name == "arith.bitcast":
            if src.bits != dst.bits:
                self.unsupported(o, f"arith.bitcast {src} -> {dst}")
            if dst.bits == 1:
                def fn(x):
                    return x
            else:
                def fn(x):
                    return x.view(dst.dtype)
        else:
            self.unsupported(o)
        f = self.unary(o, fn)
        if dst.name == "index" and src.bits > 32 and name in ("arith.index_cast", "arith.index_castui"):
            return _checked_index32(f, self.use(o.results[0]), o)
        return f

    # -- math on integers / special
    def c_math_int(self, o):
        fn = {"math.absi": lambda x, ty: _back(np.abs(_sv(x, ty)), ty),
              "math.ctpop": _ctpop, "math.ctlz": _ctlz, "math.cttz": _cttz}[o.name]
        return self.int_unop(o, fn)

    def c_fma(self, o):
        """``math.fma``: correctly rounded, one rounding as PTX ``fma.rn`` (``backend/exact_fma.py``)."""
        dt = self.ty(o.results[0].type, o).dtype
        a, b, c = (self.use(v) for v in o.operands)
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            env[r] = exact_fma.fma(env[a], env[b], env[c], dt)
        return f

    def c_fpowi(self, o):
        ty = self.ty(o.results[0].type, o)
        a, b = self.use(o.operands[0]), self.use(o.operands[1])
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            env[r] = _s(np.power(env[a], np.asarray(env[b]).astype(ty.dtype)))
        return f

    def c_ipowi(self, o):
        ty = self.ty(o.results[0].type, o)
        a, b = self.use(o.operands[0]), self.use(o.operands[1])
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            env[r] = _ipowi(env[a], env[b], ty)
        return f

    def c_sincos(self, o):
        a = self.use(o.operands[0])
        r0, r1 = self.define(o.results[0]), self.define(o.results[1])

        def f(fr, mask):
            env = fr.env
            env[r0] = np.sin(env[a])
            env[r1] = np.cos(env[a])
        return f

    # -- gpu ids
    def _dim(self, o):
        s = str(o.attributes["dimension"])  # "#gpu<dim x>"
        d = s.strip().rstrip(">").split()[-1]
        if d not in ("x", "y", "z"):
            self.unsupported(o, f"{o.name} dimension {s}")
        return d

    def c_gpu_id(self, o):
        name = o.name
        r = self.define(o.results[0])
        d = "x" if name in ("gpu.lane_id", "gpu.subgroup_size") else self._dim(o)
        if d != "x":
            v = np.int64(1) if name in ("gpu.block_dim", "gpu.grid_dim") else np.int64(0)

            def f(fr, mask):
                fr.env[r] = v
        elif name == "gpu.thread_id":
            def f(fr, mask):
                fr.env[r] = fr.tid
        elif name == "gpu.block_id":
            def f(fr, mask):
                fr.env[r] = fr.bid
        elif name == "gpu.block_dim":
            def f(fr, mask):
                fr.env[r] = np.int64(fr.B)
        elif name == "gpu.grid_dim":
            def f(fr, mask):
                fr.env[r] = np.int64(fr.grid)
        elif name == "gpu.lane_id":
            def f(fr, mask):
                fr.env[r] = fr.lane_in_warp
        elif name == "gpu.global_id":
            def f(fr, mask):
                fr.env[r] = fr.bid * np.int64(fr.B) + fr.tid
        elif name == "gpu.subgroup_size":
            def f(fr, mask):
                fr.env[r] = np.int64(WARP_SIZE)
        else:
            self.unsupported(o)
        return f

    def c_fence(self, o):
        """``llvm.fence``: a no-op here -- every store is visible to every later op, since the
        interpreter runs blocks in order (batches in sequence, lanes of a batch in lockstep)."""
        return lambda fr, mask: None

    def c_barrier(self, o):
        def f(fr, mask):
            if mask is fr.full:
                return
            counts = mask.reshape(fr.nb, fr.B).sum(axis=1)
            bad = (counts != 0) & (counts != fr.B)
            if bad.any():
                k = int(np.argmax(bad))
                raise KerncRuntimeError(
                    f"barrier in divergent control flow: in block {fr.first_block + k}, "
                    f"{int(counts[k])} of {fr.B} threads reached gpu.barrier (at {loc}) and the "
                    "others did not (a barrier must be reached by all threads of a block or none)")
        loc = str(o.location)
        return f

    def c_shuffle(self, o):
        mode = str(o.attributes["mode"]).strip().rstrip(">").split()[-1]
        if mode not in ("xor", "down", "up", "idx"):
            self.unsupported(o, f"gpu.shuffle mode {mode}")
        v, off, wd = (self.use(x) for x in o.operands)
        r0, r1 = self.define(o.results[0]), self.define(o.results[1])
        loc = str(o.location)

        def f(fr, mask):
            env = fr.env
            lane = fr.lane_in_warp
            b = np.asarray(env[off]).astype(np.int64) & 31
            w = np.asarray(env[wd]).astype(np.int64)
            if mode == "xor":
                j = lane ^ b
                valid = j <= w - 1
            elif mode == "down":
                j = lane + b
                valid = j <= w - 1
            elif mode == "up":
                j = lane - b
                valid = j >= WARP_SIZE - w
            else:
                j = np.broadcast_to(b, lane.shape)
                valid = j <= w - 1
            valid = valid & (j >= 0) & (j < WARP_SIZE)
            src_tid = fr.tid - lane + j
            valid = valid & (src_tid < fr.B)
            if mask is not fr.full:
                # shfl.sync: every lane of the member mask (lanes < width) must execute it together
                warp_active = np.bincount(fr.warp, weights=mask, minlength=fr.nwarps) > 0
                missing = ~mask & warp_active[fr.warp] & (lane < w)
                if missing.any():
                    k = int(np.argmax(missing))
                    raise KerncRuntimeError(
                        f"gpu.shuffle in divergent control flow (at {loc}): thread {fr.thread_id(k)} "
                        f"(lane {int(lane[k])} of its warp) did not reach the shuffle that other lanes of "
                        "its warp executed; all lanes below the shuffle width must take part")
            val = env[v]
            if type(val) is np.ndarray:
                src = np.where(valid, fr.lane - lane + j, fr.lane)
                env[r0] = val[src]
            else:
                env[r0] = val
            env[r1] = valid
        return f

    # -- memref
    def c_load(self, o):
        m = self.use(o.operands[0])
        idx = [self.use(v) for v in o.operands[1:]]
        ty = self.ty(o.results[0].type, o)
        zero = ty.zero()
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            buf = env[m]
            act, rel = _access(fr, mask, buf, [env[i] for i in idx], "load")
            if act is not None and act.size == 0:
                env[r] = zero
                return
            if fr.collect:
                _count(fr, buf, act, rel, "load")
            addr = _addr(fr, buf, act, rel)
            if type(addr) is not np.ndarray:
                env[r] = buf.data[addr]
                return
            vals = buf.data[addr]
            if act is None:
                env[r] = vals
            else:
                out = np.zeros(fr.L, dtype=vals.dtype)
                out[act] = vals
                env[r] = out
        return f

    # -- 16-byte vector accesses: a vector<n x T> value is a tuple of n lane arrays (or scalars)
    def _vector_ty(self, t, o):
        m = re.fullmatch(r"vector<(\d+)x(\w+)>", str(t))
        if not m:
            self.unsupported(o, f"vector type {t}")
        return int(m.group(1)), _scalar_ty(m.group(2))

    def c_vector_load(self, o):
        """``vector.load``: ``n`` consecutive elements per lane, one memory request per warp."""
        m = self.use(o.operands[0])
        idx = [self.use(v) for v in o.operands[1:]]
        n, ety = self._vector_ty(o.results[0].type, o)
        zero = ety.zero()
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            buf = env[m]
            first = [env[i] for i in idx]
            act, rel = _access(fr, mask, buf, first, "load")
            if act is not None and act.size == 0:
                env[r] = (zero,) * n
                return
            _access(fr, mask, buf, [first[0] + (n - 1)], "load")
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

    def c_vector_store(self, o):
        """``vector.store``: ``n`` consecutive elements per lane, one memory request per warp."""
        v = self.use(o.operands[0])
        m = self.use(o.operands[1])
        self.written.add(m)
        idx = [self.use(x) for x in o.operands[2:]]
        n, _ = self._vector_ty(o.operands[0].type, o)

        def f(fr, mask):
            env = fr.env
            buf = env[m]
            first = [env[i] for i in idx]
            act, rel = _access(fr, mask, buf, first, "store")
            if act is not None and act.size == 0:
                return
            _access(fr, mask, buf, [first[0] + (n - 1)], "store")
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

    def c_vector_extract(self, o):
        """``vector.extract`` at a static position."""
        v = self.use(o.operands[0])
        if len(o.operands) > 1:
            self.unsupported(o, "vector.extract at a dynamic position")
        pos = list(ir.DenseI64ArrayAttr(o.attributes["static_position"]))
        if len(pos) != 1:
            self.unsupported(o, "vector.extract of a multi-dimensional vector")
        r = self.define(o.results[0])
        k = pos[0]

        def f(fr, mask):
            fr.env[r] = fr.env[v][k]
        return f

    def _vector_constant(self, o, attr):
        """``arith.constant dense<...> : vector<NxT>`` (canonicalize folds a ``vector.from_elements`` of
        constants into one), as the interpreter's vector value: a tuple of ``N`` scalars of type ``T``."""
        n, ety = self._vector_ty(o.results[0].type, o)
        if not isinstance(attr, ir.DenseElementsAttr):
            self.unsupported(o, f"arith.constant {attr}")
        elems = [attr.get_splat_value().value] * n if attr.is_splat else _dense_elements(attr, ety, n)
        if ety.kind == "f":
            v = tuple(ety.dtype.type(e) for e in elems)
        else:
            v = tuple(_int_const(int(e), ety) for e in elems)
        r = self.define(o.results[0])

        def f(fr, mask):
            fr.env[r] = v
        return f

    def c_vector_broadcast(self, o):
        """``vector.broadcast`` (and the older ``vector.splat``) of a scalar to ``vector<NxT>``: canonicalize
        turns a ``vector.from_elements`` of one value repeated into it. A vector source of the same
        type is the identity."""
        a = self.use(o.operands[0])
        n, _ = self._vector_ty(o.results[0].type, o)
        src = str(o.operands[0].type)
        if src.startswith("vector<"):
            if src != str(o.results[0].type):
                self.unsupported(o, f"{o.name} from {src} to {o.results[0].type}")
            n = None
        r = self.define(o.results[0])

        def f(fr, mask):
            fr.env[r] = fr.env[a] if n is None else (fr.env[a],) * n
        return f

    def c_vector_from_elements(self, o):
        ins = [self.use(v) for v in o.operands]
        r = self.define(o.results[0])

        def f(fr, mask):
            fr.env[r] = tuple(fr.env[i] for i in ins)
        return f

    def c_aligned_pointer(self, o):
        """``memref.extract_aligned_pointer_as_index``: the host address of the buffer's data (so the
        alignment tests of vectorised accesses take the same path the GPU would for that array)."""
        m = self.use(o.operands[0])
        r = self.define(o.results[0])

        def f(fr, mask):
            buf = fr.env[m]
            fr.env[r] = np.int64(buf.data.ctypes.data)
        return f

    def c_store(self, o):
        v = self.use(o.operands[0])
        m = self.use(o.operands[1])
        self.written.add(m)
        idx = [self.use(x) for x in o.operands[2:]]

        def f(fr, mask):
            env = fr.env
            buf = env[m]
            act, rel = _access(fr, mask, buf, [env[i] for i in idx], "store")
            if act is not None and act.size == 0:
                return
            if fr.collect:
                _count(fr, buf, act, rel, "store")
            addr = _addr(fr, buf, act, rel)
            val = env[v]
            if type(val) is np.ndarray and act is not None:
                val = val[act]
            _check_store_race(fr, buf, act, addr, rel, val)
            if type(addr) is not np.ndarray and type(val) is np.ndarray:
                val = val[-1]  # several lanes, one address, one value
            buf.data[addr] = val
        return f

    def c_atomic(self, o):
        kattr = o.attributes["kind"]
        try:
            kname, fn, view = _ATOMIC_KINDS[int(kattr.value)]
        except (AttributeError, KeyError, ValueError):
            self.unsupported(o, f"memref.atomic_rmw kind {kattr}")
        v = self.use(o.operands[0])
        m = self.use(o.operands[1])
        self.written.add(m)
        idx = [self.use(x) for x in o.operands[2:]]
        ty = self.ty(o.results[0].type, o)
        zero = ty.zero()
        r = self.define(o.results[0])
        if ty.bits == 1 and view != "f":
            self.unsupported(o, "memref.atomic_rmw on i1")

        def f(fr, mask):
            env = fr.env
            buf = env[m]
            act, rel = _access(fr, mask, buf, [env[i] for i in idx], "atomic")
            if act is not None and act.size == 0:
                env[r] = zero
                return
            if fr.collect:
                _count(fr, buf, act, rel, "atomic")
            n = fr.L if act is None else act.size
            addr = np.broadcast_to(_addr(fr, buf, act, rel), (n,)).astype(np.int64, copy=False)
            val = env[v]
            if type(val) is np.ndarray:
                if act is not None:
                    val = val[act]
            else:
                val = np.full(n, val, dtype=ty.dtype)
            data = buf.data
            if view == "u":
                old = _atomic_apply(data.view(ty.udtype), addr, val.view(ty.udtype), fn).view(ty.dtype)
            else:
                old = _atomic_apply(data, addr, val, fn)
            if act is None:
                env[r] = old
            else:
                out = np.zeros(fr.L, dtype=ty.dtype)
                out[act] = old
                env[r] = out
        return f

    def c_alloca(self, o):
        if len(o.operands):
            self.unsupported(o, "memref.alloca with dynamic sizes")
        mt = _MemTy(o.results[0].type)
        k = self.nalloca
        self.nalloca += 1
        name = f"alloca{k}"
        size = mt.size
        self.private_bytes += size * mt.elem.dtype.itemsize
        dims = mt.dims
        dt = mt.elem.dtype
        r = self.define(o.results[0])

        def f(fr, mask):
            data = _empty_alloc(fr.L * size, dt, fr.uninit)
            fr.env[r] = _Buf(name, "private", data, dims, base=fr.lane * size)
        return f

    def c_dim(self, o):
        m = self.use(o.operands[0])
        i = self.use(o.operands[1])
        r = self.define(o.results[0])

        def f(fr, mask):
            env = fr.env
            env[r] = np.int64(env[m].dims[int(env[i])])
        return f

    def c_passthrough_memref(self, o):
        m = self.use(o.operands[0])
        r = self.define(o.results[0])

        def f(fr, mask):
            fr.env[r] = fr.env[m]
        return f

    # -- scf
    def c_if(self, o):
        c = self.use(o.operands[0])
        for res in o.results:
            if _is_memref(res.type):
                self.unsupported(o, "scf.if yielding memrefs")
        res_slots = [self.define(x) for x in o.results]
        zeros = [self.ty(x.type, o).zero() for x in o.results]
        then_ops, then_y = self.block(o.regions[0].blocks[0])
        if len(o.regions) > 1 and len(o.regions[1].blocks):
            else_ops, else_y = self.block(o.regions[1].blocks[0])
        else:
            else_ops, else_y = [], []

        def f(fr, mask):
            env = fr.env
            cv = env[c]
            if type(cv) is not np.ndarray:
                if cv:
                    _run_ops(then_ops, fr, mask)
                    ys = then_y
                else:
                    _run_ops(else_ops, fr, mask)
                    ys = else_y
                for rs, y in zip(res_slots, ys):
                    env[rs] = env[y]
                return
            tm = mask & cv
            em = mask & ~cv
            t_any = bool(tm.any())
            e_any = bool(em.any())
            if t_any and not e_any:
                tm = mask
            if e_any and not t_any:
                em = mask
            tv = ev = None
            if t_any:
                _run_ops(then_ops, fr, tm)
                tv = [env[y] for y in then_y]
            if e_any:
                _run_ops(else_ops, fr, em)
                ev = [env[y] for y in else_y]
            if t_any and e_any:
                for rs, a, b in zip(res_slots, tv, ev):
                    env[rs] = np.where(cv, a, b)
            else:
                vals = tv if t_any else ev if e_any else zeros
                for rs, a in zip(res_slots, vals):
                    env[rs] = a
        return f

    def c_for(self, o):
        lb, ub, st = (self.use(v) for v in list(o.operands)[:3])
        inits = [self.use(v) for v in list(o.operands)[3:]]
        ivty = self.ty(o.operands[0].type, o)
        unsigned = "unsignedCmp" in o.attributes
        body = o.regions[0].blocks[0]
        iv = self.define(body.arguments[0])
        iters = [self.define(a) for a in list(body.arguments)[1:]]
        res_slots = [self.define(x) for x in o.results]
        for res in o.results:
            if _is_memref(res.type):
                self.unsupported(o, "scf.for carrying memrefs")
        ops, ys = self.block(body)
        loc = str(o.location)

        def f(fr, mask):
            env = fr.env
            lo, hi, step = env[lb], env[ub], env[st]
            vals = [env[s] for s in inits]
            if type(lo) is not np.ndarray and type(hi) is not np.ndarray and type(step) is not np.ndarray:
                if unsigned:
                    ilo, ihi, istep = (int(_uv(x, ivty)) for x in (lo, hi, step))
                else:
                    ilo, ihi, istep = int(lo), int(hi), int(step)
                if istep <= 0:
                    if ilo < ihi:
                        raise KerncRuntimeError(f"scf.for with non-positive step {istep} (at {loc})")
                    istep = 1
                for i in range(ilo, ihi, istep):
                    env[iv] = _int_const(i, ivty)
                    for s, v in zip(iters, vals):
                        env[s] = v
                    _run_ops(ops, fr, mask)
                    vals = [env[y] for y in ys]
            else:
                L = fr.L
                cur = np.array(np.broadcast_to(lo, (L,)))
                hi_a = hi
                if unsigned:
                    def cont(x):
                        return _uv(x, ivty) < _uv(hi_a, ivty)
                else:
                    def cont(x):
                        return x < hi_a
                active = mask & cont(cur)
                if type(step) is np.ndarray:
                    if bool((active & (step <= 0)).any()):
                        raise KerncRuntimeError(f"scf.for with non-positive step (at {loc})")
                elif step <= 0 and bool(active.any()):
                    raise KerncRuntimeError(f"scf.for with non-positive step {step} (at {loc})")
                while active.any():
                    env[iv] = cur
                    for s, v in zip(iters, vals):
                        env[s] = v
                    _run_ops(ops, fr, active)
                    vals = [np.where(active, env[y], v) for y, v in zip(ys, vals)]
                    cur = np.where(active, cur + step, cur)
                    active = active & cont(cur)
            for rs, v in zip(res_slots, vals):
                env[rs] = v
        return f

    def c_while(self, o):
        inits = [self.use(v) for v in o.operands]
        before = o.regions[0].blocks[0]
        after = o.regions[1].blocks[0]
        bargs = [self.define(a) for a in before.arguments]
        for res in o.results:
            if _is_memref(res.type):
                self.unsupported(o, "scf.while carrying memrefs")
        b_ops, b_term = self.block(before)
        cond, fwd = b_term[0], b_term[1:]
        aargs = [self.define(a) for a in after.arguments]
        a_ops, a_y = self.block(after)
        res_slots = [self.define(x) for x in o.results]

        def f(fr, mask):
            env = fr.env
            vals = [env[s] for s in inits]
            active = mask
            results = None
            while True:
                for s, v in zip(bargs, vals):
                    env[s] = v
                _run_ops(b_ops, fr, active)
                cv = env[cond]
                fv = [env[s] for s in fwd]
                if type(cv) is not np.ndarray:
                    exiting, cont = (None, active) if cv else (active, None)
                else:
                    cont = active & cv
                    exiting = active & ~cv
                    if not exiting.any():
                        exiting, cont = None, active
                    elif not cont.any():
                        exiting, cont = active, None
                if exiting is not None:
                    if results is None:
                        results = fv
                    else:
                        results = [np.where(exiting, a, b) for a, b in zip(fv, results)]
                if cont is None:
                    break
                for s, v in zip(aargs, fv):
                    env[s] = v
                _run_ops(a_ops, fr, cont)
                if cont is active:
                    vals = [env[y] for y in a_y]
                else:
                    vals = [np.where(cont, env[y], v) for y, v in zip(a_y, fv)]
                active = cont
            for rs, v in zip(res_slots, results):
                env[rs] = v
        return f

    def c_execute_region(self, o):
        blocks = o.regions[0].blocks
        if len(blocks) != 1:
            self.unsupported(o, "scf.execute_region with several blocks")
        ops, ys = self.block(blocks[0])
        res_slots = [self.define(x) for x in o.results]

        def f(fr, mask):
            env = fr.env
            _run_ops(ops, fr, mask)
            for rs, y in zip(res_slots, ys):
                env[rs] = env[y]
        return f

    # -- the function
    def function(self) -> _Plan:
        fo = self.fop
        plan = _Plan()
        plan.name = fo.attributes["sym_name"].value
        ftype = fo.attributes["function_type"].value
        inputs = list(ftype.inputs)
        region = fo.regions[0]
        if len(region.blocks) != 1:
            raise InterpreterUnsupportedError(
                f"the CPU interpreter needs kernel '{plan.name}' as a single block (structured control "
                f"flow), found {len(region.blocks)} blocks")
        entry = region.blocks[0]
        args = list(entry.arguments)
        nargs = len(inputs)
        attrs = fo.attributes
        nwg = int(attrs["workgroup_attributions"].value) if "workgroup_attributions" in attrs else 0
        plan.arg_slots = [self.define(a) for a in args[:nargs]]
        for a in args[:nargs]:
            if _is_memref(a.type):
                mt = _MemTy(a.type)
                if len(mt.dims) != 1:
                    raise InterpreterUnsupportedError(
                        f"kernel '{plan.name}': buffer arguments must be 1-D memrefs, got {a.type}")
                plan.params.append(["buffer", mt, False])
            else:
                plan.params.append(["scalar", self.ty(a.type)])
        for k, a in enumerate(args[nargs:nargs + nwg]):
            mt = _MemTy(a.type)
            if any(d is None for d in mt.dims):
                raise InterpreterUnsupportedError("workgroup attributions need static shapes")
            plan.wg.append((self.define(a), mt, f"workgroup{k}"))
            plan.wg_bytes_per_block += mt.size * mt.elem.dtype.itemsize
        for k, a in enumerate(args[nargs + nwg:]):
            mt = _MemTy(a.type)
            if any(d is None for d in mt.dims):
                raise InterpreterUnsupportedError("private attributions need static shapes")
            plan.priv.append((self.define(a), mt, f"private{k}"))
            self.private_bytes += mt.size * mt.elem.dtype.itemsize
        plan.body, _ = self.block(entry)
        for p, s in zip(plan.params, plan.arg_slots):
            if p[0] == "buffer":
                p[2] = s in self.written
        plan.nslots = self.nslots
        plan.private_bytes_per_lane = self.private_bytes
        if "known_block_size" in attrs:
            try:
                plan.known_block = [int(x) for x in attrs["known_block_size"]]
            except Exception:  # noqa: BLE001 -- an attribute form we do not know: do not enforce
                plan.known_block = None
        if "kern.signature" in attrs:
            try:
                from kernc.dialect.signature import KernelSignature

                sig = KernelSignature.from_json(attrs["kern.signature"].value)
                plan.signature = sig
                names = sig.arg_names
                if len(names) == nargs:
                    plan.sig_names = names
            except Exception:  # noqa: BLE001 -- a malformed signature only costs the names
                plan.signature = None
        return plan


_HANDLERS = {
    "arith.constant": _Translator.c_constant,
    "ub.poison": _Translator.c_poison,
    "arith.cmpi": _Translator.c_cmpi,
    "arith.cmpf": _Translator.c_cmpf,
    "arith.select": _Translator.c_select,
    "math.fma": _Translator.c_fma,
    "math.fpowi": _Translator.c_fpowi,
    "math.ipowi": _Translator.c_ipowi,
    "math.sincos": _Translator.c_sincos,
    "gpu.barrier": _Translator.c_barrier,
    "llvm.fence": _Translator.c_fence,
    "gpu.shuffle": _Translator.c_shuffle,
    "memref.load": _Translator.c_load,
    "memref.store": _Translator.c_store,
    "vector.load": _Translator.c_vector_load,
    "vector.store": _Translator.c_vector_store,
    "vector.extract": _Translator.c_vector_extract,
    "vector.from_elements": _Translator.c_vector_from_elements,
    "vector.broadcast": _Translator.c_vector_broadcast,
    "vector.splat": _Translator.c_vector_broadcast,
    "memref.extract_aligned_pointer_as_index": _Translator.c_aligned_pointer,
    "memref.atomic_rmw": _Translator.c_atomic,
    "memref.alloca": _Translator.c_alloca,
    "memref.dim": _Translator.c_dim,
    "memref.cast": _Translator.c_passthrough_memref,
    "memref.assume_alignment": _Translator.c_passthrough_memref,
    "scf.if": _Translator.c_if,
    "scf.for": _Translator.c_for,
    "scf.while": _Translator.c_while,
    "scf.execute_region": _Translator.c_execute_region,
}
for _n in ("extsi", "extui", "trunci", "index_cast", "index_castui", "sitofp", "uitofp", "fptosi",
           "fptoui", "extf", "truncf", "bitcast"):
    _HANDLERS["arith." + _n] = _Translator.c_cast
for _n in ("absi", "ctpop", "ctlz", "cttz"):
    _HANDLERS["math." + _n] = _Translator.c_math_int
for _n in ("thread_id", "block_id", "block_dim", "grid_dim", "lane_id", "global_id", "subgroup_size"):
    _HANDLERS["gpu." + _n] = _Translator.c_gpu_id


# ------------------------------------------------------------------------------------------------
# launch-argument validation


def _describe(v) -> str:
    if isinstance(v, np.ndarray):
        return f"an array of dtype {v.dtype} and shape {v.shape}"
    return f"a {type(v).__name__}"


def _round_to(x, dtype: np.dtype):
    """``x`` (integers or floats) converted to the float ``dtype`` with one rounding to nearest even,
    as PTX ``cvt.rn`` does. Only ``bfloat16`` needs care (``ml_dtypes`` converts through ``float32``):
    the value goes through :func:`kernc.backend.exact_fma.round_f64_to` from ``float64``, where it is
    exact (integers beyond 2^53 are first rounded to odd exactly, with Python integers)."""
    if dtype.name != "bfloat16":
        return x.astype(dtype)
    a = np.asarray(x)
    if a.dtype.kind in "iu":
        f64 = a.astype(np.float64)
        big = np.abs(f64) >= 2.0 ** 53
        if np.any(big):
            flat, src = f64.reshape(-1), a.reshape(-1)
            for i in np.flatnonzero(big.reshape(-1)):
                flat[i] = _int_round_to_odd_24(int(src[i]))
        a = f64
    out = exact_fma.round_f64_to(a, dtype) if a.dtype == np.float64 else a.astype(dtype)  # f32: one rounding
    return out[()] if out.ndim == 0 else out


def _int_round_to_odd_24(n: int) -> float:
    """The integer ``n`` rounded to odd with a 24-bit significand (exactly a float32 value)."""
    sign, m = (-1 if n < 0 else 1), abs(n)
    shift = m.bit_length() - 24
    if shift > 0:
        q = m >> shift
        if m & ((1 << shift) - 1):
            q |= 1
        m = q << shift
    return float(sign * m)


def _scalar_arg(v, ty: _Ty, name: str):
    if isinstance(v, np.ndarray):
        if v.ndim != 0:
            raise KerncLaunchError(f"argument '{name}': expected a scalar {ty}, got {_describe(v)}")
        v = v[()]
    if ty.kind == "f":
        if isinstance(v, ty.dtype.type):  # e.g. an ml_dtypes.bfloat16 scalar (not an np.floating)
            return v
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise KerncLaunchError(f"argument '{name}': expected a scalar {ty}, got {_describe(v)}")
        return ty.dtype.type(v)
    if isinstance(v, (float, np.floating, complex, np.complexfloating)) or not isinstance(
            v, (int, np.integer, np.bool_)):
        raise KerncLaunchError(f"argument '{name}': expected an integer ({ty}), got {_describe(v)}")
    iv = int(v)
    if ty.bits == 1:
        if iv not in (0, 1):
            raise KerncLaunchError(f"argument '{name}': expected a bool (i1), got {iv}")
        return np.bool_(iv)
    lo = -(1 << (ty.bits - 1))
    hi = (1 << (ty.bits - 1)) - 1 if ty.name == "index" else (1 << ty.bits) - 1
    if not lo <= iv <= hi:
        raise KerncLaunchError(
            f"argument '{name}': {iv} does not fit in {ty} (range {lo}..{hi})")
    return _int_const(iv, ty)


def _buffer_arg(v, mt: _MemTy, written: bool, name: str) -> np.ndarray:
    ty = mt.elem
    if not isinstance(v, np.ndarray):
        raise KerncLaunchError(
            f"argument '{name}': expected a 1-D numpy array of {ty}, got {_describe(v)}")
    if v.ndim != 1:
        raise KerncLaunchError(
            f"argument '{name}': expected a 1-D numpy array of {ty}, got shape {v.shape}")
    if not v.flags.c_contiguous:
        raise KerncLaunchError(f"argument '{name}': the array must be contiguous")
    if ty.kind == "f":
        ok = v.dtype == ty.dtype
    elif ty.bits == 1:
        ok = v.dtype == np.bool_
    else:
        ok = v.dtype.kind in "iu" and v.dtype.itemsize * 8 == ty.bits and v.dtype.isnative
    if not ok:
        want = {"f16": "float16", "f32": "float32", "f64": "float64", "i1": "bool"}.get(
            ty.name, f"int{ty.bits} or uint{ty.bits}")
        raise KerncLaunchError(
            f"argument '{name}': expected an array of {want} ({ty}), got dtype {v.dtype}")
    if mt.dims[0] is not None and v.shape[0] != mt.dims[0]:
        raise KerncLaunchError(
            f"argument '{name}': expected {mt.dims[0]} elements, got {v.shape[0]}")
    if written and not v.flags.writeable:
        raise KerncLaunchError(f"argument '{name}': the kernel writes this buffer but the array is read-only")
    if ty.kind == "i" and ty.bits > 1 and v.dtype != ty.dtype:
        v = v.view(ty.dtype)
    return v


# ------------------------------------------------------------------------------------------------
# the public API


class Interpreter:
    """Executes the ``gpu.func`` kernels of a gpu-level IR module on the CPU.

    ``module`` is an ``ir.Module`` (its context is used) or the module's text (parsed in a new
    ``ir.Context``). Kernels are translated on their first :meth:`run` and the plan is cached.

    ``uninitialized`` selects the contents of fresh workgroup and private memory: ``"zero"`` (the
    default) or ``"poison"`` (NaN for floats, ``0xA5`` bytes for integers) to expose reads of memory
    nobody wrote.

    Raises ``ValueError`` for a module text that does not parse.
    """

    def __init__(self, module: "ir.Module | str", *, uninitialized: str = "zero"):
        if isinstance(module, str):
            text = module
            self._ctx = ir.Context()
            try:
                with self._ctx:
                    module = ir.Module.parse(text)
            except Exception as first:  # MLIRError
                # gpu IR holds only upstream dialects; allow others (e.g. stray kern attributes) only
                # when the strict parse fails
                self._ctx = ir.Context()
                self._ctx.allow_unregistered_dialects = True
                try:
                    with self._ctx:
                        module = ir.Module.parse(text)
                except Exception:
                    raise ValueError(f"could not parse the gpu IR module: {first}") from first
        else:
            self._ctx = module.context
        if uninitialized not in ("zero", "poison"):
            raise ValueError("uninitialized must be 'zero' or 'poison'")
        self._uninit = uninitialized
        self._module = module
        self._funcs = {}
        self._plans: dict[str, _Plan] = {}
        self._lane_cache: dict[tuple, tuple] = {}
        self._collect_funcs(module.operation)

    def _collect_funcs(self, op):
        for region in op.regions:
            for block in region.blocks:
                for child in block.operations:
                    c = child.operation
                    if c.name == "gpu.func":
                        if "kernel" in c.attributes:
                            self._funcs[c.attributes["sym_name"].value] = c
                    elif c.name in ("gpu.module", "builtin.module"):
                        self._collect_funcs(c)

    def kernel_names(self) -> list[str]:
        """Names of the module's ``gpu.func ... kernel`` functions, in module order."""
        return list(self._funcs)

    def _plan(self, kernel: str) -> _Plan:
        plan = self._plans.get(kernel)
        if plan is None:
            if kernel not in self._funcs:
                raise KerncLaunchError(
                    f"no kernel named '{kernel}' (kernels: {', '.join(self._funcs) or 'none'})")
            with self._ctx:
                plan = _Translator(self._funcs[kernel]).function()
            self._plans[kernel] = plan
        return plan

    def signature(self, kernel: str):
        """The kernel's :class:`kernc.dialect.signature.KernelSignature`, or ``None`` if it has none."""
        return self._plan(kernel).signature

    def arg_names(self, kernel: str) -> list[str]:
        """The kernel's argument names (from ``kern.signature``, else ``arg0``, ``arg1``, ...)."""
        plan = self._plan(kernel)
        return list(plan.sig_names or [f"arg{i}" for i in range(len(plan.params))])

    def run(self, kernel: str, grid: int, block: int, args: list, *, arg_names: list[str] | None = None,
            collect_stats: bool = True, index_bits: int = 64, progress=None) -> RunStats:
        """Run ``kernel`` over ``grid`` blocks of ``block`` threads; return its :class:`RunStats`.

        ``args`` follow the ``gpu.func`` argument order: Python numbers or numpy scalars for scalar
        params (``index`` args are Python ints), 1-D C-contiguous numpy arrays for buffers -- read
        and written in place. A buffer's dtype must match the memref element type exactly for
        floats (``float16``/``float32``/``float64``; ``bf16`` is unsupported); ``iN`` buffers accept
        ``intN`` or ``uintN`` arrays, ``i1`` buffers ``bool`` arrays. ``arg_names`` name the
        arguments in messages (default: the ``kern.signature`` names, else ``arg<i>``).

        Raises :class:`~kernc.errors.KerncLaunchError` for an unknown kernel, a wrong argument count,
        type, dtype, shape or read-only buffer, or a bad grid/block (``block`` must be 1..1024 and
        match a ``known_block_size`` attribute); :class:`~kernc.errors.KerncRuntimeError` for a fault
        while the kernel runs (out-of-bounds access, barrier in divergent control flow);
        :class:`InterpreterUnsupportedError` when the kernel uses IR the interpreter lacks.
        With ``collect_stats=False`` the memory counters stay 0 (faster). ``index_bits``: the
        ``index`` width the GPU would use for this launch (``binding.BoundLaunch.index_bits``); with
        32, an ``index`` add, subtract, multiply, shift or conversion whose result leaves int32 is a
        ``KerncRuntimeError`` (the 32-bit PTX would wrap it), though the interpreter computes
        ``index`` values in 64 bits either way. ``progress``: called as ``progress(blocks_done,
        grid)`` after each batch of blocks (``backend/progress.py`` draws a bar from it).
        """
        plan = self._plan(kernel)
        n = len(plan.params)
        names = list(arg_names) if arg_names is not None else list(plan.sig_names or [])
        names += [f"arg{i}" for i in range(len(names), n)]
        if not isinstance(args, (list, tuple)):
            raise KerncLaunchError(f"kernel '{kernel}': args must be a list, got {type(args).__name__}")
        if len(args) != n:
            raise KerncLaunchError(
                f"kernel '{kernel}' takes {n} argument{'s' if n != 1 else ''} ({', '.join(names[:n])}), "
                f"got {len(args)}")
        for what, v in (("grid", grid), ("block", block)):
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
                raise KerncLaunchError(f"kernel '{kernel}': {what} must be an int, got {v!r}")
        grid, block = int(grid), int(block)
        if grid < 0:
            raise KerncLaunchError(f"kernel '{kernel}': grid must be >= 0, got {grid}")
        if not 1 <= block <= 1024:
            raise KerncLaunchError(f"kernel '{kernel}': block must be in 1..1024, got {block}")
        if plan.known_block and plan.known_block[0] != block:
            raise KerncLaunchError(
                f"kernel '{kernel}' was compiled for blocks of {plan.known_block[0]} threads "
                f"(known_block_size), launched with {block}")
        values = []
        for p, v, name in zip(plan.params, args, names):
            if p[0] == "scalar":
                values.append(_scalar_arg(v, p[1], name))
            else:
                values.append(_buffer_arg(v, p[1], p[2], name))

        stats = RunStats(threads=grid * block, blocks=grid)
        if grid == 0:
            return stats
        per_block = block * max(plan.private_bytes_per_lane, 1) + plan.wg_bytes_per_block
        nb_max = max(1, min(MAX_LANES_PER_BATCH // block, _SCRATCH_BUDGET // max(per_block, 1)))
        with np.errstate(all="ignore"):
            b0 = 0
            while b0 < grid:
                nb = min(nb_max, grid - b0)
                fr = self._frame(plan, nb, block, b0, grid, stats, collect_stats)
                fr.index32 = index_bits == 32
                env = fr.env
                for s, v, p, name in zip(plan.arg_slots, values, plan.params, names):
                    env[s] = _Buf(name, "global", v, (v.shape[0],)) if p[0] == "buffer" else v
                for s, mt, name in plan.wg:
                    size = mt.size
                    env[s] = _Buf(name, "workgroup", _empty_alloc(nb * size, mt.elem.dtype, self._uninit),
                                  mt.dims, base=fr.blk * size)
                for s, mt, name in plan.priv:
                    size = mt.size
                    env[s] = _Buf(name, "private", _empty_alloc(fr.L * size, mt.elem.dtype, self._uninit),
                                  mt.dims, base=fr.lane * size)
                _run_ops(plan.body, fr, fr.full)
                b0 += nb
                if progress is not None:
                    progress(b0, grid)
        return stats

    def _frame(self, plan, nb, B, b0, grid, stats, collect) -> _Frame:
        key = (nb, B)
        cached = self._lane_cache.get(key)
        if cached is None:
            L = nb * B
            lane = np.arange(L, dtype=np.int64)
            blk = lane // B
            tid = lane - blk * B
            wpb = -(-B // WARP_SIZE)
            warp = blk * wpb + (tid >> 5)
            cached = (lane, blk, tid, tid & (WARP_SIZE - 1), warp, nb * wpb)
            for a in cached[:5]:
                a.flags.writeable = False  # shared by every run: SSA values are never mutated
            if len(self._lane_cache) > 8:
                self._lane_cache.clear()
            self._lane_cache[key] = cached
        fr = _Frame()
        fr.lane, fr.blk, fr.tid, fr.lane_in_warp, fr.warp, fr.nwarps = cached
        fr.L = nb * B
        fr.B = B
        fr.nb = nb
        fr.first_block = b0
        fr.grid = grid
        fr.bid = fr.blk + np.int64(b0)
        fr.full = np.ones(fr.L, dtype=np.bool_)
        fr.env = [None] * plan.nslots
        fr.stats = stats
        fr.collect = collect
        fr.uninit = self._uninit
        return fr
