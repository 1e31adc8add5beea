"""Name resolution and type checking of a parsed ``.kern`` program.

:func:`check` validates a :class:`kernc.frontend.ast.Program` and annotates it in place (see
:mod:`kernc.frontend.ast`): expression types, resolved :class:`~kernc.frontend.symbols.Symbol` s,
and a :class:`~kernc.frontend.symbols.KernelInfo` per kernel (parameters, size symbols, layouts,
block size, the kernel signature). All errors found are collected and raised together as one
:class:`kernc.errors.CompileError`.

The checker is made of parts with one job each (:mod:`kernc.frontend.names` says how they fit):
the language's tables (:mod:`~kernc.frontend.language`), diagnostics
(:mod:`~kernc.frontend.diagnostics`), kernels and their parameters
(:mod:`~kernc.frontend.declarations`), accessor clauses (:mod:`~kernc.frontend.accessor_clauses`),
layouts (:mod:`~kernc.frontend.layouts`), view accesses and layout applications
(:mod:`~kernc.frontend.views`), statements (:mod:`~kernc.frontend.statements`) and expressions
(:mod:`~kernc.frontend.expressions`).

Language rules enforced here (the reference for the lowering):

- ``let`` bindings are *mutable* local variables with a fixed type; ``x = e``, ``x += e``,
  ``x -= e``, ``x *= e``, ``x /= e`` update them. Names cannot be redeclared while visible (no
  shadowing); loop variables and parameters are read-only.
- Unsuffixed literals take their type from the other operand (an integer literal may become a float;
  a float literal never becomes an integer); alone they default to ``i32`` / ``f32``. An
  integer-literal expression with an integer operation (``/ % // %% << >> & | ^ ~``) keeps integer
  semantics where a float is expected: it is computed as ``i32`` and converted (as in C:
  ``f32(7 / 2)`` is ``3.0``, ``y = 1 << 2`` stores ``4.0``); the node is marked ``computed_as``.
- There is no implicit conversion: mixing int and float, signed and unsigned, or different widths is
  an error with a hint to cast (``f32(x)``, ``u32(x)``, ``index(x)``).
- A scalar operand broadcasts against a vector; two vectors must have the same length.
- A ``read`` buffer's name is the thread's element (a scalar, or a K-vector for ``T[n, K]``); an
  output (``write``/``add``) can only be assigned (``y = v``, ``y += v``, ``y -= v``,
  ``y[k] = v``), never read. An output's pending value starts at zero.
- Accessors (``docs/accessor-lowering.md``): each access mode allows the patterns whose record
  in the accessor registry lists it (``AccessorKind.modes``, ``dialect/accessors.py``);
  ``default v`` only on ``read strided(off, s)`` / ``read pair strided`` (which requires one),
  with ``v`` a number literal rounded once to the compute type; the index param of ``indexed``/``shared``/``shared_sum``/``atomic`` is a sequential
  1-D ``read`` buffer of ``u8 u16 u32 i8 i16 i32`` with one entry per item. A ``pair`` read is used as ``u.first`` / ``u.second``;
  a ``pair`` output is assigned ``out = (a, b)`` or ``out.first`` / ``out.second``.
- Buffers compute in their compute type (``f16``/``bf16`` -> ``f32``, or ``compute f32|f64`` on
  float storage, never narrower); an output also accepts values of its storage type (widened
  exactly).
"""

from __future__ import annotations

from kernc.support.errors import CompileError, InternalCompilerError

from . import ast as A
from .accessor_clauses import AccessorChecks
from .declarations import DeclarationChecks
from .expressions import ExpressionChecks
from .functions import FunctionChecks
from .layouts import LayoutChecks
from .statements import StatementChecks
from .views import ViewChecks


def check(program: A.Program) -> A.Program:
    """Type-check ``program`` and annotate it in place; returns it.

    Raises :class:`kernc.errors.CompileError` with every error found (each a located
    :class:`kernc.errors.Diagnostic`).
    """
    checker = _Checker(program)
    try:
        checker.run()
    except (CompileError, RecursionError):  # RecursionError: the caller reports deep nesting
        raise
    except Exception as exc:  # a checker bug, most likely triggered by an earlier error
        if checker.diags:
            raise CompileError(checker.diags) from None
        raise InternalCompilerError(f"the checker failed: {exc!r}") from exc
    return program


class _Checker(FunctionChecks, DeclarationChecks, AccessorChecks, LayoutChecks, ViewChecks, StatementChecks,
               ExpressionChecks):
    """The checker of one program: the layouts first, then the functions, then each kernel."""

    def run(self) -> None:
        kernel_names: dict[str, A.Kernel] = {}
        self.register_layouts()
        # functional layouts compute their offsets with index arithmetic of their own constants
        # (return (m * 100000)): every kernel's index-width bound takes them into account
        self.fn_layout_constant_max = max((abs(n.value) for item in self.program.items
                                           if isinstance(item, A.FnLayoutDef)
                                           for n in A.iter_nodes(item) if isinstance(n, A.IntLit)), default=0)
        self.register_functions()  # before the kernels: their bodies call them
        for item in self.program.items:
            if isinstance(item, A.Kernel):
                self.kernel_name_ok(item)
                if item.name in kernel_names:
                    self.error(f"redefinition of kernel '{item.name}'", item.loc,
                               note=("previous definition is here", kernel_names[item.name].loc))
                else:
                    kernel_names[item.name] = item
                self.check_kernel(item)
        self.ptx_names_ok(kernel_names)
        if self.diags:
            raise CompileError(self.diags)
