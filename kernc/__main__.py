"""``python -m kernc`` runs the CLI."""

import sys

from kernc.cli import main

sys.exit(main())
