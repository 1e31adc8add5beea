"""Which build of a program a launch runs: a :class:`Variant`.

One ``.kern`` program compiles to several PTX modules that differ only in what they may assume about
a launch: the width of ``index`` arithmetic, the alignment of the buffers, the sign of the ``index``
scalar arguments, and whether the kernels that ``kern-coalesce-views`` staged through workgroup tiles
run staged. The launcher works out the variant a call allows (:func:`kernc.backend.binding.bind`
from the arguments, the CUDA launcher the alignment from the device addresses), the compiler builds
and caches each variant's PTX once (``Compilation.ptx(variant=...)``, the compile cache's
``ptx_key``), and the GPU launcher keeps one loaded module per variant.

Imports nothing (the compile cache, which ``kernc compile`` consults before loading the compiler,
uses it).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Buffer alignment (bytes) an aligned variant assumes: ``cudaMalloc`` and CuPy allocations are
#: 256-byte aligned, so the PTX may use 16-byte vector accesses (``ld.global.v4.f32``).
ALIGN = 16


@dataclass(frozen=True)
class Variant:
    """What one PTX build of a program assumes about its launches (frozen and hashable: a key of the
    PTX caches and of the loaded modules).

    - ``index_bits``: ``index`` arithmetic is 32- or 64-bit (the launcher picks 32 when every size,
      buffer length and index product fits, ``binding.index_products_overflow``);
    - ``aligned``: every buffer starts at a multiple of :data:`ALIGN` bytes (the launcher checks
      the device addresses; unaligned data runs the ``aligned=False`` build);
    - ``nonneg_scalars``: every ``index`` scalar argument is ``>= 0`` (``kern-specialize-nonneg-scalars``
      divides unsigned; the launcher checks the values); the same PTX as ``False`` for a program
      without ``index`` scalars;
    - ``staged``: the kernels staged by ``kern-coalesce-views`` run staged (``False``: the same
      program compiled without the pass, which the launch policy picks when the tiles would be
      mostly empty, ``launch_policy.staging_pays``); the same PTX either way for a program that
      stages nothing;
    - ``shared``: ``shared(I)`` reads and ``shared_sum(I)`` updates are staged through workgroup
      memory (``False``: the same program compiled with ``CompileOptions.shared=False``, as
      ``indexed(I)``/``atomic(I)``, which the launch policy picks where staging cannot pay,
      ``launch_policy.shared_pays``); the same PTX either way for a program without them;
    - ``tiled``: the kernels kern-tile-contractions tiled run tiled (``False``: the same program
      compiled with ``tile=False``, which the launch policy picks for problems smaller than one
      block tile, ``launch_policy.run_tiled``); the same PTX either way for a program it tiles nothing.

    ``ValueError`` for an ``index_bits`` other than 32 or 64.
    """

    index_bits: int = 32
    aligned: bool = True
    nonneg_scalars: bool = False
    staged: bool = True
    shared: bool = True
    tiled: bool = True

    def __post_init__(self):
        if self.index_bits not in (32, 64) or isinstance(self.index_bits, bool):
            raise ValueError(f"index_bits must be 32 or 64, got {self.index_bits!r}")

    @property
    def align(self) -> int:
        """The byte alignment the PTX may assume of every buffer: :data:`ALIGN`, or 0 (none)."""
        return ALIGN if self.aligned else 0

    @property
    def name(self) -> str:
        """The variant in words, as ``--time-passes`` labels its stages: ``"index 64, unaligned"``."""
        return (f"index {self.index_bits}" + ("" if self.aligned else ", unaligned")
                + (", index scalars >= 0" if self.nonneg_scalars else "")
                + ("" if self.staged else ", unstaged") + ("" if self.shared else ", shared as indexed"))


__all__ = ["Variant", "ALIGN"]
