"""Running kernels on the CPU reference interpreter (``backend/interpreter/``)."""

from __future__ import annotations

import numpy as np

from .binding import BoundLaunch


def is_host_array(x) -> bool:
    """Whether ``x`` is a numpy array (the CPU device's arrays)."""
    return isinstance(x, np.ndarray)


def launch(interpreter, bound: BoundLaunch, stats: bool = True, progress=None):
    """Execute ``bound`` on ``interpreter``; returns the run's statistics (all zero when ``P == 0``),
    or ``None`` with ``stats=False`` (the counters are skipped). ``progress``: the interpreter's
    ``progress(blocks_done, grid)`` callback (``backend/progress.py``)."""
    from .interpreter import RunStats

    for name in bound.zero_init:
        bound.arrays[name].fill(bound.fill_value(name))
    if bound.grid == 0:
        return RunStats() if stats else None
    names = bound.signature.arg_names
    counters = interpreter.run(bound.signature.name, bound.grid, bound.block, list(bound.args), arg_names=names,
                               index_bits=bound.variant.index_bits, collect_stats=stats, progress=progress)
    return counters if stats else None
