"""Runs Triton versions of the examples under Triton's interpreter, for
``tests/bench/test_triton_equivalents.py`` (in a process of its own: ``TRITON_INTERPRET=1`` must be
set before Triton is imported, as Triton's own library functions are decorated at import).

``python triton_interpret.py FOLDER``: for every ``NAME.CASE.in.npz`` in ``FOLDER`` (the arguments
of ``examples/NAME.py``'s ``make_inputs``, scalars as 0-d arrays), runs ``bench/triton/NAME.py``
on them and writes every argument after the run to ``NAME.CASE.out.npz``.
"""

from __future__ import annotations

import os
import sys

import numpy as np


def main(folder: str) -> int:
    if os.environ.get("TRITON_INTERPRET") != "1":
        sys.exit("triton_interpret.py: run with TRITON_INTERPRET=1")
    import torch
    from triton.runtime.interpreter import InterpretedFunction

    from kernc.bench import triton as versions

    for entry in sorted(os.listdir(folder)):
        if not entry.endswith(".in.npz"):
            continue
        name = entry.split(".", 1)[0]
        module = versions.load(name)
        assert isinstance(module.KERNEL, InterpretedFunction), type(module.KERNEL)
        with np.load(os.path.join(folder, entry), allow_pickle=False) as data:
            inputs = {k: (v if v.ndim else v[()]) for k, v in data.items()}
        module.launch(module.KERNEL, inputs, torch.from_numpy)
        np.savez(os.path.join(folder, entry[:-len(".in.npz")] + ".out.npz"), **inputs)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
