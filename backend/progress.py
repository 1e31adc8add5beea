"""A progress bar for long runs on the CPU interpreter (``tqdm``), fed by the interpreter's
``progress(blocks_done, grid)`` callback.

Shown only on a terminal (standard error is a TTY), only once a run has taken more than
:data:`DELAY_S` seconds (a short run never flickers one), never under pytest, and never when the
caller turns it off (``kernc run --quiet``, ``Kernel.launch(..., progress=False)``). The bar
counts blocks, which the interpreter runs in batches (``MAX_LANES_PER_BATCH`` lanes), and is
removed when the run ends.
"""

from __future__ import annotations

import os
import sys
import time

#: A run shows a bar only after this many seconds.
DELAY_S = 2.0


def wanted(stream=None) -> bool:
    """Whether a bar may be shown on ``stream`` (default standard error): a terminal, outside
    pytest (``PYTEST_CURRENT_TEST``), and ``tqdm`` installed."""
    stream = sys.stderr if stream is None else stream
    if stream is None or "PYTEST_CURRENT_TEST" in os.environ:
        return False
    try:
        if not stream.isatty():
            return False
    except (AttributeError, ValueError, OSError):  # closed or not a file
        return False
    import importlib.util

    return importlib.util.find_spec("tqdm") is not None


class ProgressBar:
    """``callback(done, total)`` of one run: after :data:`DELAY_S` seconds (``delay``), a ``tqdm``
    bar of blocks on ``stream``; :meth:`close` when the run ends (also after an error)."""

    def __init__(self, desc: str, stream=None, delay: float = DELAY_S, clock=time.perf_counter):
        self.desc, self.stream, self.delay, self.clock = desc, stream or sys.stderr, delay, clock
        self.start = clock()
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if self.clock() - self.start < self.delay or done >= total:
                return
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=0, desc=self.desc, unit="block", file=self.stream,
                            leave=False, dynamic_ncols=True)
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def progress_bar(desc: str, enabled: bool | None = None):
    """A :class:`ProgressBar` for a run called ``desc``, or ``None`` when none may be shown
    (``enabled=False``, or ``None`` and not :func:`wanted`)."""
    if enabled is False or not wanted():
        return None
    return ProgressBar(desc)


__all__ = ["ProgressBar", "progress_bar", "wanted", "DELAY_S"]
