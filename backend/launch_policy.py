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

import numpy as np

from kernc.dialect import accessors
from kernc.dialect.signature import KernelSignature
from kernc.dialect.strided import Poly, StridedLayout

from .dtypes import numpy_dtype

#: CUDA's limit on gridDim.x (CUDA C++ Programming Guide, "Features and Technical Specifications").
MAX_GRID_X = 2**31 - 1
#: Threads per warp, and bytes per sector (the unit in which L2 and DRAM serve global accesses).
WARP, SECTOR = 32, 32
#: What an empty slot of a staged tile costs, in bytes of DRAM traffic (:func:`staging_pays`),
#: calibrated on an H200: the measurements are in ``docs/performance.md`` ("The staging cost model").
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

    The measurements it was calibrated on: ``docs/performance.md`` ("The staging cost model")."""
    fill = tile_fill(sig, env)
    if fill is None:
        return True
    use = unstaged_sector_use(sig, env)
    if use is None:
        return True
    sizes = [numpy_dtype(sig.param(name).dtype).itemsize for name, _ in sig.staged["views"]]
    return fill >= EMPTY_SLOT_BYTES * len(sizes) / sum(sizes) * use


#: The items :func:`shared_read_traffic` counts at most (whole blocks, evenly spread).
SAMPLE_ITEMS = 1 << 16


def _xp(a):
    """numpy or CuPy, as the array ``a``."""
    if isinstance(a, np.ndarray):
        return np
    import cupy

    return cupy


def _element_loads(p, env: dict) -> tuple[int, int, list[int]] | None:
    """How one lane loads an element of buffer param ``p`` (``shared``/``indexed`` read alike):
    ``(element stride, start, [offset of each load instruction])`` in bytes from the buffer's base;
    ``None`` for a layout that is not one flat ``(element[, component])`` mode pair (``as
    caspar``'s planes of chunks, nested modes), which :func:`shared_pays` leaves staged.
    An element whose components are contiguous and whose size is 8 or 16 bytes, or a multiple of
    16 (8), loads as 16- (8-) byte vectors, as ``lower_accessors_per_thread.vector_plan`` makes
    them for an aligned buffer; any other one as one load per component."""
    size = numpy_dtype(p.dtype).itemsize
    try:
        lay = StridedLayout.parse(p.layout)
    except ValueError:
        return None
    if lay.rank > 2:
        return None
    stride = [int(d.evaluate(env)) for d in lay.stride]
    start = int(lay.start.evaluate(env)) * size
    K = int(p.components)
    if lay.rank < 2:
        return stride[0] * size, start, [0]
    d0, d1 = stride
    for v in (16, 8):
        w = v // size
        if d1 == 1 and w >= 2 and K % w == 0 and d0 % w == 0 and v % size == 0:
            return d0 * size, start, [k * v for k in range(K // w)]
    return d0 * size, start, [c * d1 * size for c in range(K)]


def _distinct_per_row(sectors, valid) -> int:
    """Sum over the rows of ``sectors`` (``(warps, 32)`` ints: the sector each lane touches) of the
    distinct sectors among the row's ``valid`` lanes (a prefix of each row): the sectors of one
    load instruction of every warp, as the interpreter counts them (``backend/interpreter``)."""
    xp = _xp(sectors)
    s = xp.where(valid, sectors, sectors[:, :1])  # (invalid lanes repeat lane 0: no new sector)
    s.sort(axis=1)
    distinct = 1 + (s[:, 1:] != s[:, :-1]).sum(axis=1)
    return int((distinct * valid[:, 0]).sum())


def shared_read_traffic(p, table, env: dict) -> dict:
    """The global load traffic that differs between ``shared(I)`` and ``indexed(I)`` for the read
    of buffer param ``p`` on the ``shared_indices`` table ``table`` (sizes ``env``):
    ``{"indexed": (sectors, requests), "shared": (sectors, requests)}``. Both load ``I[t]`` (or
    ``target[t]``, the same pattern) once per thread, which is left out. ``indexed``: every warp
    loads its lanes' elements (one request per load instruction, :func:`_element_loads`; its
    distinct sectors). ``shared``: in each block the first ``ceil(count/32)`` warps load
    ``unique[b*B + tid]`` for ``tid < count`` (one request, 4 bytes a lane) and the distinct
    elements, ascending, then nothing more from global memory. The interpreter's counters of the
    two kernels differ by exactly these numbers (``tests/accessors/test_shared_choice.py``).
    Above :data:`SAMPLE_ITEMS` items only every ``k``-th full block is counted (about
    ``SAMPLE_ITEMS`` items, the same blocks for both forms), so the choice costs a few
    milliseconds at any size (2^20 items: all blocks took half as long as the interpreter's
    launch); the numbers are then those of the sampled blocks.
    ``None`` where :func:`_element_loads` gives no model of the element's loads."""
    xp = _xp(table.indices)
    B, P = table.block_size, table.problem_size
    plan = _element_loads(p, env)
    if plan is None:
        return None
    es, start, loads = plan
    nb = table.count.shape[0]
    count, unique, I = table.count, table.unique, table.indices
    if P > SAMPLE_ITEMS:  # every step-th full block: the same blocks for both forms
        step = -(-(P // B) // (SAMPLE_ITEMS // B))
        rows = xp.arange(0, P // B, step)
        count, unique = count[rows], unique.reshape(nb, B)[rows].reshape(-1)
        I = I[:P // B * B].reshape(-1, B)[rows].reshape(-1)
        P, nb = int(I.shape[0]), int(rows.shape[0])
    nwarp = -(-P // WARP)
    elems = xp.zeros(nwarp * WARP, dtype=xp.int64)
    elems[:P] = I
    valid = (xp.arange(nwarp * WARP) < P).reshape(nwarp, WARP)
    ind_sec = sum(_distinct_per_row(((elems * es + start + o) // SECTOR).reshape(nwarp, WARP), valid)
                  for o in loads)
    slots = xp.arange(nb * B)
    staging = (slots % B < count.astype(xp.int64)[slots // B]).reshape(-1, WARP)
    uniq = unique.astype(xp.int64).reshape(-1, WARP)
    stage_warps = int(staging[:, 0].sum())
    lanes = staging.sum(axis=1)
    sh_sec = int((-(-lanes * 4 // SECTOR)).sum())  # unique[b*B + tid]: contiguous, 128-byte aligned rows
    sh_sec += sum(_distinct_per_row((uniq * es + start + o) // SECTOR, staging) for o in loads)
    return {"indexed": (ind_sec, nwarp * len(loads)), "shared": (sh_sec, stage_warps * (1 + len(loads)))}


def shared_sum_traffic(p, table) -> dict:
    """What ``shared_sum(I)`` on ``table`` saves and costs against ``atomic(I)`` for buffer param
    ``p``: ``{"atomics_saved": (P - sum(count)) * K, "extra_sectors": sectors of the unique[]
    loads of the block's sorted positions (4 bytes each, ascending, one warp row of 128 bytes at
    most 4 sectors)}``."""
    P, K = table.problem_size, int(p.components)
    nwarp = -(-P // WARP)
    return {"atomics_saved": (P - int(table.count.sum())) * K,
            "extra_sectors": nwarp * (WARP * 4 // SECTOR)}


def shared_pays(sig: KernelSignature, tables: dict, env: dict) -> bool:
    """Whether a launch of a kernel with ``shared(I)``/``shared_sum(I)`` accesses
    (``sig.shared_accesses``) should run them staged, rather than the build that lowers them as
    ``indexed(I)``/``atomic(I)`` (``Variant.shared=False``), given the ``shared_indices`` tables
    the launcher built (``tables``: index param -> table) and the sizes ``env``.

    The rule, from the interpreter's counters (``docs/performance.md``, "When shared(I) pays"):
    staging pays for the reads when the element sectors it saves cover the ``unique`` table
    sectors it adds (:func:`shared_read_traffic`: staged sectors at most ``indexed``'s) and the
    requests it saves (warps with no distinct element left to stage issue none) cover the
    ``unique`` and staging requests it adds (staged requests at most ``indexed``'s); for the
    updates when the atomics it saves (one per thread and component against one per distinct index
    per block) are at least the sectors of the ``unique`` loads it adds
    (:func:`shared_sum_traffic`). A ``@deterministic`` ``shared_sum`` counts as paying (its
    ``atomic`` form is not deterministic, and that build keeps it staged). Every access must pay
    for the kernel to run staged."""
    reads = [0, 0, 0, 0]  # staged sectors, staged requests, indexed sectors, indexed requests
    saved = extra = 0
    deterministic = "deterministic" in sig.attributes
    for p in sig.shared_accesses:
        table = tables[p.index_param]
        if p.accessor == accessors.SHARED.name:
            t = shared_read_traffic(p, table, env)
            if t is None:  # no model of its loads: staged, as before the choice
                return True
            for i, v in enumerate(t["shared"] + t["indexed"]):
                reads[i] += v
        elif not deterministic:
            t = shared_sum_traffic(p, table)
            saved += t["atomics_saved"]
            extra += t["extra_sectors"]
    return reads[0] <= reads[2] and reads[1] <= reads[3] and saved >= extra


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


def run_tiled(sig: KernelSignature, problem: int, env: dict) -> bool:
    """Whether a launch of ``problem`` items (sizes ``env``) runs a kernel kern-tile-contractions
    tiled as tiled (``True``; also for any other kernel, and under ``@tile``, which forces it),
    rather than the same program compiled with ``tile=False``: ``False`` when a batch plane of the
    problem (the items of the tiled extents, ``sig.tiles``) is smaller than one ``BM x BN`` block
    tile -- one block would then compute every item of the plane at ``BM*BN/B`` items per thread,
    where the untiled kernel spreads them over ``ceil(P/B)`` blocks, and no block tile would be full
    enough to repay its staging and barriers."""
    c = sig.contraction
    if not c or c.get("forced") or not problem or not sig.tiles:
        return True
    bm, bn, _ = c["tile"]
    return math.prod(_tile_extents(sig, env)) >= bm * bn


def launch_grid(sig: KernelSignature, problem: int, env: dict) -> tuple[int, int]:
    """``(grid, tiles)`` of a launch of ``problem`` items (sizes ``env``): for a kernel with tiles,
    ``tiles`` = :func:`tile_count` and one block per tile up to :data:`MAX_GRID_X` (it loops over
    the rest); otherwise ``tiles`` = 0 and ``ceil(problem / block)`` blocks (0 for an empty problem),
    which the caller must check against :data:`MAX_GRID_X`. A kernel with reductions across items
    (``sig.groups``, kern-map-groups) runs ``ceil(groups / per_block)`` blocks (capped: it loops
    over its groups); its second value is then what its group loop's index reaches, less the grid."""
    if sig.tiles:
        tiles = tile_count(sig, problem, env)
        return min(tiles, MAX_GRID_X), tiles
    if sig.groups:  # kern-map-groups: a warp or block per group, looping over the groups
        n = math.prod(int(Poly.parse(str(e)).evaluate(env)) for e in sig.groups["extents"])
        groups = problem // n if n else 0
        grid = min(-(-groups // sig.groups["per_block"]), MAX_GRID_X)
        return grid, groups + grid * (sig.groups["per_block"] - 1)  # (the loop's last g + step, less grid)
    return (math.ceil(problem / sig.block) if problem else 0), 0


__all__ = ["MAX_GRID_X", "WARP", "SECTOR", "EMPTY_SLOT_BYTES", "tile_fill", "unstaged_sector_use", "staging_pays",
           "tile_count", "run_staged", "run_tiled", "launch_grid", "shared_read_traffic", "shared_sum_traffic", "shared_pays"]
