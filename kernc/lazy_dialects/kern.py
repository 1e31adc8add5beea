"""kernc's own ``kern`` dialect, whose Python module is :mod:`kernc.dialect.kern`.

Found here, the bindings' lookup of the ``kern`` namespace succeeds once and is remembered; without
it, every ``kern`` op they wrap would retry (and fail) the import of ``<prefix>.kern``.
"""

import kernc.dialect.kern  # noqa: F401
