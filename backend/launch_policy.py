"""The launch policy: how many blocks a launch runs, and whether a kernel staged by
kern-coalesce-views runs staged or as the same program compiled without the pass.

Both follow from a kernel's signature and the sizes a call binds (``env``: size symbol -> value, the
problem size ``P`` included), never from the values of the arrays:

- :func:`launch_grid`: one block per ``block`` items, or, for a kernel kern-coalesce-views maps to
  tiles (``sig.tiles``), one block per tile (:func:`tile_count`), capped at CUDA's grid x (the tiled
  kernel loops over its tiles, so any grid is correct);
- :func:`run_staged`: the staging cost model (:func:`staging_pays`: the tile fill, :func:`tile_fill`,
  against the sector use of the unstaged accesses, :func:`unstaged_sector_use`) picks the staged or
  the unstaged kernel, the choice a launch's :class:`~kernc.backend.variant.Variant` records as
  ``staged``.

:func:`kernc.backend.binding.bind` applies both to every call, on the CPU interpreter and the GPU
alike, so both devices run the same kernel for the same call.
"""

from __future__ import annotations

import functools
import math

from kernc.dialect.signature import KernelSignature
from kernc.dialect.strided import Poly

from .dtypes import numpy_dtype

#: CUDA's limit on gridDim.x (CUDA C++ Programming Guide, "Features and Technical Specifications").
MAX_GRID_X = 2**31 - 1
#: Threads per warp, and bytes per sector (the unit in which L2 and DRAM serve global accesses).
WARP, SECTOR = 32, 32
#: What an empty slot of a staged tile costs, in bytes of DRAM traffic (:func:`staging_pays`). At
#: low fill the staged kernel is bound by its tile slots, not by DRAM: on an H200, f16, f32 and f64
#: transposes with an extent of 1 (1/32 of each tile used) all moved about 29 G elements/s (115, 243,
#: 471 GB/s), while the unstaged kernel moves bytes at its sector use. Calibrated on 136 skinny
#: transposes measured there (f16, f32, f64; ``R x C`` and ``C x R`` with ``C`` from 1 to 32, the
#: long extent a multiple of 32 or odd): from 2.8 to 3.0 the choice is the faster kernel, or within
#: 8% of it, at every one.
EMPTY_SLOT_BYTES = 2.9




