"""The item-to-thread mapping of a kernel: how its items map to blocks, threads and per-thread loops.

A kernel runs one *item* per instance of its body: ``t`` of ``over n``, ``(i, j)`` of ``over (i, j) in
(R, C)``. The items' coordinates are their linear index ``t`` delinearized over ``extents``, last
coordinate fastest (``kern.delinearize``; one coordinate for a 1-D problem), and ``P`` is the
number of items, the product of the extents. :class:`ItemMapping` says which thread of which block
runs which item; ``kern-to-gpu`` attaches it to every ``gpu.func`` it builds as the
``kern.mapping`` attribute (JSON text, :meth:`ItemMapping.to_json`), and the passes that remap
items to threads rewrite it (``kern-coalesce-views``). The contract is in ``docs/gpu-ir.md``.

Two forms exist today:

- *linear* (``tile is None``, what ``kern-to-gpu`` makes): block ``b`` owns the ``B`` items
  ``b*B .. b*B + B - 1`` of the linear order, thread ``tid`` of it runs item ``t = b*B + tid``
  once (``kern.thread_id``), under the guard ``t < P``; the grid is ``ceil(P / B)`` blocks.
- *tiled* (``kern-coalesce-views``): block ``b`` owns tiles of ``tile[c]`` items along each
  coordinate ``c`` (1: the coordinate is fixed per tile, a *batch* coordinate), one tile per trip
  of a block-uniform grid-stride loop over the tiles ``b, b + grid, ...``; tiles are numbered in
  row-major order over the tile grid (last coordinate fastest), and the grid is one block per
  tile, ``prod_c ceil(extents[c] / tile[c])`` (any grid is correct: the loop). Thread ``tid``
  runs ``values`` items of each tile, the positions ``thread_values(tid + B*k)``, ``k < values``,
  of a CuTe layout over the tile's positions in column-major order (CuTe's thread-value, "TV",
  layout). The guard is then per item: ``all coordinates < extents``.

The next schedules fit the same record: a block owning a tile of items with each thread a
micro-tile (``thread_values`` with a value mode of several items per thread, per coordinate), and
a group of items reduced by a warp or a block (a loop over the items of a tile).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, fields

from .strided import Poly

MAPPING_ATTR = "kern.mapping"


@dataclass(frozen=True)
class ItemMapping:
    """How a kernel's items map to blocks and threads (see the module docstring).

    - ``block``: threads per block ``B`` (``known_block_size``).
    - ``extents``: the extents of the items' coordinates, slowest first, as ``Poly`` texts over
      size symbols (``["R", "C"]``; ``[P]`` for a 1-D problem or one whose extents are not size
      symbols or constants).
    - ``tile``: ``None`` (linear) or a block's tile, one entry per coordinate.
    - ``values``: items per thread (per tile): 1 for linear.
    - ``thread_values``: the TV layout in CuTe notation, ``(thread, value) -> position in the tile``
      (positions in column-major order over ``tile``; linear: over the block's ``B`` items).
    - ``grid_stride``: blocks loop over tiles (the launch may have fewer blocks than tiles).
    """

    block: int
    extents: tuple
    tile: tuple | None = None
    values: int = 1
    thread_values: str = ""
    grid_stride: bool = False

    @classmethod
    def linear(cls, block: int, extents) -> "ItemMapping":
        """``kern-to-gpu``'s mapping: item ``t = b*B + tid``, one per thread."""
        return cls(block, tuple(extents), None, 1, f"({block},1):(1,0)", False)

    @classmethod
    def tiled(cls, block: int, extents, tiled: tuple[int, int], tile: tuple[int, int]) -> "ItemMapping":
        """Tiles of ``tile = (TI, TJ)`` items along the coordinates ``tiled = (i, j)`` (``j`` after
        ``i``; the other coordinates are batch ones), threads laid row by row over the tile:
        thread ``tid`` is column ``tid % TJ`` of row ``tid / TJ``, its ``K = TI*TJ/B`` items the
        rows ``tid / TJ + k * (B / TJ)`` (``kern-coalesce-views``: 32x32 tiles of 256 threads, 4
        items each). ``ValueError`` unless ``TJ`` divides ``B`` and ``B / TJ`` divides ``TI``."""
        (i, j), (ti, tj) = tiled, tile
        if not (0 <= i < j < len(extents)) or block % tj or ti % (block // tj):
            raise ValueError(f"no row-by-row thread layout of {block} threads over a {ti}x{tj} tile "
                             f"of coordinates {i}, {j} of {len(extents)}")
        rows = block // tj  # tile rows the block covers per pass
        per = [1] * len(extents)
        per[i], per[j] = ti, tj
        # tile positions are column-major over ``per``: (a, b) of (i, j) at a*[stride of i] + b*[..]
        si = math.prod(per[:i])
        sj = math.prod(per[:j])
        tv = f"(({tj},{rows}),{ti // rows}):(({sj},{si}),{rows * si})"
        return cls(block, tuple(extents), tuple(per), ti // rows, tv, True)

    # -- the launch ------------------------------------------------------------------------------
    def blocks(self, env: dict) -> int:
        """The number of blocks that give every item a thread (``env``: size symbol values):
        ``ceil(P / B)`` (linear) or one per tile; a grid-stride mapping runs with fewer too."""
        extents = [Poly.parse(e).evaluate(env) for e in self.extents]
        if self.tile is None:
            return -(-math.prod(extents) // self.block)
        return math.prod(-(-e // t) for e, t in zip(extents, self.tile))

    @property
    def grid(self) -> str:
        """The grid formula, for people: ``ceil((R*C)/256)``, ``ceil(R/32)*ceil(C/32)*N``."""
        if self.tile is None:
            return f"ceil(({'*'.join(self.extents)})/{self.block})"
        return "*".join(e if t == 1 else f"ceil({e}/{t})" for e, t in zip(self.extents, self.tile))

    def launch_tiles(self) -> list | None:
        """``KernelSignature.tiles`` of this mapping, what the launcher reads today: ``[[extent,
        tile], ...]`` of the tiled coordinates (``None`` for linear)."""
        if self.tile is None:
            return None
        return [[e, t] for e, t in zip(self.extents, self.tile) if t != 1]

    # -- items -----------------------------------------------------------------------------------
    def tile_position(self, tid: int, k: int) -> tuple:
        """The tile coordinates (one per ``extents``; linear: the position in the block's items)
        of value ``k`` of thread ``tid``: ``thread_values(tid + B*k)`` unflattened."""
        import kernc.layout as KL  # (only for inspection: the passes read the record's numbers)

        if not (0 <= tid < self.block and 0 <= k < self.values):
            raise ValueError(f"no value {k} of thread {tid} in {self}")
        pos = KL.parse_layout(self.thread_values)(tid + self.block * k)
        if self.tile is None:
            return (pos,)
        out = []
        for t in self.tile:
            out.append(pos % t)
            pos //= t
        return tuple(out)

    # -- text ------------------------------------------------------------------------------------
    def to_json(self) -> str:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        data["extents"] = list(self.extents)
        data["tile"] = None if self.tile is None else list(self.tile)
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> "ItemMapping":
        """Parse a ``kern.mapping`` attribute; ``ValueError`` if malformed or inconsistent."""
        try:
            data = json.loads(text)
            if not isinstance(data, dict):
                raise TypeError("not a JSON object")
            extents = data.pop("extents")
            tile = data.pop("tile", None)
            m = cls(extents=tuple(extents), tile=None if tile is None else tuple(tile), **data)
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise ValueError(f"malformed item mapping: {type(err).__name__}: {err}") from None
        problem = m.problem()
        if problem:
            raise ValueError(f"bad item mapping: {problem}")
        return m

    def problem(self) -> str | None:
        """The first inconsistency of the record, or ``None``."""
        if type(self.block) is not int or not 32 <= self.block <= 1024 or self.block & (self.block - 1):
            return f"'block' must be a power of two between 32 and 1024, got {self.block!r}"
        if not self.extents or not all(isinstance(e, str) for e in self.extents):
            return f"'extents' must be a list of Poly texts, got {list(self.extents)!r}"
        try:
            for e in self.extents:
                Poly.parse(e)
        except ValueError as err:
            return f"bad extent: {err}"
        if type(self.values) is not int or self.values < 1:
            return f"'values' must be a positive integer, got {self.values!r}"
        if self.tile is not None:
            if len(self.tile) != len(self.extents) or not all(type(t) is int and t > 0 for t in self.tile):
                return f"'tile' must have one positive size per extent, got {list(self.tile)!r}"
            if math.prod(self.tile) != self.block * self.values:
                return f"a tile of {math.prod(self.tile)} items for {self.block} threads of {self.values} items"
        elif self.values != 1 or self.grid_stride:
            return "a linear mapping has one item per thread and no grid-stride loop"
        if not isinstance(self.thread_values, str) or not self.thread_values:
            return "'thread_values' must be a layout text"
        return None


def of_function(fn) -> ItemMapping | None:
    """The ``kern.mapping`` of a ``gpu.func`` (``None`` without one); ``ValueError`` if malformed."""
    from kernc.support.mlir import ir

    if MAPPING_ATTR not in fn.attributes:
        return None
    return ItemMapping.from_json(ir.StringAttr(fn.attributes[MAPPING_ATTR]).value)
