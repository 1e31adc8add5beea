"""What every layer of kernc uses, at the bottom of the imports (``kernc.support``).

Each module here imports only the standard library (``mlir``: the upstream bindings), never another
part of kernc, so the frontend, the dialect, the passes, the backend, the driver and the command
line all import it downward:

- :mod:`~kernc.support.errors`: the exception types and located diagnostics (public as
  ``kernc.errors``);
- :mod:`~kernc.support.mlir`: the one import of the upstream MLIR Python bindings (also
  ``kernc.mlir``);
- :mod:`~kernc.support.private_dirs`: which folders are private to this user (the compile cache);
- :mod:`~kernc.support.exact_numbers`: numbers read from text, and their one rounding to a type;
- :mod:`~kernc.support.input_files`: reading sources and arrays without hanging on a FIFO or device;
- :mod:`~kernc.support.output_files`: writing outputs all or none, atomically, and the standard
  streams completely.

The layout algebra, which needs no MLIR either, is :mod:`kernc.dialect.layout_algebra` (public as
``kernc.layout``): the dialect is already below every layer that uses it.
"""
