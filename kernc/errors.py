"""``kernc.errors``: the public name of :mod:`kernc.support.errors` (kernc's exception types and
located diagnostics), the same module object.

The module lives in ``kernc.support`` so that every layer imports it downward; this name stays for
users (``from kernc.errors import CompileError``). It is an alias rather than a copy of the names
so that ``kernc.errors`` and ``kernc.support.errors`` can never disagree (a patched attribute, an
``isinstance`` check).
"""

import sys

from kernc.support import errors

sys.modules[__name__] = errors
