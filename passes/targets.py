"""The GPU architectures kernc compiles for (``--arch``), as data: no MLIR import, so that the CLI
checks ``--arch`` while it parses its options, before anything heavy is loaded."""

from __future__ import annotations

#: SM architectures kernc targets and the PTX ISA version each needs (PTX ISA, "Release Notes" /
#: "Target ISA Notes": sm_90a needs PTX 8.0, sm_100 8.6, sm_120 8.7, sm_103/sm_121 8.8). PTX 8.0 is
#: the floor (the NVPTX backend's sm_90 support). Anything else is rejected up front: LLVM aborts the
#: process on a target/PTX mismatch instead of returning an error.
PTX_VERSION = {
    **{f"sm_{n}": 80 for n in (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90)},
    "sm_90a": 80,
    "sm_100": 86, "sm_100a": 86, "sm_101": 86, "sm_101a": 86,
    "sm_103": 88, "sm_103a": 88,
    "sm_120": 87, "sm_120a": 87, "sm_121": 88, "sm_121a": 88,
}


#: The targets with warpgroup ``wgmma`` (PTX ISA 9.7.15: ``sm_90a``; kern-wgmma-contractions).
WGMMA_ARCHS = ("sm_90a",)
#: The first architecture with ``mma.sync.aligned.m16n8k16`` for f16/bf16 and ``ldmatrix``
#: (PTX ISA, "Warp-level matrix multiply-accumulate instructions": ``sm_80`` for ``.bf16`` and
#: m16n8k16; ``ldmatrix`` needs ``sm_75``; kern-mma-contractions).
MMA_MIN_SM = 80
#: The first architecture with ``cp.async`` (PTX ISA 9.7.9.25.3.1, "cp.async": ``sm_80`` and later;
#: kern-tile-contractions).
ASYNC_COPY_SM = 80


def sm_number(arch: str) -> int:
    """``80`` of ``"sm_80"``, ``90`` of ``"sm_90a"``; ``ValueError`` for another spelling."""
    import re

    m = re.fullmatch(r"sm_(\d+)a?", arch)
    if not m:
        raise ValueError(f"not an SM architecture: {arch!r}")
    return int(m.group(1))


def ptx_features(arch: str) -> str:
    """The ``+ptxNN`` feature string for ``arch``; ``ValueError`` for an unknown architecture."""
    if arch not in PTX_VERSION:
        raise ValueError(
            f"unknown GPU architecture '{arch}' (supported: {', '.join(PTX_VERSION)})"
        )
    return f"+ptx{PTX_VERSION[arch]}"


def arch_option(text: str) -> str:
    """An argparse ``type=`` for ``--arch`` options: ``text`` if kernc targets it, else an
    ``argparse.ArgumentTypeError`` naming the supported ones (a usage error, exit status 2, as for
    every other bad option value)."""
    import argparse

    try:
        ptx_features(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text
