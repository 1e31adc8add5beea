"""``kern-verify``: run the MLIR verifier (IRDL constraints and kern op verifiers) on the module."""

from __future__ import annotations

from dataclasses import dataclass

from kernc.support.errors import InternalCompilerError
from kernc.support.mlir import ir

from .base import Pass


@dataclass
class VerifyKern(Pass):
    """Fail with :class:`InternalCompilerError` if the module does not verify.

    The frontend checks user programs before building IR, so a verifier failure here is a kernc bug.
    """

    name = "kern-verify"
    summary = "verify the kern IR module"

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        try:
            module.operation.verify()
        except ir.MLIRError as err:
            raise InternalCompilerError(f"kern IR does not verify: {err}") from err
