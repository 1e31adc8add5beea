"""Value types of the ``.kern`` language.

- :class:`ScalarType`: ``bool``, ``i8..i64``, ``u8..u64``, ``f16``, ``bf16``, ``f32``, ``f64``,
  ``index`` (a signed integer of the target's pointer width). Integer signedness is part of the
  type; MLIR integers are signless, so lowering picks signed/unsigned ops from it.
- Two *literal* scalar types, :data:`INT_LIT` and :data:`FLOAT_LIT`: an unsuffixed literal (or an
  expression of literals only) whose concrete type comes from context. An integer literal adapts to
  any integer or float type; a float literal to any float type. Where no context exists they default
  to ``i32`` and ``f32``.
- :class:`VectorType`: ``n`` components of one scalar type (multi-component buffer elements,
  ``[a, b, c]`` literals). Vectors are scalarised in the IR (one SSA value per component).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True)
class ScalarType:
    """A scalar type; ``kind`` is ``"int"``, ``"float"`` or ``"bool"``."""

    name: str
    kind: str
    bits: int
    signed: bool = True
    literal: bool = False

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def is_numeric(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def is_index(self) -> bool:
        return self.name == "index"

    @property
    def is_unsigned(self) -> bool:
        return self.kind == "int" and not self.signed

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class VectorType:
    """``n`` components of scalar type ``elem``; printed ``f32[3]``."""

    elem: ScalarType
    n: int

    def __str__(self) -> str:
        return f"{self.elem}[{self.n}]"


@dataclass(frozen=True)
class CoordType:
    """The value of a layout application ``f(args)(m, k)``: ``n`` ``index`` coordinates (with the
    layers' in-bounds flag). Valid only as the coordinate of a view access or of another
    application; printed ``coordinate(n)``."""

    n: int

    def __str__(self) -> str:
        return f"coordinate({self.n})"


Type = Union[ScalarType, VectorType]

BOOL = ScalarType("bool", "bool", 1, False)
I8 = ScalarType("i8", "int", 8)
I16 = ScalarType("i16", "int", 16)
I32 = ScalarType("i32", "int", 32)
I64 = ScalarType("i64", "int", 64)
U8 = ScalarType("u8", "int", 8, False)
U16 = ScalarType("u16", "int", 16, False)
U32 = ScalarType("u32", "int", 32, False)
U64 = ScalarType("u64", "int", 64, False)
F16 = ScalarType("f16", "float", 16)
BF16 = ScalarType("bf16", "float", 16)
F32 = ScalarType("f32", "float", 32)
F64 = ScalarType("f64", "float", 64)
INDEX = ScalarType("index", "int", 64)

#: The type of an unsuffixed integer literal (adapts to context; defaults to i32).
INT_LIT = ScalarType("integer literal", "int", 64, True, literal=True)
#: The type of an unsuffixed float literal (adapts to context; defaults to f32).
FLOAT_LIT = ScalarType("float literal", "float", 64, True, literal=True)

#: Scalar types by language name.
SCALARS: dict[str, ScalarType] = {
    t.name: t for t in (BOOL, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64, INDEX)
}


def scalar_of(t: Type) -> ScalarType:
    """The scalar (element) type of ``t``."""
    return t.elem if isinstance(t, VectorType) else t


def with_scalar(t: Type, s: ScalarType) -> Type:
    """``t`` with its scalar type replaced by ``s`` (keeps the vector length)."""
    return VectorType(s, t.n) if isinstance(t, VectorType) else s


def width(t: Type) -> int:
    """Number of scalar components (1 for scalars)."""
    return t.n if isinstance(t, VectorType) else 1


def is_literal(t: Type) -> bool:
    """True for (vectors of) literal types still waiting for a context."""
    return scalar_of(t).literal


def default_scalar(s: ScalarType) -> ScalarType:
    """The concrete default of a literal type (``i32``/``f32``); other types unchanged."""
    if s is INT_LIT:
        return I32
    if s is FLOAT_LIT:
        return F32
    return s


def default_type(t: Type) -> Type:
    """:func:`default_scalar` applied to the scalar type of ``t``."""
    return with_scalar(t, default_scalar(scalar_of(t)))


def int_range(s: ScalarType) -> tuple[int, int]:
    """The inclusive value range of integer type ``s``."""
    if s.signed:
        return -(1 << (s.bits - 1)), (1 << (s.bits - 1)) - 1
    return 0, (1 << s.bits) - 1


def mlir_type(s: ScalarType):
    """The MLIR type of scalar ``s`` (call inside an ``ir.Context``): signless ``iN``, ``i1`` for
    bool, ``index``, ``f16``/``bf16``/``f32``/``f64``."""
    from kernc.support.mlir import ir

    if s.literal:
        s = default_scalar(s)
    if s.is_index:
        return ir.IndexType.get()
    if s.is_bool:
        return ir.IntegerType.get_signless(1)
    if s.is_int:
        return ir.IntegerType.get_signless(s.bits)
    return {
        "f16": ir.F16Type.get,
        "bf16": ir.BF16Type.get,
        "f32": ir.F32Type.get,
        "f64": ir.F64Type.get,
    }[s.name]()


def exact_float(value, s: ScalarType):
    """``value`` (an int or :class:`fractions.Fraction`, e.g. the exact value of a decimal literal)
    rounded *once* to the nearest value of float type ``s`` (ties to even, subnormals included).

    Returns a Python float that holds that value exactly (every ``f16``/``bf16``/``f32`` value is a
    double), so building an MLIR constant from it rounds no further; ``None`` if it overflows ``s``.
    ``exact_float(Fraction("0.1"), F32)`` is ``float(np.float32("0.1"))``, never a double rounding.
    The rule is :func:`kernc.exact_numbers.round_to_float`, the launcher's too (scalar arguments).
    """
    from kernc.support.exact_numbers import round_to_float

    return round_to_float(value, default_scalar(s).name)
