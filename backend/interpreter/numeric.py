"""Integer and float semantics: arithmetic, comparisons, selects and constants (``arith``, ``math``),
and the 32-bit ``index`` check; each op's handler is registered beside its semantics.

Integers are signless: ``iN`` values are stored in the signed numpy type of that width (``i1`` as
``bool``, ``index`` as ``int64``) and every op that cares about signedness computes on the unsigned
view (``_uv``). Results undefined on the GPU (division by zero, too large shift amounts) are a value,
never a numpy error.
"""

from __future__ import annotations

import math
import re

import numpy as np

from kernc.backend import exact_fma
from kernc.support.errors import KerncRuntimeError
from kernc.support.mlir import ir

from . import affine
from .errors import InterpreterUnsupportedError
from .translate import handles
from .types import _is_memref, _scalar_ty, _Ty


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


#: index ops whose result can leave int32 although their operands are in it (the GPU's 32-bit
#: index arithmetic wraps there; see :func:`_checked_index32`)
_INDEX_WRAPS = ("arith.addi", "arith.subi", "arith.muli", "arith.shli")


_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _checked_index32(f, r, o, lin=None):
    """``f`` (the closure of op ``o``, result in slot ``r``) followed, in a run whose launch the
    GPU would make with 32-bit ``index`` arithmetic (``Interpreter.run(index_bits=32)``), by a check
    that no active lane's result left int32: the interpreter computes ``index`` values exactly
    (64 bits), the 32-bit PTX would wrap them, and the two devices would disagree silently.

    The returned closure carries the check as ``index32_check(fr, mask) -> bool`` (True: every
    lane's value, active or not, is in int32), for a memoised op that reuses the value. ``lin``:
    the result's coefficients when it is affine in the ids (:mod:`.affine`): its range over the
    batch is then known from its first lane, without a pass over the lanes."""
    loc = str(o.location)

    def check(fr, mask) -> bool:
        v = fr.env[r]
        if type(v) is np.ndarray:
            if not v.size:
                return True
            if lin is not None and v.shape[0] == fr.L:
                # v[l] = v[0] + cb * (block of l - first block) + ct * (thread of l): every pair occurs
                cb, ct = lin[0] * (fr.nb - 1), lin[1] * (fr.B - 1)
                v0 = int(v[0])
                if _INT32_MIN <= v0 + min(cb, 0) + min(ct, 0) and v0 + max(cb, 0) + max(ct, 0) <= _INT32_MAX:
                    return True
            lo, hi = int(v.min()), int(v.max())  # every lane first: no gather of the active ones
            if _INT32_MIN <= lo and hi <= _INT32_MAX:
                return True
            if mask is not fr.full:
                a = v[mask]
                if not a.size:
                    return False
                lo, hi = int(a.min()), int(a.max())
        else:
            if mask is not fr.full and not mask.any():
                return False
            lo = hi = int(v)
        if lo < _INT32_MIN or hi > _INT32_MAX:
            bad = hi if hi > _INT32_MAX else lo
            raise KerncRuntimeError(
                f"index arithmetic gives {bad}, outside int32 (at {loc}): this launch's sizes let "
                "the GPU run it with 32-bit index arithmetic, which would wrap it; compute such "
                "values in i64 and convert the in-range result with index(...)")
        return type(v) is not np.ndarray

    def g(fr, mask):
        f(fr, mask)
        if fr.index32:
            check(fr, mask)
    g.index32_check, g.unchecked = check, f
    return g


# ------------------------------------------------------------------------------------------------
# handlers


#: binops that are one numpy ufunc on the stored values (wrapping, as the signed dtype does; for
#: ``i1`` only the bitwise ones): their lane results go into arrays of the run's pool
_UFUNCS = {"arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
           "arith.andi": np.bitwise_and, "arith.ori": np.bitwise_or, "arith.xori": np.bitwise_xor,
           "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply,
           "arith.divf": np.divide}
_BOOL = np.dtype(np.bool_)


def _into_pool(uf, a: int, b: int, r: int, dtype):
    """The closure ``env[r] = uf(env[a], env[b])``, a lane result written into a pooled array."""
    def f(fr, mask):
        env = fr.env
        x, y = env[a], env[b]
        if type(x) is np.ndarray or type(y) is np.ndarray:
            env[r] = uf(x, y, out=fr.pool.take(dtype, fr.L))
        else:
            env[r] = _s(uf(x, y))
    return f


