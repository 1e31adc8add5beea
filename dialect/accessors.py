"""The accessor kinds: one frozen record per kind with every fact the layers need about it.

An accessor says which element(s) of a buffer thread ``t`` of a kernel reaches and how
(``docs/design/accessors.md``). The frontend checks a program's accessors against these records,
the kern dialect's verifiers check ``kern.read``/``write``/``add`` ops against them, the lowering
dispatches on them, the outliner adds what ``@deterministic`` needs from them, and the launcher
checks arrays against their element-count requirement. A new kind is one record here plus its
lowering (``passes/lower_accessors_<family>.py``); ``docs/design/architecture.md`` lists the steps.

The records, in the order the language lists them (:data:`KINDS`)::

    kind                  modes           language args   IR args          block-wide  pair  default
    sequential            read write add  -               -                no          no    no
    strided               read write add  off, s          off, s: index    no          no    no
    strided_default       read            (strided)       off, s: index    no          no    yes
    indexed               read write add  I               I: index buffer  no          no    no
    shared                read            I               unique, target   yes         no    no
    unique                read            -               -                yes         no    no
    pair                  read write add  -               -                yes         yes   no
    pair_strided_default  read            (pair strided)  off, s: index    yes         yes   yes
    shared_sum            add             I               unique, perm     yes         no    no
    atomic                add             I               I: index buffer  no          no    no
    block_sum             write add       -               -                yes         no    no
    sum                   write add       -               -                yes         no    no
    block_max             write           -               -                yes         no    no
    block_min             write           -               -                yes         no    no
    max                   write           -               -                yes         no    no
    min                   write           -               -                yes         no    no
    view                  view            -               (view ops)       no          no    no

Where each kind is lowered (``passes/<module>.py``, :attr:`AccessorKind.lowering`) and what the
launcher needs of its buffer (:attr:`~AccessorKind.elements`, :attr:`~AccessorKind.zero_init`, the
``shared_indices`` tables it builds from ``I``: :attr:`~AccessorKind.tables`)::

    kind                  lowered in                   launcher: elements  zero-fills  tables of I
    sequential            lower_accessors_per_thread   P                   -           -
    strided               lower_accessors_per_thread   -                   -           -
    strided_default       lower_accessors_per_thread   -                   -           -
    indexed               lower_accessors_per_thread   I[t] < elements     -           -
    shared                lower_accessors_shared       I[t] < elements     -           unique target perm count
    unique                lower_accessors_unique       1                   -           -
    pair                  lower_accessors_pair         P + 1               write       -
    pair_strided_default  lower_accessors_pair         -                   -           -
    shared_sum            lower_accessors_shared_sum   I[t] < elements     -           unique target perm count
    atomic                lower_accessors_per_thread   I[t] < elements     -           -
    block_sum             lower_accessors_sum          ceil(P / B)         -           -
    sum                   lower_accessors_sum          -                   write       -
    block_max             lower_accessors_sum          ceil(P / B)         -           -
    block_min             lower_accessors_sum          ceil(P / B)         -           -
    max                   lower_accessors_sum          -                   write       -
    min                   lower_accessors_sum          -                   write       -
    view                  lower_views                  -                   -           -

(``max``/``min`` are filled with the identity of their reduction, :attr:`AccessorKind.reduce`.)

(``@deterministic`` ``shared_sum(I)`` also takes the global merge tables of ``I``,
:attr:`~AccessorKind.deterministic_tables`; ``passes/to_gpu.py`` adds them.)

``strided_default`` and ``pair_strided_default`` are the IR forms of ``strided(off, s) default v``
and ``pair strided(off, s) default v`` (:attr:`AccessorKind.default_form`); ``view`` is the kind
the signature records for ``view`` params, which have no accessor ops (``kern.view_load``/
``view_store`` instead).

Only this module spells the kinds' names; other modules compare against the records
(``access.kind is accessors.SHARED``) or read their fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from . import shared_table

#: Access modes of a buffer param. ``read``/``write``/``add`` ones are reached through an
#: accessor's ``kern.read``/``kern.write``/``kern.add`` ops; ``view`` params through view ops.
READ, WRITE, ADD, VIEW_MODE = "read", "write", "add", "view"
#: The modes of accessor ops, in op order.
OP_MODES = (READ, WRITE, ADD)


class Operand(Enum):
    """The type of one IR ``args`` operand of an accessor op."""

    #: an ``index`` value (``off``, ``s`` of ``strided(off, s)``)
    INDEX = "index"
    #: the index buffer ``I`` itself: a 1-D integer ``memref`` (``memref<?xi32>``)
    INDEX_BUFFER = "index buffer"
    #: a ``shared_indices`` table of ``I`` (``dialect/shared_table.py``): a 1-D integer ``memref``
    TABLE = "shared_indices table"


@dataclass(frozen=True)
class IrArg:
    """One ``args`` operand of an accessor op: its role (``"off"``, ``"I"``, the table ``"target"``)
    and type."""

    name: str
    type: Operand


class LanguageArg(Enum):
    """The kind of one argument of an accessor pattern in the language."""

    #: an integer expression over scalar params and size symbols (``strided(off, s)``)
    INTEGER = "integer"
    #: the name of an index buffer param (``indexed(I)``): a sequential 1-D ``u8``..``u32``/``i8``..``i32`` read
    #: buffer with one entry per item
    INDEX_BUFFER = "index buffer"


class Reach(Enum):
    """Which element(s) item ``t`` reaches (``e`` below; ``B`` the block size)."""

    ITEM = "t"                              # e = t
    STRIDED = "off + t*s"                   # e = off + t*s (reads with a default: in bounds, else v)
    INDEXED = "I[t]"                        # e = I[t]
    FIRST = "0"                             # e = 0 (every item the same element)
    BLOCK = "t / B"                         # e = the item's block
    PAIR = "t, t + 1"                       # two elements, t and t + 1
    PAIR_STRIDED = "off + t*s, off + (t+1)*s"
    VIEW = "layout(coords)"                 # any coordinates, through the view's layout


class ElementCount(Enum):
    """What the launcher requires of the element count of a buffer (the first dim of its layout)."""

    #: nothing (``strided``: the program promises ``off + t*s`` in range; a read with a default is
    #: bounds-checked in the kernel; ``sum``: element 0 of a declared ``T[1]`` or larger)
    NONE = "none"
    #: at least ``P`` elements: thread ``t`` reaches element ``t`` (``sequential``)
    PROBLEM = "P"
    #: at least ``P + 1``: thread ``t`` reaches ``t`` and ``t + 1`` (``Param.min_elements``)
    PROBLEM_PLUS_ONE = "P + 1"
    #: at least one (``Param.min_elements``)
    ONE = "1"
    #: at least one per block, ``ceil(P / B)``
    BLOCKS = "ceil(P / B)"
    #: every index value ``I[t]``, ``t < P``, addresses an element (checked on the CPU and for
    #: ``@checked`` kernels)
    INDEX_VALUES = "I[t] < elements"

    def min_elements(self, problem: str) -> str | None:
        """The :attr:`~kernc.dialect.signature.Param.min_elements` text the frontend records
        (a ``Poly`` text over ``problem``, the problem size symbol), ``None`` for conditions the
        launcher checks another way."""
        if self is ElementCount.PROBLEM_PLUS_ONE:
            return f"{problem}+1"
        if self is ElementCount.ONE:
            return "1"
        return None


class Determinism(Enum):
    """What ``@deterministic`` (bitwise reproducible results from run to run) does with a kind."""

    #: nothing to do: every element has one writer, or a fixed order of updates
    EXACT = "exact"
    #: the lowering reduces across blocks: ``@deterministic`` stores per-block partials in scratch
    #: memory and the last block combines them in block order (``passes/to_gpu.py`` adds the
    #: scratch and tables, ``passes/lower_accessors_sum.py`` / ``_shared_sum.py`` the code)
    REORDERED = "reordered"
    #: a float ``add`` through it is a set of atomics in an order that varies from run to run:
    #: ``@deterministic`` refuses it (integer adds are exact in any order)
    FLOAT_ADD_REFUSED = "float add refused"


@dataclass(frozen=True, eq=False)  # (compared and hashed by identity: one record per kind)
class AccessorKind:
    """Every fact about one accessor kind.

    - ``name``: the ``accessor`` attribute of its kern ops and ``Param.accessor`` of the signature.
    - ``spelling``: how a program writes it (``"strided(off, s) default v"``), for messages.
    - ``language``: whether it is a pattern of the language (``read shared(I)``); ``False`` for
      the IR-only ``*_default`` forms and ``view``.
    - ``modes``: the access modes that take it (``read``, ``write``, ``add``; ``view``).
    - ``language_args``: the pattern's arguments (``(("off", INTEGER), ("s", INTEGER))``).
    - ``ir_args``: the ``args`` operands of its kern ops, in order, with their types.
    - ``tables``: the ``shared_indices`` tables the kernel takes as hidden ``kind="table"`` params
      per index param (``shared``, ``shared_sum``: all four of :data:`shared_table.TABLES`); the
      ones in ``ir_args`` are the operands.
    - ``reach``: the element(s) item ``t`` reaches.
    - ``block_wide``: its ops need every thread of the block (barriers, shuffles, workgroup
      memory), past ``P`` too: lowered around the kernel's guard ``t < P``; an output op of such a
      kind is emitted unconditionally (an item that assigns nothing contributes the identity).
      Otherwise per-thread: lowered in place, an unassigned item's op may be skipped.
    - ``pair``: two elements per thread: ``2K`` results/values (the first element's ``K``
      components, then the second's).
    - ``default``: its ``kern.read`` carries the typed ``default`` attribute, the value read out of
      bounds (``*_default``).
    - ``default_form``: the kind a ``default v`` clause turns this pattern into (``strided`` ->
      ``strided_default``, ``pair`` -> ``pair_strided_default`` for ``pair strided(off, s)``).
    - ``elements``: what the launcher requires of the buffer's element count.
    - ``zero_init``: the modes in which the launcher zero-fills the buffer before the launch (also
      when ``P == 0``): ``write sum``, ``write pair`` add their parts onto it.
    - ``atomic``: its per-thread updates are atomics (several items may update one element).
    - ``deterministic``: what ``@deterministic`` does with it; ``deterministic_tables``: the
      global merge tables it then needs per index param (:data:`shared_table.MERGE_TABLES`).
    - ``adjoint_add``: for a read kind, the kind through which the adjoint (reverse-mode derivative)
      kernel adds the cotangents of what it read (``shared`` -> ``shared_sum``, ``indexed`` ->
      ``atomic``, ``unique`` -> ``sum``); ``adjoint_read``: for an update kind, the kind through
      which the adjoint kernel reads the cotangents of what it wrote (``shared_sum`` -> ``shared``,
      ``sum`` -> ``unique``). ``None``: not expressible with today's kinds.
    - ``reduce``: how a block-wide update combines the items' values: ``"add"`` (sums, and every
      other kind), ``"max"``/``"min"`` (``max``, ``min``, ``block_max``, ``block_min``: integer
      max/min by the element type's signedness, float IEEE 754-2019 ``maximum``/``minimum``);
      its identity (``-0.0``/0, ``-inf``/the type's lowest, ``+inf``/its highest) starts every
      reduction, is what an item that assigns nothing contributes, and fills ``zero_init`` buffers.
    - ``lowering``: the module of ``kernc.passes`` that lowers its ops (``passes/<lowering>.py``;
      ``kern-lower-accessors`` dispatches on it): ``"lower_accessors_shared"`` for ``shared``.
    """

    name: str
    spelling: str
    language: bool
    modes: tuple[str, ...]
    language_args: tuple[tuple[str, LanguageArg], ...]
    ir_args: tuple[IrArg, ...]
    reach: Reach
    block_wide: bool
    elements: ElementCount
    tables: tuple[str, ...] = ()
    pair: bool = False
    default: bool = False
    default_form: str | None = None
    zero_init: tuple[str, ...] = ()
    atomic: bool = False
    deterministic: Determinism = Determinism.EXACT
    deterministic_tables: tuple[str, ...] = ()
    adjoint_add: str | None = None
    adjoint_read: str | None = None
    reduce: str = "add"
    lowering: str = ""

    def __repr__(self) -> str:
        return f"<accessor {self.name}>"

    @property
    def index_param(self) -> bool:
        """Whether the pattern names an index buffer param ``I`` (``indexed(I)``, ``shared(I)``,
        ``shared_sum(I)``, ``atomic(I)``)."""
        return any(kind is LanguageArg.INDEX_BUFFER for _, kind in self.language_args)

    @property
    def strided(self) -> bool:
        """Whether its first two IR args are ``(off, s)`` of type ``index`` (``e = off + t*s``)."""
        return self.reach in (Reach.STRIDED, Reach.PAIR_STRIDED)

    @property
    def table_args(self) -> tuple[str, ...]:
        """The ``shared_indices`` tables among its IR args, in operand order."""
        return tuple(a.name for a in self.ir_args if a.type is Operand.TABLE)

    @property
    def vector(self) -> bool:
        """Whether a per-thread access of a whole element may use vector loads/stores (its element
        index is plain, it has no default and no atomics)."""
        return not (self.block_wide or self.default or self.atomic) and self.reach is not Reach.VIEW


_OFF_S = (IrArg("off", Operand.INDEX), IrArg("s", Operand.INDEX))
_I = (("I", LanguageArg.INDEX_BUFFER),)
_OFF_S_ARGS = (("off", LanguageArg.INTEGER), ("s", LanguageArg.INTEGER))
_UPDATES = (WRITE, ADD)
_ALL = (READ, WRITE, ADD)

SEQUENTIAL = AccessorKind(
    "sequential", "sequential", True, _ALL, (), (), Reach.ITEM, block_wide=False,
    elements=ElementCount.PROBLEM, adjoint_add="sequential", adjoint_read="sequential",
    lowering="lower_accessors_per_thread")
STRIDED = AccessorKind(
    "strided", "strided(off, s)", True, _ALL, _OFF_S_ARGS, _OFF_S, Reach.STRIDED, block_wide=False,
    elements=ElementCount.NONE, default_form="strided_default", adjoint_add="strided",
    adjoint_read="strided",
    lowering="lower_accessors_per_thread")
STRIDED_DEFAULT = AccessorKind(
    "strided_default", "strided(off, s) default v", False, (READ,), _OFF_S_ARGS, _OFF_S,
    Reach.STRIDED, block_wide=False, elements=ElementCount.NONE, default=True,
    lowering="lower_accessors_per_thread")
INDEXED = AccessorKind(
    "indexed", "indexed(I)", True, _ALL, _I, (IrArg("I", Operand.INDEX_BUFFER),), Reach.INDEXED,
    block_wide=False, elements=ElementCount.INDEX_VALUES, adjoint_add="atomic",
    adjoint_read="indexed",
    lowering="lower_accessors_per_thread")
SHARED = AccessorKind(
    "shared", "shared(I)", True, (READ,), _I,
    (IrArg("unique", Operand.TABLE), IrArg("target", Operand.TABLE)), Reach.INDEXED,
    block_wide=True, elements=ElementCount.INDEX_VALUES, tables=shared_table.TABLES,
    adjoint_add="shared_sum",
    lowering="lower_accessors_shared")
UNIQUE = AccessorKind(
    "unique", "unique", True, (READ,), (), (), Reach.FIRST, block_wide=True,
    elements=ElementCount.ONE, adjoint_add="sum",
    lowering="lower_accessors_unique")
PAIR = AccessorKind(
    "pair", "pair", True, _ALL, (), (), Reach.PAIR, block_wide=True,
    elements=ElementCount.PROBLEM_PLUS_ONE, pair=True, default_form="pair_strided_default",
    zero_init=(WRITE,), deterministic=Determinism.FLOAT_ADD_REFUSED, adjoint_add="pair",
    adjoint_read="pair",
    lowering="lower_accessors_pair")
PAIR_STRIDED_DEFAULT = AccessorKind(
    "pair_strided_default", "pair strided(off, s) default v", False, (READ,), _OFF_S_ARGS, _OFF_S,
    Reach.PAIR_STRIDED, block_wide=True, elements=ElementCount.NONE, pair=True, default=True,
    lowering="lower_accessors_pair")
SHARED_SUM = AccessorKind(
    "shared_sum", "shared_sum(I)", True, (ADD,), _I,
    (IrArg("unique", Operand.TABLE), IrArg("perm", Operand.TABLE)), Reach.INDEXED,
    block_wide=True, elements=ElementCount.INDEX_VALUES, tables=shared_table.TABLES,
    deterministic=Determinism.REORDERED, deterministic_tables=shared_table.MERGE_TABLES,
    adjoint_read="shared",
    lowering="lower_accessors_shared_sum")
ATOMIC = AccessorKind(
    "atomic", "atomic(I)", True, (ADD,), _I, (IrArg("I", Operand.INDEX_BUFFER),), Reach.INDEXED,
    block_wide=False, elements=ElementCount.INDEX_VALUES, atomic=True,
    deterministic=Determinism.FLOAT_ADD_REFUSED, adjoint_read="indexed",
    lowering="lower_accessors_per_thread")
BLOCK_SUM = AccessorKind(
    "block_sum", "block_sum", True, _UPDATES, (), (), Reach.BLOCK, block_wide=True,
    elements=ElementCount.BLOCKS,
    lowering="lower_accessors_sum")
SUM = AccessorKind(
    "sum", "sum", True, _UPDATES, (), (), Reach.FIRST, block_wide=True, elements=ElementCount.NONE,
    zero_init=(WRITE,), deterministic=Determinism.REORDERED, adjoint_read="unique",
    lowering="lower_accessors_sum")
BLOCK_MAX = AccessorKind(
    "block_max", "block_max", True, (WRITE,), (), (), Reach.BLOCK, block_wide=True,
    elements=ElementCount.BLOCKS, reduce="max", lowering="lower_accessors_sum")
BLOCK_MIN = AccessorKind(
    "block_min", "block_min", True, (WRITE,), (), (), Reach.BLOCK, block_wide=True,
    elements=ElementCount.BLOCKS, reduce="min", lowering="lower_accessors_sum")
MAX = AccessorKind(
    "max", "max", True, (WRITE,), (), (), Reach.FIRST, block_wide=True, elements=ElementCount.NONE,
    zero_init=(WRITE,), reduce="max", lowering="lower_accessors_sum")
MIN = AccessorKind(
    "min", "min", True, (WRITE,), (), (), Reach.FIRST, block_wide=True, elements=ElementCount.NONE,
    zero_init=(WRITE,), reduce="min", lowering="lower_accessors_sum")
VIEW = AccessorKind(
    "view", "view", False, (VIEW_MODE,), (), (), Reach.VIEW, block_wide=False,
    elements=ElementCount.NONE,
    lowering="lower_views")

#: Every kind, in the order the language lists them (messages list them in this order).
KINDS: tuple[AccessorKind, ...] = (
    SEQUENTIAL, STRIDED, STRIDED_DEFAULT, INDEXED, SHARED, UNIQUE, PAIR, PAIR_STRIDED_DEFAULT,
    SHARED_SUM, ATOMIC, BLOCK_SUM, SUM, BLOCK_MAX, BLOCK_MIN, MAX, MIN, VIEW,
)
BY_NAME: dict[str, AccessorKind] = {k.name: k for k in KINDS}
#: The accessor patterns of the language.
LANGUAGE: tuple[AccessorKind, ...] = tuple(k for k in KINDS if k.language)


def kind(name: str) -> AccessorKind:
    """The record of the kind called ``name``; ``KeyError`` if there is none."""
    return BY_NAME[name]


def for_mode(mode: str) -> tuple[AccessorKind, ...]:
    """The kinds whose ops take access ``mode`` (``read``, ``write``, ``add``), in :data:`KINDS`
    order."""
    return tuple(k for k in KINDS if mode in k.modes)


def _check_registry() -> None:
    """The records agree with each other (run at import: a wrong new record fails at once)."""
    for k in KINDS:
        for other in (k.default_form, k.adjoint_add, k.adjoint_read):
            assert other is None or other in BY_NAME, (k.name, other)
        if k.default_form:
            assert BY_NAME[k.default_form].default, k.name
        if k.adjoint_add:
            assert READ in k.modes and ADD in BY_NAME[k.adjoint_add].modes, k.name
        if k.adjoint_read:
            assert READ in BY_NAME[k.adjoint_read].modes, k.name
        assert set(k.table_args) <= set(k.tables), k.name
        assert k.lowering.startswith("lower_"), k.name
        assert k.reduce in ("add", "max", "min") and (k.reduce == "add" or k.block_wide), k.name
        assert k.index_param == bool(k.tables or any(a.type is Operand.INDEX_BUFFER for a in k.ir_args)), k.name


_check_registry()
