"""The tables of the ``.kern`` language the checker and the lowering read: builtin values and
functions, keywords and reserved names, kernel attributes, compute types, operator groups, limits
and layouts. The accessor patterns, their arguments and the access modes that take them are the
accessor registry's (``dialect/accessors.py``: :data:`~kernc.dialect.accessors.LANGUAGE`).

Semantics: ``docs/language.md``; accessors: ``docs/design/accessors.md`` and
``docs/accessor-lowering.md``.
"""

from __future__ import annotations

import re

# ---- builtins ---------------------------------------------------------------------------------

#: Builtin values (all of type ``index``).
BUILTIN_VALUES = ("thread_id", "block_id", "block_dim", "lane_id", "problem_size")
#: Builtin functions and their arity.
FLOAT_UNARY = ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tanh", "floor", "ceil")
BUILTIN_FUNCS = {**{f: 1 for f in FLOAT_UNARY}, "abs": 1, "min": 2, "max": 2, "fma": 3, "select": 3}
#: The two elements of a ``pair`` read or output (``u.first``, ``u.second``).
PAIR_MEMBERS = ("first", "second")
#: The methods of a ``view`` buffer (``x.checked(i, j)``, ``x.in_bounds(i, j)``).
VIEW_METHODS = ("checked", "in_bounds")
#: The atomic update targets of a ``view`` buffer: method -> (the operators it takes, what it does
#: per operator). ``hist.atomic(b) += 1``, ``m.atomic_min(b) = v``, ``m.atomic_max(b) = v``,
#: ``f.atomic_or(b) = bits``, ``f.atomic_and(b) = bits``.
VIEW_ATOMIC_METHODS = {"atomic": ("+=", "-="), "atomic_min": ("=",), "atomic_max": ("=",),
                       "atomic_or": ("=",), "atomic_and": ("=",)}
_INTS = ("i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64")
_FLOATS = ("f16", "bf16", "f32", "f64")
#: The storage types each atomic update takes (method -> types): add, min and max on every integer
#: and float type, or/and on integers.
ATOMIC_TYPES = {"atomic": _INTS + _FLOATS, "atomic_min": _INTS + _FLOATS, "atomic_max": _INTS + _FLOATS,
                "atomic_or": _INTS, "atomic_and": _INTS}
#: The ones sm_90 does natively with one ``atom``/``red`` (PTX ISA, "atom"): add on 32/64-bit
#: integers (two's complement: signed and unsigned alike), f16 (``atom.add.noftz.f16``), bf16
#: (``.bf16``, sm_90), f32 and f64; integer min/max/or/and on 32/64-bit integers. The others (8/16-bit
#: integers, float min/max, bf16 add below sm_90, f16 add below sm_70, f64 add below sm_60) are a
#: compare-and-swap loop: LLVM's AtomicExpand pass rewrites the ``atomicrmw`` the NVPTX backend cannot
#: select into a ``cmpxchg`` loop (8/16-bit ones on the containing aligned 32-bit word, masked).
ATOMIC_NATIVE = {"atomic": ("i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64"),
                 **{m: ("i32", "u32", "i64", "u64") for m in ("atomic_min", "atomic_max", "atomic_or", "atomic_and")}}

# ---- names ------------------------------------------------------------------------------------

#: Reserved words of the grammar: never names. The access words read/write/add/view and the clause
#: words default/compute are not reserved (they are keywords only right after a buffer's dims), nor
#: is `o` (composition, only inside layout expressions).
KEYWORDS = ("kernel", "layout", "fn", "let", "if", "else", "for", "in", "over", "return", "as", "true",
            "false")
#: Kernel attributes (``@block(N)``, ``@deterministic``, ``@checked``, ``@tile(BM, BN, BK)``,
#: ``@tensor_cores``, ``@tf32``).
KERNEL_ATTRIBUTES = ("block", "deterministic", "checked", "tile", "tensor_cores", "tf32", "tunable", "constant")
#: The role attributes of derivatives (``@tunable(x, a)``: differentiated by default,
#: ``@constant(c)``: never; Caspar's Tunable and Constant; ``docs/derivatives.md``).
ROLE_ATTRIBUTES = ("tunable", "constant")
#: Compute types a ``compute`` clause may name.
COMPUTE_TYPES = ("f32", "f64")
#: Prefixes and names a kernel may not have: the kernel name is the PTX entry name, which must be a
#: PTX identifier (``_`` alone is not one) and must not collide with the libdevice functions linked
#: into the same module (``__nv_*``), NVVM/CUDA internals or the CUDA device runtime.
RESERVED_KERNEL_PREFIXES = ("__nv", "__cuda", "__internal", "llvm", "nvvm")
RESERVED_KERNEL_NAMES = ("_", "WARP_SZ", "vprintf", "printf", "malloc", "free", "__assertfail", "memcpy",
                         "memset", "kernels")
#: The PTX names of an entry's parameters (``g_param_0``; LLVM NVPTX), see ``ptx_names_ok``.
PTX_PARAM_NAME = re.compile(r"(.+)_param_[0-9]+")

# ---- operators --------------------------------------------------------------------------------

BITWISE = ("&", "|", "^")
SHIFT = ("<<", ">>")
COMPARE = ("==", "!=", "<", "<=", ">", ">=")
LOGIC = ("&&", "||")
#: Operators whose meaning on integers is not their meaning on floats (or that floats lack).
INTEGER_ONLY = ("/", "%", "//", "%%", *BITWISE, *SHIFT)

# ---- limits -----------------------------------------------------------------------------------

#: Most components of a multi-component element ``T[n, K]`` (each is a separate SSA value).
MAX_COMPONENTS = 64
#: The largest ``index`` value (int64): sizes, strides and every constant derived from them must
#: fit, as MLIR's ``index`` constants and the 64-bit PTX hold no more.
INDEX_MAX = 2**63 - 1
#: Most dims a view (and most coordinates a layout application) may have.
MAX_VIEW_RANK = 8
#: Most layers a chain of layouts (``f o g o ...`` that does not fold) may have.
MAX_CHAIN_LAYERS = 64

# ---- layouts ----------------------------------------------------------------------------------

#: The builtin storage layouts of a buffer (``as soa``).
BUILTIN_LAYOUTS = ("soa", "aos", "caspar")
#: Layout algebra operations callable in layout expressions, with their (min, max) argument counts.
ALGEBRA = {
    "coalesce": (1, 1), "composition": (2, 2), "complement": (1, 2), "right_inverse": (1, 1),
    "left_inverse": (1, 1), "logical_divide": (2, 2), "zipped_divide": (2, 2),
    "tiled_divide": (2, 2), "flat_divide": (2, 2), "logical_product": (2, 2),
    "zipped_product": (2, 2), "tiled_product": (2, 2), "flat_product": (2, 2),
    "blocked_product": (2, 2), "raked_product": (2, 2),
}
#: Operations whose second argument, written as a tuple, is a CuTe tiler (applied by mode).
TILER_OPS = ("composition", "logical_divide", "zipped_divide", "tiled_divide", "flat_divide")
