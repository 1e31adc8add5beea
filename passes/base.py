"""The pass interface shared by kernc's own passes and wrapped upstream MLIR passes.

A pass is a small named object with ``apply(ctx, module)`` (the xDSL shape): kernc's passes rewrite the
module through the Python bindings; :class:`UpstreamPass` runs an upstream pipeline string through
``PassManager.parse``. Upstream MLIR cannot nest a Python pass under ``gpu.module``, so kernc passes
are always module-anchored and walk the ops they rewrite themselves.
"""

from __future__ import annotations

import typing
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar

from kernc.support.exact_numbers import parse_int
from kernc.support.mlir import ir, passmanager


def option(default, *, choices: tuple | None = None):
    """A pass option: a dataclass field with ``default`` that ``kernc opt`` sets as
    ``{name-with-dashes=value}``; ``choices``, when given, are the values it accepts."""
    return field(default=default, metadata={"choices": choices})


def internal(default=None):
    """A pass field the pipeline sets but ``kernc opt`` cannot (a callable, state)."""
    return field(default=default, metadata={"cli": False})


@dataclass
class Pass:
    """Base class: a named, module-anchored rewrite (the xDSL shape).

    A subclass is a dataclass: it sets ``name`` (``kern-...``) and ``summary`` as class attributes,
    declares its options as fields with their defaults (``index_bits: int = 32``; :func:`option`
    adds the accepted values), and implements ``apply``. The defaults are the pipeline's, and
    ``kernc opt`` builds a pass from the same fields (:meth:`from_options`): the pass of an option
    not given is the pipeline's pass.
    """

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""

    def __post_init__(self) -> None:
        for f in fields(self):
            choices = f.metadata.get("choices")
            value = getattr(self, f.name)
            if choices and value not in choices:
                words = ", ".join(map(str, choices[:-1])) + f" or {choices[-1]}"
                raise ValueError(f"{self.name}: {f.name} must be {words}, got '{value}'")

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    @classmethod
    def options(cls) -> dict[str, tuple[Any, Any]]:
        """``{option spelling: (field name, type)}`` of the options ``kernc opt`` may set (int,
        bool and str fields, ``str | None`` too, spelt with dashes: ``index_bits`` -> ``index-bits``)."""
        hints = typing.get_type_hints(cls)
        out = {}
        for f in fields(cls):
            t = hints.get(f.name)
            optional = [a for a in typing.get_args(t) if a is not type(None)]
            if len(optional) == 1 and len(typing.get_args(t)) == 2:
                t = optional[0]  # ``str | None``: given as a str
            if f.metadata.get("cli", True) and f.init and t in (int, bool, str):
                out[f.name.replace("_", "-")] = (f.name, t)
        return out

    @classmethod
    def from_options(cls, options: dict[str, str]) -> "Pass":
        """The pass with the textual ``options`` (``{"index-bits": "64"}``) of ``kernc opt``;
        ``ValueError`` for an unknown option or a value that is not of the option's type (an int
        in ASCII digits, a bool ``true``/``false``/``1``/``0``) or not among its choices."""
        known = cls.options()
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ValueError(f"pass '{cls.name}' takes no such options: {unknown}"
                             + (f" (its options: {', '.join(known)})" if known else " (it takes none)"))
        values = {}
        for key, text in options.items():
            attr, t = known[key]
            if t is int:
                values[attr] = parse_int(text)
            elif t is bool:
                if text.strip().lower() not in ("true", "false", "1", "0"):
                    raise ValueError(f"option '{key}' of '{cls.name}' is true or false, got '{text}'")
                values[attr] = text.strip().lower() in ("true", "1")
            else:
                values[attr] = text
        return cls(**values)

    @classmethod
    def constructible(cls) -> bool:
        """Whether every field has a default (``kernc opt`` can build the pass from its name)."""
        return all(f.default is not MISSING or f.default_factory is not MISSING
                   for f in fields(cls) if f.init)


@dataclass
class UpstreamPass(Pass):
    """An upstream MLIR pass or nested pipeline, e.g. ``"canonicalize"`` or
    ``"gpu.module(convert-scf-to-cf)"``, anchored at ``builtin.module``."""

    pipeline: str = ""

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.pipeline

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        pass_manager(ctx, self.pipeline).run(module.operation)


