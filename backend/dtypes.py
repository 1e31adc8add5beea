"""The host (numpy) dtype of each language dtype, for the launcher and the command line."""

from __future__ import annotations

import functools

import numpy as np

from kernc.dialect.signature import NUMPY_DTYPES
from kernc.support.errors import KerncLaunchError


@functools.lru_cache(maxsize=None)  # a handful of names; dtypes are immutable
def numpy_dtype(name: str) -> np.dtype:
    """The numpy dtype of a language dtype name (``"f32"`` -> ``float32``, ``"index"`` -> ``int64``);
    ``bf16`` needs ``ml_dtypes`` (``KerncLaunchError`` without it); ``KeyError`` for a name that is
    not a dtype of the language."""
    if name == "bf16":
        try:
            import ml_dtypes

            return np.dtype(ml_dtypes.bfloat16)
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise KerncLaunchError("bf16 values need the 'ml_dtypes' package on the host "
                                   "(pip install ml_dtypes)") from err
    return np.dtype(NUMPY_DTYPES[name])


__all__ = ["numpy_dtype"]
