"""The kernel signature: what the launcher and the interpreter need to know about a kernel's params.

MLIR integers are signless and memrefs know nothing of size symbols, so the frontend records the
user-level signature of each kernel as a JSON string attribute ``kern.signature`` on the kernel
function; it survives every pass down to the ``gpu.func``. The backend (launcher, CPU interpreter)
reads it back with :meth:`KernelSignature.from_json`.

Kernel argument order (kern IR ``func.func`` and ``gpu.func`` alike): the declared params in source
order -- scalars by value, buffers as ``memref<?xT>`` over their flat storage -- then the hidden
``kind="table"`` params (``memref<?xi32>``, four per index param of ``shared(I)``/``shared_sum(I)``,
see ``docs/accessor-lowering.md``), followed by one ``index`` argument per size symbol, in the order
of :attr:`KernelSignature.sizes`. :attr:`KernelSignature.params` lists declared and hidden params in
that argument order.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields

from . import accessors, shared_table
from .strided import Poly

SIGNATURE_ATTR = "kern.signature"
#: The other attribute the backend reads off the gpu IR: the discardable attribute of an
#: ``nvgpu.mma.sync`` whose ``i8`` operands are unsigned, the string ``"u8"`` (both multiplicands ``.u8``). kern-mma-contractions sets it, kern-lower-unsigned-mma
#: lowers it (the ``nvgpu`` dialect has ``.s8`` only), the CPU interpreter reads the bytes unsigned.
PTX_TYPE_ATTR = "kern.ptx_type"

#: Scalar dtype names of the language and their numpy dtype names.
NUMPY_DTYPES = {
    "bool": "bool",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
    "f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
    "index": "int64",
}


@dataclass
class Param:
    """One declared kernel parameter.

    - ``kind``: ``"scalar"``, ``"buffer"`` or ``"table"`` (a hidden ``shared_indices`` table the
      launcher computes from the index param ``table_of``; users never pass it).
    - ``dtype``: language dtype name (``"f32"``, ``"u32"``, ``"index"``, ...); for buffers the element
      (storage) dtype; ``"u32"`` for tables.
    - ``access``: ``"read"``, ``"write"`` or ``"add"`` for buffers, ``None`` for scalars.
    - ``accessor``: the accessor kind's name (buffers only): a record of the accessor registry
      (``dialect/accessors.py``, :data:`~kernc.dialect.accessors.KINDS`; ``"view"`` for views).
    - ``index_param``: the name of the index buffer of the kinds that take one
      (:attr:`AccessorKind.index_param <kernc.dialect.accessors.AccessorKind.index_param>`), else
      ``None``.
    - ``dims``: the declared logical dims, each an int or a size-symbol name (``["n", 3]``).
    - ``components``: elements' component count (1 for ``f32[n]``, 3 for ``f32[n, 3]``).
    - ``layout``: the storage layout in CuTe notation over the dims (``"(n,3):(1,n)"``).
    - ``storage_shape``: the shape the launcher expects of the array that holds the buffer, each
      entry an int or a size-symbol name (``["3", "n"]`` for ``soa``); symbols are bound from it.
      ``[]`` for tables.
    - ``compute``: the compute dtype of the buffer's values when the program chose one with a
      ``compute f32|f64`` clause; ``None`` means the storage dtype after ``f16``/``bf16`` -> ``f32``
      promotion.
    - ``zero_init``: the launcher zero-fills the buffer before the launch (also when ``P == 0``):
      ``write sum`` and ``write pair``.
    - ``min_elements``: a :class:`kernc.dialect.strided.Poly` text over size symbols that the number
      of elements (the first dim) must reach (the kind's ``elements``:
      :meth:`ElementCount.min_elements <kernc.dialect.accessors.ElementCount.min_elements>`,
      ``"n+1"`` for ``pair`` over ``n``, ``"1"`` for ``unique``); ``None`` otherwise.
    - ``table_of`` / ``table_field``: for ``kind="table"``, the index param and which table
      (``dialect/shared_table.py``: one of ``TABLES``, or for ``@deterministic`` shared sums of
      ``MERGE_TABLES``).
    - ``tensor_map``: for ``kind="tensor_map"`` (``kern-wgmma-contractions``' TMA loads: a
      ``!llvm.ptr`` argument, the address of a 128-byte ``CUtensorMap`` in global memory, or on the CPU
      interpreter a :class:`kernc.backend.tensor_map.TensorMap`), the map the launcher builds:
      ``{"view": the view param, "dims": [Poly texts, innermost first], "strides": [element strides of
      dims 1.., Poly texts], "box": [ints, innermost first], "swizzle": bytes}``; an im2col-mode map
      (:class:`kernc.backend.tensor_map.Im2colTensorMap`, a 2-d convolution's NHWC input) adds
      ``"mode": "im2col"`` and the convolution's geometry as parameter names or literals, W first:
      ``"out"`` (OW, OH), ``"filter"`` (S, R), ``"stride"``, ``"dilation"``, ``"pad"``, and ``"taps"``
      (the loop levels of the W tap, the H tap and the channel); ``"box"`` is then ``[channels,
      pixels]``.
    - ``scratch_size``: for ``kind="scratch"`` (device memory the launcher allocates zero-filled for
      each launch, e.g. the per-block partial sums of ``@deterministic`` reductions), the number of
      elements as a :class:`~kernc.dialect.strided.Poly` text over size symbols and ``__grid`` (the
      number of blocks).
    """

    name: str
    kind: str
    dtype: str
    access: str | None = None
    accessor: str | None = None
    index_param: str | None = None
    dims: list = field(default_factory=list)
    components: int = 1
    layout: str | None = None
    storage_shape: list = field(default_factory=list)
    compute: str | None = None
    zero_init: bool = False
    min_elements: str | None = None
    table_of: str | None = None
    table_field: str | None = None
    scratch_size: str | None = None
    tensor_map: dict | None = None

    @property
    def accessor_kind(self) -> accessors.AccessorKind:
        """The record of a buffer's accessor kind (``dialect/accessors.py``); ``KeyError`` for a
        param without one (scalars, tables) or with an unknown one (:meth:`KernelSignature.problem`
        refuses those)."""
        return accessors.BY_NAME[self.accessor]

    @property
    def may_write(self) -> bool:
        """Whether this is a buffer the kernel may write: ``write``, ``add`` or ``view`` access (the
        outputs ``kernc run`` allocates and saves)."""
        return self.kind == "buffer" and self.access in (accessors.WRITE, accessors.ADD, accessors.VIEW_MODE)


@dataclass
class KernelSignature:
    """A kernel's launch contract.

    ``problem_size`` is the name of the size symbol (or ``index`` scalar param) that gives ``P``;
    ``block`` the block size (threads per block, a power of two 32..1024); ``sizes`` the size
    symbols passed as trailing ``index`` arguments. ``extra`` are hidden arguments that lowering
    added after the size symbols (scratch buffers and tables of ``@deterministic`` reductions).
    ``tiles`` (kern-coalesce-views): ``[[extent, tile], ...]`` when the kernel maps blocks to tiles
    of an N-D problem (extents as Poly texts); the grid is then one block per tile,
    ``P / prod(extent) * prod ceil(extent / tile)`` (the problem's other coordinates are a batch of
    tile planes), instead of ``ceil(P / block)``.
    """

    name: str
    params: list[Param]
    sizes: list[str]
    problem_size: str
    block: int = 256
    attributes: list[str] = field(default_factory=list)
    extra: list[Param] = field(default_factory=list)
    tiles: list | None = None  # kern-coalesce-views: [[extent, tile], ...]
    #: kern-map-groups (reductions across items): ``{"extents": [the reduced coordinates'
    #: extents, Poly texts], "per_block": groups per block}``; the grid is then
    #: ``ceil(P / prod(extents) / per_block)`` blocks (the kernel loops over its groups)
    groups: dict | None = None
    #: kern-coalesce-views: the staged accesses as the kernel without the pass would make them, for
    #: the launch's choice between the two (``binding.staging_pays``): ``{"extents": [extent of each
    #: problem coordinate, slowest first], "views": [[param, [stride of each coordinate in the
    #: view, in elements]], ...]}`` (Poly texts)
    staged: dict | None = None
    #: a bound on the magnitude constants give ``index`` values: the largest constant ``index``
    #: expression (a literal stride, ``256 * 256``, a functional layout's constant) and what
    #: constants of other types bring through conversions (``index(70000i32)``, ``s * 1000i64``;
    #: the range ``2^w - 1`` of a conversion that can make a small value large, ``index(u32(s))``;
    #: ``2^64`` where nothing bounds it). The launcher's choice of 32-bit index arithmetic takes it
    #: into account like an ``index`` scalar (``binding.index_products_overflow``); found by the
    #: frontend (``frontend/index_width.py``)
    index_literal_max: int = 0
    #: the scalar params other than ``index`` ones whose values reach ``index`` arithmetic, by any
    #: route (``index(...)``, ``strided(off, s)`` arguments, loop bounds, locals); the launcher
    #: bounds them like ``index`` scalars
    index_inputs: list = field(default_factory=list)
    #: a bound on the magnitude of every ``index`` value of the kern IR, as a program of
    #: ``dialect/index_bound.py`` the launcher evaluates on the call's scalars and sizes (32-bit
    #: ``index`` code only when it is below 2^31); found by the frontend (``frontend/index_width.py``)
    index_bound: list = field(default_factory=list)
    #: the buffer params the kernel reads and those it writes (stores to, for a view); ``None``
    #: (a signature without them, hand-written IR): every ``read``/``view`` param, every
    #: ``write``/``add``/``view`` param. The launcher refuses memory shared by a written buffer
    #: and another accessed one (``binding.check_aliasing``) ...
    reads: list | None = None
    writes: list | None = None
    #: ... except for these ``[read, written]`` pairs passed one array (the same address and
    #: extent): every item reads and writes the same element of both (``frontend/aliasing.py``)
    in_place: list = field(default_factory=list)
    #: the kernel attribute ``@tile(BM, BN, BK)`` (kern-tile-contractions' configuration):
    #: ``{"tile": [BM, BN, BK], "at": [file, line, column]}`` (where the attribute is written, for
    #: the error when it cannot fit); ``None`` without one
    tile_config: dict | None = None
    #: the kernel attributes of kern-mma-contractions: ``{"force": [file, line, column]}`` for
    #: ``@tensor_cores`` (tensor cores or a located error, never CUDA cores silently) and/or
    #: ``{"tf32": [file, line, column]}`` for ``@tf32`` (f32 operands on tensor cores, rounded to
    #: TF32); ``None`` without either
    tensor_cores: dict | None = None
    #: kern-tile-contractions: ``{"tile": [BM, BN, BK], "forced": bool}`` (``forced``: by ``@tile``)
    #: when it tiled the kernel; the launcher runs the untiled build for small problems
    #: (``launch_policy.run_tiled``); ``None`` otherwise
    contraction: dict | None = None
    #: bytes of dynamic workgroup memory the kernel's launch must provide (``cuLaunchKernel``'s
    #: ``sharedMemBytes``; over 48 KiB, with the ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``
    #: opt-in): the size of its one ``gpu.dynamic_shared_memory`` buffer that
    #: ``kern-dynamic-workgroup-memory`` carved its workgroup buffers from; 0 (left out of the
    #: JSON) for a kernel with static workgroup memory only
    dynamic_shared_bytes: int = 0

    def written(self) -> list[str]:
        """The names of the buffer params the kernel writes: :attr:`writes` (a ``view`` it only reads
        is not one), or, for a signature without it, every ``write``/``add``/``view`` param."""
        if self.writes is not None:
            return list(self.writes)
        return [p.name for p in self.params if p.may_write]

    def to_json(self) -> str:
        """Serialise deterministically (sorted keys) for the ``kern.signature`` attribute."""
        # (shallow field dicts: dataclasses.asdict deep-copies every leaf, a third of lowering time)
        data = {f: getattr(self, f) for f in _SIGNATURE_FIELDS}
        data["params"] = [vars(p) for p in self.params]
        data["extra"] = [vars(p) for p in self.extra]
        for key in ("tiles", "staged", "tile_config", "groups", "contraction", "tensor_cores"):  # only present when set
            if data.get(key) is None:
                data.pop(key, None)
        for key in ("index_literal_max", "index_inputs", "index_bound", "in_place", "dynamic_shared_bytes"):  # only present when a kernel has them
            if not data[key]:
                del data[key]
        for key in ("reads", "writes"):
            if data[key] is None:
                del data[key]
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "KernelSignature":
        """Parse the ``kern.signature`` attribute text; raises ``ValueError`` on malformed input
        (not JSON, a missing or unknown field, a field of the wrong kind)."""
        try:
            data = json.loads(text)
            params = [Param(**p) for p in data.pop("params")]
            extra = [Param(**p) for p in data.pop("extra", [])]
            return cls(params=params, extra=extra, **data)
        except json.JSONDecodeError:
            raise
        except (KeyError, TypeError, AttributeError) as err:
            raise ValueError(f"malformed kernel signature: {type(err).__name__}: {err}") from None

    @property
    def shared_accesses(self) -> list[Param]:
        """The buffer params read through ``shared(I)`` or updated through ``shared_sum(I)`` (the
        accesses whose staging the launcher chooses, ``launch_policy.shared_pays``), in order."""
        return [p for p in self.params if p.kind == "buffer"
                and p.accessor in (accessors.SHARED.name, accessors.SHARED_SUM.name)]

    def param(self, name: str) -> Param:
        """The param called ``name``; ``KeyError`` if there is none."""
        for p in self.params + self.extra:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def arg_names(self) -> list[str]:
        """Names of the kernel's arguments in ABI order: params, size symbols, then ``extra``."""
        return [p.name for p in self.params] + list(self.sizes) + [p.name for p in self.extra]

    def problem(self, arg_kinds: list[str] | None = None) -> str | None:
        """The first way this signature breaks the launch contract, or ``None``: a field of the
        wrong kind or out of range (``block`` a power of two in 32..1024, known attributes, kinds
        and dtypes, unique argument names, ``problem_size`` over size symbols or integer scalars)
        and, given ``arg_kinds`` (per argument of the function's type, not counting a ``gpu.func``'s
        workgroup buffers: ``"memref"``, ``"index"`` or ``"scalar"``), an argument list that does not match :attr:`arg_names`. The frontend only writes valid
        signatures; this checks hand-edited IR (``kernc opt``) before the passes rely on it."""
        if not isinstance(self.name, str) or not self.name:
            return "'name' must be a non-empty string"
        if type(self.block) is not int or not 32 <= self.block <= 1024 or self.block & (self.block - 1):
            return f"'block' must be a power of two between 32 and 1024, got {self.block!r}"
        if not isinstance(self.attributes, list) or not all(a in KERNEL_ATTRIBUTES for a in self.attributes):
            return f"'attributes' must be a list of {', '.join(map(repr, KERNEL_ATTRIBUTES))}, got {self.attributes!r}"
        if not isinstance(self.sizes, list) or not all(isinstance(n, str) and n for n in self.sizes):
            return f"'sizes' must be a list of size symbol names, got {self.sizes!r}"
        for group in ("params", "extra"):
            items = getattr(self, group)
            if not isinstance(items, list):
                return f"'{group}' must be a list"
            for p in items:
                if not (isinstance(p.name, str) and p.name):
                    return f"a param of '{group}' has no name"
                if not isinstance(p.kind, str) or p.kind not in PARAM_KINDS:
                    return f"param '{p.name}': 'kind' must be one of {', '.join(PARAM_KINDS)}, got {p.kind!r}"
                if p.kind == "tensor_map" and not isinstance(p.tensor_map, dict):
                    return f"param '{p.name}': a tensor_map param needs its 'tensor_map' description"
                if not isinstance(p.dtype, str) or p.dtype not in NUMPY_DTYPES:  # ([] is unhashable)
                    return f"param '{p.name}': unknown dtype {p.dtype!r}"
                if type(p.components) is not int or p.components < 1:
                    return f"param '{p.name}': 'components' must be a positive integer, got {p.components!r}"
                if not isinstance(p.dims, list) or not isinstance(p.storage_shape, list):
                    return f"param '{p.name}': 'dims' and 'storage_shape' must be lists"
                if p.kind == "buffer" and p.accessor not in accessors.BY_NAME:
                    return (f"param '{p.name}': unknown accessor {p.accessor!r} (one of "
                            f"{', '.join(accessors.BY_NAME)})")
                if p.kind == "table" and p.table_field not in shared_table.TABLES + shared_table.MERGE_TABLES:
                    return f"param '{p.name}': unknown table {p.table_field!r}"
        names = self.arg_names
        if len(set(names)) != len(names):
            return "argument names repeat"
        int_scalars = {p.name for p in self.params  # `over m` may name any integer scalar param
                       if p.kind == "scalar" and NUMPY_DTYPES[p.dtype].startswith(("int", "uint"))}
        try:
            unknown = set(Poly.parse(self.problem_size).symbols) - set(self.sizes) - int_scalars
        except (ValueError, TypeError, AttributeError):
            return f"'problem_size' must be a product of size symbols, got {self.problem_size!r}"
        if unknown or not self.problem_size.strip():
            return f"'problem_size' {self.problem_size!r} names no size symbol or integer scalar param"
        if self.tiles is not None and not (
                isinstance(self.tiles, list)
                and all(isinstance(t, list) and len(t) == 2 and type(t[1]) is int and t[1] > 0 for t in self.tiles)):
            return f"'tiles' must be a list of [extent, tile] pairs, got {self.tiles!r}"
        if type(self.index_literal_max) is not int or self.index_literal_max < 0:
            return f"'index_literal_max' must be a non-negative integer, got {self.index_literal_max!r}"
        if type(self.dynamic_shared_bytes) is not int or self.dynamic_shared_bytes < 0:
            return f"'dynamic_shared_bytes' must be a non-negative integer, got {self.dynamic_shared_bytes!r}"
        scalars = {p.name for p in self.params if p.kind == "scalar"}
        if not isinstance(self.index_inputs, list) or not all(n in scalars for n in self.index_inputs):
            return f"'index_inputs' must be a list of scalar param names, got {self.index_inputs!r}"
        from .index_bound import param_names, problem as bound_problem

        bad = bound_problem(self.index_bound)
        if bad is None and not param_names(self.index_bound) <= scalars:
            bad = "a 'p' node names no scalar param"
        if bad is not None:
            return f"'index_bound' {bad}"
        buffers = {p.name for p in self.params if p.kind == "buffer"}
        for key in ("reads", "writes"):
            listed = getattr(self, key)
            if listed is not None and not (isinstance(listed, list) and all(
                    isinstance(n, str) and n in buffers for n in listed)):
                return f"'{key}' must be a list of buffer param names, got {listed!r}"
        if not (isinstance(self.in_place, list) and all(
                isinstance(x, list) and len(x) == 2 and all(isinstance(n, str) and n in buffers for n in x)
                for x in self.in_place)):
            return f"'in_place' must be a list of [read, written] buffer param name pairs, got {self.in_place!r}"
        if self.staged is not None and not _valid_staged(self.staged, {p.name for p in self.params}):
            return (f"'staged' must be {{\"extents\": [extent, ...], \"views\": [[param, [stride per "
                    f"extent]], ...]}}, got {self.staged!r}")
        if self.tile_config is not None and not (
                isinstance(self.tile_config, dict) and set(self.tile_config) == {"tile", "at"}
                and isinstance(self.tile_config["tile"], list) and len(self.tile_config["tile"]) == 3
                and all(type(n) is int and n > 0 for n in self.tile_config["tile"])
                and isinstance(self.tile_config["at"], list) and len(self.tile_config["at"]) == 3):
            return (f"'tile_config' must be {{\"tile\": [BM, BN, BK], \"at\": [file, line, column]}}, "
                    f"got {self.tile_config!r}")
        if self.tensor_cores is not None and not (
                isinstance(self.tensor_cores, dict) and self.tensor_cores
                and set(self.tensor_cores) <= {"force", "tf32"}
                and all(isinstance(at, list) and len(at) == 3 for at in self.tensor_cores.values())):
            return (f"'tensor_cores' must be {{\"force\"/\"tf32\": [file, line, column]}}, "
                    f"got {self.tensor_cores!r}")
        if arg_kinds is None:
            return None
        if len(arg_kinds) != len(names):
            return f"the signature lists {len(names)} arguments, the function has {len(arg_kinds)}"
        kinds = {p.name: ("memref" if p.kind != "scalar" else "index" if p.dtype == "index" else "scalar")
                 for p in self.params + self.extra}
        kinds.update({n: "index" for n in self.sizes})
        for i, (name, have) in enumerate(zip(names, arg_kinds)):
            if kinds[name] != have:
                return f"argument #{i} ('{name}') should be {_KIND_WORDS[kinds[name]]}, the function's is {_KIND_WORDS[have]}"
        return None


_SIGNATURE_FIELDS = tuple(f.name for f in fields(KernelSignature))


def _valid_staged(staged, params: set) -> bool:
    """Whether ``staged`` has the shape of :attr:`KernelSignature.staged`."""
    if not isinstance(staged, dict) or set(staged) != {"extents", "views"}:
        return False
    extents, views = staged["extents"], staged["views"]
    if not (isinstance(extents, list) and extents and all(isinstance(e, str) for e in extents)):
        return False
    return isinstance(views, list) and all(
        isinstance(v, list) and len(v) == 2 and v[0] in params and isinstance(v[1], list)
        and len(v[1]) == len(extents) and all(isinstance(x, str) for x in v[1]) for v in views)


#: Param kinds (see :class:`Param`) and kernel attributes a signature may hold.
PARAM_KINDS = ("scalar", "buffer", "table", "scratch", "tensor_map")
KERNEL_ATTRIBUTES = ("deterministic", "checked")
_KIND_WORDS = {"memref": "a memref", "index": "an index", "scalar": "a scalar (not index, not a memref)"}
