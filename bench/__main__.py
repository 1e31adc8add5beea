"""``python -m bench``: run kernc's benchmarks (see ``bench.runner``)."""

import sys

from .runner import main

sys.exit(main())
