"""Light stand-ins for upstream dialect Python modules that kernc never builds ops with.

When the bindings first meet a type or op of a dialect, they import ``<prefix>.<dialect>`` for each
prefix of ``dialect_search_modules`` to pick up its Python classes. The generated ``llvm`` module
defines a class per op of the LLVM dialect and costs ~15 ms to import, a tenth of a cold
``kernc compile``, while kernc only passes LLVM types through and builds its five LLVM ops
generically (``kernc.passes.llvm_ops``). :mod:`kernc.mlir` puts this package first in the search
list; the stand-in here loads the dialect's type classes (``!llvm.ptr``, ``!llvm.struct``) only.
Importing the real ``dialects.llvm`` later still registers its op classes as usual. ``kern`` here
names kernc's own dialect module, so that its lookup succeeds once instead of failing on every op.
"""