@dataclass(frozen=True)
class PassRef:
    """A pass of the pipeline's stage lists, named without importing its module.

    ``name``: the pass's ``name`` (``kern-map-groups``; for an upstream wrapper, the upstream
    pass it wraps: ``convert-gpu-to-nvvm``); its class ``cls_name`` lives in the module named after
    it, ``kernc.passes.`` + ``name`` without ``kern-``, dashes as underscores (``map_groups``).
    ``when``: ``None`` (the pass runs on every module: its class is imported when the stage is
    built), or a check ``(module, options) -> bool`` of ``passes/holds.py`` that says whether the
    module holds anything for the pass (the stage then holds an :class:`OnDemand`, which imports
    the module only when the check says so).
    """

    name: str
    cls_name: str
    when: Any = None

    @property
    def module(self) -> str:
        """The import path of the pass's module."""
        return "kernc.passes." + self.name.removeprefix("kern-").replace("-", "_")

    @property
    def cls(self) -> type[Pass]:
        """The pass's class (its module imported on first use)."""
        import importlib

        return getattr(importlib.import_module(self.module), self.cls_name)

    def build(self, options: dict) -> Pass:
        """The pass with the field values ``options`` (the others keep their defaults): built now,
        or an :class:`OnDemand` where the pass has a ``when`` check."""
        return self.cls(**options) if self.when is None else OnDemand(self, options)


@dataclass
class OnDemand(Pass):
    """The pass of ``ref`` with the field values ``options``, its module imported and the pass built
    the first time ``ref.when`` finds something for it in a module it is applied to; on a module
    where the check finds nothing, ``apply`` does nothing (the check says the pass would change
    nothing there either). Its ``name`` is the pass's."""

    ref: PassRef = internal(None)
    options: dict = internal(None)

    def __post_init__(self) -> None:
        super().__post_init__()
        self._built: Pass | None = None

    @property
    def name(self) -> str:  # type: ignore[override]
        return self.ref.name

    def __setattr__(self, name: str, value) -> None:
        # a pass option set here would be lost (the pass is built from ``options``): say where it goes
        if not name.startswith("_") and name not in {f.name for f in fields(self)}:
            raise AttributeError(f"'{name}' is an option of the pass {self.ref.name}, which this OnDemand "
                                 "builds on first use: set it on .built()")
        super().__setattr__(name, value)

    def built(self) -> Pass:
        """The pass itself (imported and built on first use)."""
        if self._built is None:
            self._built = self.ref.cls(**(self.options or {}))
        return self._built

    def apply(self, ctx: ir.Context, module: ir.Module) -> None:
        if self.ref.when(module, self.options or {}):
            self.built().apply(ctx, module)


#: (context, pipeline) -> its PassManager. A pass manager keeps its passes initialised (for
#: ``canonicalize``: the frozen set of every loaded dialect's patterns, most of its run time on a
#: small kernel) for as long as the context's dialects do not change, so kernc reuses one per
#: pipeline string instead of building it again for every compilation. Its own verifier stays on
#: (after every pass, nested ones included) although ``run_passes`` verifies too: without
#: ``verify_each`` that is the only check between a kernc pass and the upstream passes after it, and
#: ``convert-gpu-to-nvvm`` lowers some invalid ops into valid but wrong LLVM IR.
_PASS_MANAGERS: dict[tuple[int, str], tuple[ir.Context, passmanager.PassManager]] = {}


def pass_manager(ctx: ir.Context, pipeline: str) -> passmanager.PassManager:
    """The (cached) ``PassManager`` of ``builtin.module(pipeline)`` in ``ctx``. Raises the
    bindings' ``MLIRError``/``ValueError`` for a pipeline that does not parse."""
    key = (id(ctx), pipeline)
    hit = _PASS_MANAGERS.get(key)
    if hit is None or hit[0] is not ctx:
        pm = passmanager.PassManager.parse(f"builtin.module({pipeline})", context=ctx)
        hit = _PASS_MANAGERS[key] = (ctx, pm)  # the context is kept alive with it
    return hit[1]


def walk_ops(root, names: set[str] | None = None) -> list:
    """All operations nested under ``root`` (pre-order), optionally only those named in ``names``.

    Collected into a list first so callers may rewrite/erase while iterating.
    """
    found: list = []
    keep, advance = found.append, ir.WalkResult.ADVANCE  # the walk hands over ir.Operation objects

    if names is None:
        def visit(op):
            keep(op)
            return advance
    else:
        def visit(op):
            if op.name in names:
                keep(op)
            return advance

    root.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def functions(module, names: set[str]) -> list:
    """The function ops (``names``, e.g. ``{"gpu.func"}``) of ``module``: those in its body and in the
    bodies of its ``gpu.module`` ops, where kernc's functions live. Unlike :func:`walk_ops` it does
    not visit the functions' bodies, so a pass that handles one function at a time walks each once."""
    found: list = []
    root = module.operation if hasattr(module, "operation") else module
    for block in root.regions[0].blocks:
        for op in block.operations:
            op = op.operation
            if op.name in names:
                found.append(op)
            elif op.name == "gpu.module":
                for inner_block in op.regions[0].blocks:
                    found.extend(f.operation for f in inner_block.operations if f.operation.name in names)
    return found


def defined_functions(module, names: set[str]) -> list:
    """:func:`functions` that have a body (declarations, e.g. of libdevice, are left out)."""
    return [fn for fn in functions(module, names) if fn.regions and len(fn.regions[0].blocks)]