@handles(*_INT_BINOPS, *_FLOAT_BINOPS)
def _binop(tr, o):
    ty = tr.ty(o.results[0].type, o)
    a, b = tr.use(o.operands[0]), tr.use(o.operands[1])
    r = tr.define(o.results[0])
    name = o.name
    if name in _INT_BINOPS:
        if ty.kind != "i":
            tr.unsupported(o, f"{name} on {ty}")
        fn = _INT_BINOPS[name]
        affine.binop(tr, name, ty.name == "index", a, b, r)
        if name in _UFUNCS and (ty.bits > 1 or name in ("arith.andi", "arith.ori", "arith.xori")):
            f = _into_pool(_UFUNCS[name], a, b, r, ty.dtype)
        else:
            def f(fr, mask):
                env = fr.env
                env[r] = _s(fn(env[a], env[b], ty))
        if ty.name == "index" and name in _INDEX_WRAPS:
            return _checked_index32(f, r, o, tr.lin.get(r))
    else:
        if ty.kind != "f":
            tr.unsupported(o, f"{name} on {ty}")
        fn = _FLOAT_BINOPS[name]
        if name in _UFUNCS:
            return _into_pool(_UFUNCS[name], a, b, r, ty.dtype)

        def f(fr, mask):
            env = fr.env
            env[r] = _s(fn(env[a], env[b]))
    return f


def _float_unop(tr, o, fn):
    ty = tr.ty(o.operands[0].type, o)
    if ty.kind != "f":
        tr.unsupported(o, f"{o.name} on {ty}")
    a = tr.use(o.operands[0])
    r = tr.define(o.results[0])

    def f(fr, mask):
        env = fr.env
        env[r] = _s(fn(env[a]))
    return f


@handles(*_FLOAT_UNOPS)
def _float_math(tr, o):
    return _float_unop(tr, o, _FLOAT_UNOPS[o.name])


@handles(*_FLOAT_PREDICATES)
def _float_predicate(tr, o):
    return _float_unop(tr, o, _FLOAT_PREDICATES[o.name])


def _int_unop(tr, o, fn):
    ty = tr.ty(o.operands[0].type, o)
    a = tr.use(o.operands[0])
    r = tr.define(o.results[0])

    def f(fr, mask):
        env = fr.env
        env[r] = _s(fn(env[a], ty))
    return f


def _unary(tr, o, fn):
    """An op with one operand, one result, ``fn(value) -> value``."""
    a = tr.use(o.operands[0])
    r = tr.define(o.results[0])

    def f(fr, mask):
        env = fr.env
        env[r] = _s(fn(env[a]))
    return f


@handles("arith.constant")
def _constant(tr, o):
    attr = o.attributes["value"]
    rt = str(o.results[0].type)
    if rt.startswith("vector<"):
        return _vector_constant(tr, o, attr)
    if rt.startswith("tensor<"):
        tr.unsupported(o, f"arith.constant of type {rt}")
    ty = tr.ty(o.results[0].type, o)
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
        tr.unsupported(o, f"arith.constant {attr}")
    r = tr.define(o.results[0])
    affine.define(tr, r, const=int(v) if ty.kind == "i" else None)

    def f(fr, mask):
        fr.env[r] = v
    return f


@handles("ub.poison")
def _poison(tr, o):
    ty = tr.ty(o.results[0].type, o)
    v = ty.zero()
    r = tr.define(o.results[0])

    def f(fr, mask):
        fr.env[r] = v
    return f


@handles("arith.cmpi")
def _cmpi(tr, o):
    ty = tr.ty(o.operands[0].type, o)
    pred = int(o.attributes["predicate"].value)
    _, view, fn = _CMPI[pred]
    a, b = tr.use(o.operands[0]), tr.use(o.operands[1])
    r = tr.define(o.results[0])
    conv = (lambda x, ty: x) if view is None else _sv if view == "s" else _uv
    bounded = _bounded_compare(tr, ty, view, fn, a, b)

    def f(fr, mask):
        env = fr.env
        if bounded is not None:
            known = bounded(fr)
            if known is not None:
                env[r] = known
                return
        x, y = conv(env[a], ty), conv(env[b], ty)
        if type(x) is np.ndarray or type(y) is np.ndarray:
            env[r] = fn(x, y, out=fr.pool.take(_BOOL, fr.L))
        else:
            env[r] = fn(x, y)
    return f


def _bounded_compare(tr, ty, view, fn, a: int, b: int):
    """For an ordering ``arith.cmpi`` of an ``index`` value affine in the ids (:mod:`.affine`) against
    a uniform one (a bounds guard ``t < n``): ``known(fr)``, the comparison's value when every lane
    of the batch gives the same (a uniform ``i1``, as for two uniform operands), else ``None``.

    The affine value's range over a batch follows from its first lane (as for the 32-bit index
    check), and an ordering predicate holds on a half-line of values, so it holds (or fails) for
    every lane when it does at both ends of the range. That replaces a lane compare and the
    mask arithmetic of the ``scf.if`` it guards by O(1) work in a batch that the guard does not
    cut. Unsigned predicates take this path only when both ends and the bound are non-negative
    (then unsigned and signed order agree)."""
    if ty.name != "index" or view is None:
        return None
    la, lb = affine.coefficients(tr, a), affine.coefficients(tr, b)
    if la is None or lb is None or (la == (0, 0)) == (lb == (0, 0)):
        return None  # not exactly one affine lane value against one uniform value
    lin, lanes, bound = (la, a, b) if lb == (0, 0) else (lb, b, a)
    first = lanes == a

    def known(fr):
        env = fr.env
        v, n = env[lanes], env[bound]
        if type(v) is not np.ndarray or type(n) is np.ndarray or v.shape[0] != fr.L:
            return None
        cb, ct = lin[0] * (fr.nb - 1), lin[1] * (fr.B - 1)
        v0, n = int(v[0]), int(n)
        lo, hi = v0 + min(cb, 0) + min(ct, 0), v0 + max(cb, 0) + max(ct, 0)
        if view == "u" and (lo < 0 or n < 0):
            return None
        at_lo, at_hi = (fn(lo, n), fn(hi, n)) if first else (fn(n, lo), fn(n, hi))
        return np.bool_(at_lo) if at_lo == at_hi else None
    return known


