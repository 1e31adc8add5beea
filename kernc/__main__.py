"""``python -m kernc`` runs the CLI."""

from kernc.cli import console_main

console_main()
