# lit configuration for kernc's IR tests (tests/lit/**). Run: `lit -v .` from the repository root,
# or `pytest tests/test_lit.py`, which runs the same suite.
import os
import shutil
import sys

import lit.formats

config.name = "kernc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".kern", ".mlir"]
config.test_source_root = os.path.join(os.path.dirname(__file__), "tests", "lit")
config.test_exec_root = config.test_source_root
config.excludes = ["Inputs", "lit.local.cfg"]

bindir = os.path.dirname(sys.executable)
filecheck = shutil.which("filecheck", path=bindir) or shutil.which("filecheck")
config.substitutions.append(("%kernc", f'"{sys.executable}" -m kernc'))
config.substitutions.append(("%python", f'"{sys.executable}"'))
config.substitutions.append(("FileCheck", f'"{filecheck}"' if filecheck else "filecheck"))
config.substitutions.append(("%examples", os.path.join(os.path.dirname(__file__), "examples")))
config.environment["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
for var in ("HOME", "KERNC_CACHE_DIR", "KERNC_VERIFY_EACH", "KERNC_ALWAYS_COMPILE", "KERNC_PTXAS", "KERNC_LIBDEVICE", "PYTHONPATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

try:
    from kernc.backend.toolkit import ptxas_path

    ptxas = ptxas_path()
except Exception:
    ptxas = None
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", f'"{ptxas}"'))