def tile_fill(sig: KernelSignature, env: dict) -> float | None:
    """The fraction of the element slots of a tiled kernel's tiles (``sig.tiles`` = ``[[extent,
    tile], ...]``, kern-coalesce-views) that hold an element: ``prod(extent) / prod(ceil(extent /
    tile) * tile)`` over the tiled extents evaluated in ``env`` (sizes); ``None`` when the kernel is
    not tiled or an extent is 0."""
    if not sig.tiles:
        return None
    extents = _tile_extents(sig, env)
    if not all(extents):
        return None
    return math.prod(extents) / math.prod(-(-e // t) * t for e, (_, t) in zip(extents, sig.tiles))


def _tile_extents(sig: KernelSignature, env: dict) -> list[int]:
    """The tiled extents of ``sig.tiles`` evaluated in ``env`` (sizes)."""
    return [int(Poly.parse(str(e)).evaluate(env)) for e, _ in sig.tiles]


def unstaged_sector_use(sig: KernelSignature, env: dict) -> float | None:
    """The fraction of the 32-byte sectors that the staged accesses (``sig.staged``) would use if
    the kernel ran without kern-coalesce-views: over the first warp's threads (coordinates
    delinearized from the thread id, the last fastest), the sectors a perfectly coalesced access of
    as many elements needs, over the distinct sectors the accesses touch. 1 for a transpose with
    one extent of 1 (a copy); ``1/8`` for f32 elements 8 or more apart. ``None`` without
    ``staged``."""
    if not sig.staged:
        return None
    extents = tuple(int(Poly.parse(e).evaluate(env)) for e in sig.staged["extents"])
    views = tuple((numpy_dtype(sig.param(name).dtype).itemsize,
                   tuple(int(Poly.parse(x).evaluate(env)) for x in strides))
                  for name, strides in sig.staged["views"])
    return _sector_use(extents, views)


@functools.lru_cache(maxsize=256)  # repeated launches repeat their shapes
def _sector_use(extents: tuple, views: tuple) -> float | None:
    """:func:`unstaged_sector_use` of the problem ``extents`` and the views ``((element bytes,
    (stride of each coordinate, in elements)), ...)``."""
    coords = []
    for t in range(min(WARP, math.prod(extents))):
        c = []
        for e in reversed(extents):
            t, r = divmod(t, e)
            c.append(r)
        coords.append(c[::-1])
    ideal = touched = 0
    for w, st in views:
        starts = [w * sum(a * b for a, b in zip(c, st)) for c in coords]
        touched += len({s // SECTOR for s in starts} | {(s + w - 1) // SECTOR for s in starts})
        ideal += -(-len(coords) * w // SECTOR)
    return ideal / touched if touched else None


def staging_pays(sig: KernelSignature, env: dict) -> bool:
    """Whether a launch of a kernel staged by kern-coalesce-views should run it, rather than the
    kernel compiled without the pass. Per element, the staged kernel costs about
    :data:`EMPTY_SLOT_BYTES` over its tile fill (:func:`tile_fill`; every block stages a whole
    tile however few of its slots hold elements), the unstaged one its element bytes over its
    sector use (:func:`unstaged_sector_use`); the cheaper one runs. For an f32 transpose with one
    extent ``e`` under 32 (fill ``e/32``) the unstaged kernel runs while its warps still write long
    runs (``R x e``: runs of ``32/e`` elements, up to ``e = 8``, 9 when ``R`` is a multiple of 8)
    or elements close together (``e x C``: ``e`` apart, up to ``e = 4``); f64 elements favour the
    staged kernel, f16 the unstaged one. A problem whose unstaged grid would exceed CUDA's grid x
    stays staged (the staged kernel loops over its tiles).

    Measured on an H200 (GB/s staged / unstaged, f32, about 2^24 elements): ``R x C`` with C = 1,
    4, 8, 11, 16: 243/2537, 925/2502, 1728/2433, 2245/1899, 2901/1549; ``C x R``: 236/2522, 896/950,
    1666/517, 2138/473, 2752/370. The measurements and the check that the choice is within 8% of
    the faster kernel at each are in ``tests/coalesce/test_launch_choice.py``, with 63 measured
    afterwards on kernels the calibration did not see (i8/u16 transposes, NCHW -> NHWC permutes:
    within 10% at all but one, 15% there)."""
    fill = tile_fill(sig, env)
    if fill is None:
        return True
    use = unstaged_sector_use(sig, env)
    if use is None:
        return True
    sizes = [numpy_dtype(sig.param(name).dtype).itemsize for name, _ in sig.staged["views"]]
    return fill >= EMPTY_SLOT_BYTES * len(sizes) / sum(sizes) * use


def tile_count(sig: KernelSignature, problem: int, env: dict) -> int:
    """The number of tiles of a kernel that kern-coalesce-views maps to tiles (``sig.tiles`` =
    ``[[extent, tile], ...]``), its grid (one block per tile): ``batch * prod ceil(extent / tile)`` with ``batch`` = ``P``
    over the product of the tiled extents (the problem's other coordinates, one tile plane each).
    Each thread handles several elements of its tile, so ``ceil(P / block)`` blocks would leave most
    blocks without a tile; the kernel loops over its tiles (grid-stride), so any grid is correct."""
    if not problem:
        return 0
    extents = _tile_extents(sig, env)
    plane = math.prod(extents)
    if not plane:
        return 0
    return problem // plane * math.prod(-(-e // t) for e, (_, t) in zip(extents, sig.tiles))


def run_staged(sig: KernelSignature, problem: int, env: dict) -> bool:
    """Whether a launch of ``problem`` items (sizes ``env``) runs the kernel as kern-coalesce-views
    staged it (``True``, also for a kernel without tiles: nothing to choose), rather than the same
    program compiled without the pass (``False``, when :func:`staging_pays` says the tiles would be
    mostly empty). A problem whose unstaged grid (one block per ``block`` items) would exceed CUDA's
    grid x, or an empty one, stays staged."""
    if not sig.tiles:
        return True
    unstaged_fits = bool(problem) and -(-problem // sig.block) <= MAX_GRID_X
    return not unstaged_fits or staging_pays(sig, env)


def launch_grid(sig: KernelSignature, problem: int, env: dict) -> tuple[int, int]:
    """``(grid, tiles)`` of a launch of ``problem`` items (sizes ``env``): for a kernel with tiles,
    ``tiles`` = :func:`tile_count` and one block per tile up to :data:`MAX_GRID_X` (it loops over
    the rest); otherwise ``tiles`` = 0 and ``ceil(problem / block)`` blocks (0 for an empty problem),
    which the caller must check against :data:`MAX_GRID_X`."""
    if sig.tiles:
        tiles = tile_count(sig, problem, env)
        return min(tiles, MAX_GRID_X), tiles
    return (math.ceil(problem / sig.block) if problem else 0), 0


__all__ = ["MAX_GRID_X", "WARP", "SECTOR", "EMPTY_SLOT_BYTES", "tile_fill", "unstaged_sector_use", "staging_pays",
           "tile_count", "run_staged", "launch_grid"]
