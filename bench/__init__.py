"""kernc's benchmarks (``python -m bench`` from the repository root, or ``kernc bench``).

Compile latency, code quality and memory traffic are measured on the CPU; GPU bandwidth and launch
overhead when a CUDA device is present. Every number is reported as a ratio against a reference
measured in the same run; see ``runner``.
"""