@handles("arith.cmpf")
def _cmpf(tr, o):
    tr.ty(o.operands[0].type, o)
    fn = _CMPF[int(o.attributes["predicate"].value)]
    a, b = tr.use(o.operands[0]), tr.use(o.operands[1])
    r = tr.define(o.results[0])

    def f(fr, mask):
        env = fr.env
        env[r] = _s(fn(env[a], env[b]))
    return f


@handles("arith.select")
def _select(tr, o):
    c, a, b = (tr.use(v) for v in o.operands)
    if _is_memref(o.results[0].type):
        tr.unsupported(o, "arith.select of memrefs")
    r = tr.define(o.results[0])

    def f(fr, mask):
        env = fr.env
        cv = env[c]
        if type(cv) is np.ndarray:
            env[r] = np.where(cv, env[a], env[b])
        else:
            env[r] = env[a] if cv else env[b]
    return f


@handles("math.absi", "math.ctpop", "math.ctlz", "math.cttz")
def _math_int(tr, o):
    fn = {"math.absi": lambda x, ty: _back(np.abs(_sv(x, ty)), ty),
          "math.ctpop": _ctpop, "math.ctlz": _ctlz, "math.cttz": _cttz}[o.name]
    return _int_unop(tr, o, fn)


@handles("math.fma")
def _fma(tr, o):
    """``math.fma``: correctly rounded, one rounding as PTX ``fma.rn`` (``backend/exact_fma.py``)."""
    dt = tr.ty(o.results[0].type, o).dtype
    a, b, c = (tr.use(v) for v in o.operands)
    r = tr.define(o.results[0])

    def f(fr, mask):
        env = fr.env
        env[r] = exact_fma.fma(env[a], env[b], env[c], dt)
    return f


@handles("math.fpowi")
def _fpowi(tr, o):
    ty = tr.ty(o.results[0].type, o)
    a, b = tr.use(o.operands[0]), tr.use(o.operands[1])
    r = tr.define(o.results[0])

    def f(fr, mask):
        env = fr.env
        env[r] = _s(np.power(env[a], np.asarray(env[b]).astype(ty.dtype)))
    return f


@handles("math.ipowi")
def _ipowi_op(tr, o):
    ty = tr.ty(o.results[0].type, o)
    a, b = tr.use(o.operands[0]), tr.use(o.operands[1])
    r = tr.define(o.results[0])

    def f(fr, mask):
        env = fr.env
        env[r] = _ipowi(env[a], env[b], ty)
    return f


@handles("math.sincos")
def _sincos(tr, o):
    a = tr.use(o.operands[0])
    r0, r1 = tr.define(o.results[0]), tr.define(o.results[1])

    def f(fr, mask):
        env = fr.env
        env[r0] = np.sin(env[a])
        env[r1] = np.cos(env[a])
    return f


def _vector_ty(tr, t, o):
    m = re.fullmatch(r"vector<(\d+)x(\w+)>", str(t))
    if not m:
        tr.unsupported(o, f"vector type {t}")
    return int(m.group(1)), _scalar_ty(m.group(2))


def _vector_constant(tr, o, attr):
    """``arith.constant dense<...> : vector<NxT>`` (canonicalize folds a ``vector.from_elements`` of
    constants into one), as the interpreter's vector value: a tuple of ``N`` scalars of type ``T``."""
    nd = re.fullmatch(r"vector<(\d+)x((?:\d+x)+)(\w+)>", str(o.results[0].type))
    if nd and isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:  # an n-D splat (mma fragments)
        ety = _scalar_ty(nd.group(3))
        x = attr.get_splat_value().value
        v = ety.dtype.type(x) if ety.kind == "f" else _int_const(int(x), ety)
        for d in reversed([int(nd.group(1))] + [int(d) for d in nd.group(2).rstrip("x").split("x")]):
            v = (v,) * d
        r = tr.define(o.results[0])

        def splat(fr, mask):
            fr.env[r] = v
        return splat
    n, ety = _vector_ty(tr, o.results[0].type, o)
    if not isinstance(attr, ir.DenseElementsAttr):
        tr.unsupported(o, f"arith.constant {attr}")
    elems = [attr.get_splat_value().value] * n if attr.is_splat else _dense_elements(attr, ety, n)
    if ety.kind == "f":
        v = tuple(ety.dtype.type(e) for e in elems)
    else:
        v = tuple(_int_const(int(e), ety) for e in elems)
    r = tr.define(o.results[0])

    def f(fr, mask):
        fr.env[r] = v
    return f
