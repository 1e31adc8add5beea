"""``kern-attach-target``: attach the ``#nvvm.target`` (chip, PTX features, ``O`` level) to every
``gpu.module``, linking libdevice only when the module still calls it.

Upstream ``nvvm-attach-target{l=...}`` links the bitcode files it is given into every module, and
linking + optimising the 480 KB ``libdevice.10.bc`` costs more than compiling a small kernel. After
``kern-libdevice-to-intrinsics`` most kernels call no ``__nv_*`` function at all, so this pass looks
at the calls first and hands upstream ``nvvm-attach-target`` the ``l=`` option only if one remains.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.errors import InternalCompilerError
from kernc.support.mlir import ir

from .base import Pass, UpstreamPass, functions
from .targets import ptx_features


def libdevice_calls(module: ir.Module) -> list[str]:
    """Sorted names of the libdevice functions (``__nv_*``) that ``module`` calls, from their
    declarations: ``convert-gpu-to-nvvm`` declares exactly the ones it calls, and
    ``kern-libdevice-to-intrinsics`` drops those it replaced (no walk over every op needed)."""
    names = (ir.StringAttr(fn.attributes["sym_name"]).value for fn in functions(module, {"llvm.func"})
             if not fn.regions[0].blocks)
    return sorted(name for name in names if name.startswith("__nv_"))


@dataclass
class AttachTarget(Pass):
    """``nvvm-attach-target{chip=ARCH features=+ptxNN O=N [l=LIBDEVICE]}``, ``l=`` only when needed.

    ``chip``: the SM architecture (``passes/targets.py``; its PTX ISA version gives ``features``);
    ``opt_level``: LLVM's ``O`` level; ``libdevice``: path of ``libdevice.10.bc``, or ``None`` when it
    was not found; a module that still calls libdevice then raises
    :class:`~kernc.errors.InternalCompilerError` naming the functions and how to install it
    (``pip install nvidia-nvvm``, or ``KERNC_LIBDEVICE``)."""

    name = "kern-attach-target"
    summary = "nvvm-attach-target, linking libdevice only for modules that call it"

    chip: str = "sm_90"
    opt_level: int = 3
    libdevice: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.features = ptx_features(self.chip)  # ValueError for an unknown architecture
        if self.opt_level not in (0, 1, 2, 3):
            raise ValueError(f"{self.name}: opt_level must be 0, 1, 2 or 3, got {self.opt_level}")

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        calls = libdevice_calls(module)
        if calls and not self.libdevice:
            raise InternalCompilerError(
                f"this kernel calls libdevice math functions ({', '.join(calls)}), which need "
                "libdevice.10.bc: pip install nvidia-nvvm (or set KERNC_LIBDEVICE)"
            )
        link = f" l={self.libdevice}" if calls else ""
        UpstreamPass(
            f"nvvm-attach-target{{chip={self.chip} features={self.features} O={self.opt_level}{link}}}"
        ).apply(ctx, module)
