"""Derivative kernels of a ``.kern`` kernel, as ``.kern`` source (``docs/derivatives.md``).

:func:`derivative_source` ``(text, filename, kernel, wrt, mode)`` returns the program ``text`` with
one more kernel appended: ``K_grad`` (``mode="grad"``, reverse mode: vector-Jacobian products) or
``K_jvp`` (``mode="jvp"``, forward mode: Jacobian-vector products). Source in, source out: the new
kernel is checked and compiled like any other, and ``kernc grad`` prints it.

The steps: the program is parsed and checked; kernel ``K`` is rewritten with its functions inlined
and one float operation per statement (:mod:`kernc.frontend.derivative_prep`) and checked again;
the derivative kernel is emitted from that (:mod:`kernc.frontend.reverse_mode`,
:mod:`kernc.frontend.forward_mode`) and checked a last time.

Signatures (``x`` a differentiated parameter, ``y`` an output: a ``write``/``add`` buffer or a view
``K`` writes):

- ``K_grad``: every parameter of ``K`` by its name (outputs declared as reads of their seed
  accessor and left untouched), then ``y_bar`` per output (y's shape, read through the dual of y's
  accessor), then ``x_bar`` per ``wrt`` parameter (x's shape, ``[1]`` for a scalar), to which it
  **adds** dL/dx for L = sum over outputs of ``y_bar * y``.
- ``K_jvp``: every parameter of ``K``, then ``x_dot`` per ``wrt`` parameter (x's declaration: the
  same accessor; a scalar for a scalar), then ``y_dot`` per output (y's declaration), which
  receives J x_dot as y receives its values.

Roles: ``@tunable(x, a)`` before a kernel names the parameters derivatives are taken with respect
to when no ``wrt`` is given (Caspar's Tunable); ``@constant(c)`` names parameters that are never
differentiated (Caspar's Constant: a ``wrt`` naming one is an error). Without either, ``wrt``
defaults to every float parameter that is read.

Errors (:class:`~kernc.errors.CompileError`, located at the parameter or the construct): ``wrt``
naming an unknown name, an integer, index or bool parameter, an output-only buffer or a constant;
a kernel whose derivative needs an accessor with no dual (``strided(off, s) default v`` and
``pair strided(off, s) default v`` reads, ``block_sum`` outputs); a view both read and written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernc.dialect import accessors
from kernc.support.errors import CompileError, Diagnostic, InternalCompilerError

from . import ast as A
from . import printer as P
from .check import check
from .derivative_model import assigned_locals  # noqa: F401  (re-exported for tests)
from .derivative_prep import FreshNames, Prepare, is_float
from .forward_mode import Forward
from .parser import parse
from .reverse_mode import Reverse

MODES = ("grad", "jvp")
#: attributes of ``K`` the derivative kernel keeps (``@deterministic`` does not carry over: the
#: adjoint updates are atomics; ``@tile`` configures contractions the derivative may not have)
_KEPT_ATTRIBUTES = ("block", "checked")


@dataclass
class Plan:
    """The derivative's parameters: ``wrt`` (names), ``seeds`` (output -> ``y_bar``), ``grads``
    (wrt param -> ``x_bar``), ``tangents`` (wrt param -> ``x_dot``), ``outputs_dot`` (output ->
    ``y_dot``)."""

    wrt: list
    seeds: dict = field(default_factory=dict)
    grads: dict = field(default_factory=dict)
    tangents: dict = field(default_factory=dict)
    outputs_dot: dict = field(default_factory=dict)


def derivative_source(text: str, filename: str, kernel: str, wrt=None, mode: str = "grad",
                      remarks=None) -> tuple:
    """``(source, name)``: ``text`` with the derivative kernel of ``kernel`` appended, and that
    kernel's name (``kernel + "_grad"`` or ``"_jvp"``). ``wrt``: parameter names (a sequence or
    one comma-separated string), or None for the kernel's roles. ``remarks``: a callable given a
    ``file:line:col: remark: ...`` line for each decision (how each loop is reversed). Raises ``CompileError`` (located)
    for any error in the program or the request, ``ValueError`` for an unknown ``mode``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    program = check(parse(text, filename))
    k = next((x for x in program.kernels if x.name == kernel), None)
    if k is None:
        names = ", ".join(x.name for x in program.kernels) or "none"
        raise CompileError(Diagnostic(f"no kernel named '{kernel}' in {filename} (kernels: {names})"))
    wrt = resolve_wrt(k, wrt, text)
    names = FreshNames(text)
    derived = f"{kernel}_{mode}"
    params = {p.name: p for p in k.params}
    outputs = _outputs(k, text)
    plan = Plan(wrt)
    for y in outputs:
        key = "seeds" if mode == "grad" else "outputs_dot"
        getattr(plan, key)[y] = _reserve(names, f"{y}_{'bar' if mode == 'grad' else 'dot'}", params[y], text)
    for x in wrt:
        key = "grads" if mode == "grad" else "tangents"
        getattr(plan, key)[x] = _reserve(names, f"{x}_{'bar' if mode == 'grad' else 'dot'}", params[x], text)
    if not names.exact(derived):
        raise _error(f"the name '{derived}' of the derivative kernel is already taken", k, text)

    _check_updates(k, outputs, text)  # (located in the user's source, not the prepared copy)

    # 1. inline functions, one float operation per statement; check that
    prep_name = names.fresh(f"{kernel}_prepared")
    prepare = Prepare(program, k, names)
    body = prepare.body()
    header = P.kernel_header(prep_name, [a for a in k.attributes if a.name in _KEPT_ATTRIBUTES],
                             [P.param(p) for p in k.params], P.over(k.over))
    prepared_text = f"{header}\n" + "\n".join(P.indent(body)) + "\n}\n"
    pk = _check_kernel(program, prepared_text, filename)

    # 2. the derivative kernel
    # every output of K is taken but never written: an integer one too (declared `write sum` or
    # `write max` it would be filled by the launcher)
    decls = [_read_form(p, k, text, mode) if p.name in outputs or _is_output_buffer(p, k) else P.param(p)
             for p in k.params]
    for y in outputs:
        buf, kind = _kind(params[y], k)
        if not buf.is_view and getattr(kind, "reduce", "add") != "add":
            raise _no_dual(params[y], kind, text, f"{'seed' if mode == 'grad' else 'tangent'} of an output")
    if mode == "grad":
        decls += [_seed(params[y], plan.seeds[y], k, text) for y in outputs]
        decls += [_gradient(params[x], plan.grads[x], k, text) for x in wrt]
        reverse = Reverse(pk, plan, names, text)
        lines = reverse.body()
        if remarks is not None:
            where = dict(zip([n for n in _loops(pk.body)], prepare.loops))
            for loop, what in reverse.remarks:
                remarks(f"{where[loop].loc}: remark: {derived}: {what}")
    else:
        decls += [_tangent(params[x], plan.tangents[x]) for x in wrt]
        decls += [_renamed(params[y], plan.outputs_dot[y]) for y in outputs]
        lines = Forward(pk, plan, names, text).body()
    what = "reverse mode: adds dL/dx to x_bar, L = sum of y_bar * y" if mode == "grad" else \
        "forward mode: y_dot receives J x_dot"
    comment = (f"// {derived}: the derivative of '{kernel}' with respect to {', '.join(wrt) or 'nothing'} "
               f"({what}), generated by kernc")
    header = P.kernel_header(derived, [a for a in k.attributes if a.name in _KEPT_ATTRIBUTES], decls,
                             P.over(k.over))
    kernel_text = f"{comment}\n{header}\n" + "\n".join(P.indent(lines)) + "\n}\n"
    _check_kernel(program, kernel_text, filename)
    return f"{text.rstrip()}\n\n{kernel_text}", derived


def _loops(block) -> list:
    """The ``for`` statements of ``block`` in source order (a loop before the loops in its body)."""
    out = []
    for s in block.stmts:
        if isinstance(s, A.For):
            out.append(s)
            out += _loops(s.body)
        elif isinstance(s, A.If):
            out += _loops(s.then)
            if s.orelse is not None:
                out += _loops(s.orelse if isinstance(s.orelse, A.Block) else A.Block(s.loc, [s.orelse]))
    return out


def _check_kernel(program: A.Program, kernel_text: str, filename: str) -> A.Kernel:
    """The checked kernel of ``kernel_text``, with the layouts and functions of ``program`` (parsing
    only the new text: a derivative costs no second parse of the whole program)."""
    try:
        new = parse(kernel_text, filename)
        kept = [i for i in program.items if not isinstance(i, A.Kernel)]
        check(A.Program(new.loc, kept + new.items, filename, kernel_text))
    except CompileError as err:  # the derivative is kernc's text: an error in it is kernc's bug
        raise InternalCompilerError(f"the derivative kernel kernc generated does not check:\n{err}\n"
                                    f"--- generated text ---\n{kernel_text}") from None
    return new.kernels[0]


# ---- roles and wrt --------------------------------------------------------------------------------


def roles(k: A.Kernel) -> tuple:
    """``(tunable, constant)``: the parameter names of ``@tunable(...)`` and ``@constant(...)`` (None
    for a missing attribute)."""
    tunable = constant = None
    for a in k.attributes:
        if a.name == "tunable":
            tunable = [x.id for x in a.args or []]
        elif a.name == "constant":
            constant = [x.id for x in a.args or []]
    return tunable, constant


def resolve_wrt(k: A.Kernel, wrt, text: str) -> list:
    """The checked list of parameter names to differentiate with respect to (see
    :func:`derivative_source`)."""
    tunable, constant = roles(k)
    params = {p.name: p for p in k.params}
    syms = {s.name: s for s in k.info.params}
    if wrt is None:
        if tunable is not None:
            wrt = tunable
        else:
            written = _written_views(k)
            wrt = [n for n, s in syms.items() if _float_input(s) and n not in (constant or []) and n not in written]
    elif isinstance(wrt, str):
        wrt = [w.strip() for w in wrt.split(",") if w.strip()]
        if not wrt:
            raise _error(f"wrt names no parameter of kernel '{k.name}' (give names, e.g. wrt=\"x,a\")", k, text)
    elif not isinstance(wrt, (list, tuple)):
        raise _error(f"wrt must be parameter names (a sequence of str or \"x,a\"), got {type(wrt).__name__}",
                     k, text)
    repeated = sorted({w for w in wrt if isinstance(w, str) and wrt.count(w) > 1})
    if repeated:
        raise _error(f"wrt names {', '.join(repr(w) for w in repeated)} more than once", k, text)
    wrt = list(wrt)
    if not wrt:
        raise _error(f"kernel '{k.name}' has nothing to differentiate: it reads no float parameter "
                     "(or wrt names none)", k, text)
    for name in wrt:
        if not isinstance(name, str) or name not in params:
            raise _error(f"wrt names '{name}', which is not a parameter of kernel '{k.name}' "
                         f"(parameters: {', '.join(params)})", k, text)
        sym, node = syms[name], params[name]
        ty = sym.ty if sym.kind == "scalar" else (sym.buffer.compute_elem if sym.buffer else None)
        if ty is None or not is_float(ty):
            what = "an index" if ty is not None and ty.is_index else "a bool" if ty is not None and ty.is_bool \
                else "an integer"
            raise _error(f"wrt names '{name}', {what} parameter: integer values have no derivative", node, text,
                         hint="differentiate with respect to float parameters only")
        if sym.kind == "buffer" and sym.buffer.is_output:
            raise _error(f"wrt names '{name}', an output ('{sym.buffer.access}' buffer): only what the kernel "
                         "reads has a derivative", node, text)
        if sym.kind == "buffer" and sym.buffer.is_view and name in _written_views(k):
            raise _error(f"wrt names '{name}', a view the kernel writes: only what it reads has a derivative",
                         node, text)
        if constant is not None and name in constant:
            raise _error(f"wrt names '{name}', which the kernel declares @constant", node, text)
    return wrt


def _float_input(sym) -> bool:
    if sym.kind == "scalar":
        return is_float(sym.ty)
    b = sym.buffer
    return b is not None and not b.is_output and is_float(b.compute_elem)


# ---- parameters of the derivative kernel ----------------------------------------------------------


def _outputs(k: A.Kernel, text: str) -> list:
    """The float outputs of ``k``: ``write``/``add`` buffers and the views it writes, in parameter order;
    a view both read and written is refused (its reads would see other items' writes)."""
    written = _written_views(k)
    read = {n.base.id for n in A.iter_nodes(k.body) if isinstance(n, (A.MultiIndex, A.Index, A.Method))
            and isinstance(n.base, A.Name) and n.base.id in written and not _is_target(n, k)}
    out = []
    for sym in k.info.params:
        if sym.kind != "buffer" or sym.buffer is None or not is_float(sym.buffer.compute_elem):
            continue  # an integer output has no derivative: no seed, no tangent
        if sym.buffer.is_output:
            out.append(sym.name)
        elif sym.name in written:
            if sym.name in read:
                raise _error(f"the view '{sym.name}' is both read and written by kernel '{k.name}': its "
                             "derivative is not defined per item", sym.node, text)
            out.append(sym.name)
    return out


def _check_updates(k: A.Kernel, outputs: list, text: str) -> None:
    """The updates of float outputs neither mode differentiates, as errors at the user's statement:
    an atomic min/max of a view, and an operator other than ``=``, ``+=``, ``-=`` on an output."""
    for s in A.iter_nodes(k.body):
        if not isinstance(s, A.Assign) or s.sym is None or s.sym.name not in outputs:
            continue
        buf = s.sym.buffer
        what = "view" if buf is not None and buf.is_view else "output"
        if getattr(s, "atomic", None) not in (None, "add"):
            raise _error(f"the atomic min/max update of '{s.sym.name}' has no derivative", s, text)
        if s.op not in ("=", "+=", "-="):
            raise _error(f"'{s.op}' on the {what} '{s.sym.name}' has no derivative kernel yet", s, text,
                         hint="compute the value in a 'let' and assign it")


def _is_output_buffer(p, k: A.Kernel) -> bool:
    sym = next(s for s in k.info.params if s.name == p.name)
    return sym.kind == "buffer" and sym.buffer is not None and sym.buffer.is_output


def _written_views(k: A.Kernel) -> set:
    return {n.sym.name for n in A.iter_nodes(k.body) if isinstance(n, A.Assign) and n.sym is not None
            and n.sym.kind == "buffer" and n.sym.buffer is not None and n.sym.buffer.is_view}


def _is_target(node, k) -> bool:
    return any(isinstance(a, A.Assign) and a.target is node for a in A.iter_nodes(k.body))


def _reserve(names: FreshNames, name: str, p, text: str) -> str:
    if not names.exact(name):
        raise _error(f"the derivative needs a parameter named '{name}', a name the program already uses",
                     p, text, hint=f"rename what is called '{name}'")
    return name


def _kind(p: A.BufferParam, k: A.Kernel):
    sym = next(s for s in k.info.params if s.name == p.name)
    return sym.buffer, sym.buffer.kind


def _pattern_for(p: A.BufferParam, buf, kind_name: str) -> list:
    """The pattern text of kind ``kind_name`` for a buffer like ``p`` (its index param, offsets)."""
    if kind_name == "sequential":
        return []
    if kind_name in ("indexed", "atomic", "shared", "shared_sum"):
        return [f"{kind_name}({buf.index_param})"]
    if kind_name == "strided":
        strided = next(x for x in p.patterns if x.name == "strided")
        return [P.pattern(strided)]
    return [kind_name]


def _no_dual(p, kind, text, role: str) -> CompileError:
    return _error(f"the parameter '{p.name}' uses the accessor '{kind.spelling}', which has no dual for "
                  f"the {role} of a derivative kernel", p, text,
                  hint="the duals: sequential/strided <-> add, indexed(I) -> atomic(I), shared(I) -> "
                       "shared_sum(I), unique -> sum, pair -> pair (docs/derivatives.md)")


def _read_form(p, k: A.Kernel, text: str, mode: str) -> str:
    """An output of ``K`` as the derivative kernel takes it: a read of its seed accessor (it is
    never written), or for a view its own declaration."""
    buf, kind = _kind(p, k)
    if buf.is_view:
        return P.param(p)
    read = kind.adjoint_read or "unique"
    return P.buffer_param(p.name, p.elem_name, p.dims, "read", _pattern_for(p, buf, read), p.layout, None,
                          p.compute)


def _seed(p, name: str, k: A.Kernel, text: str) -> str:
    buf, kind = _kind(p, k)
    if buf.is_view:
        return P.buffer_param(name, p.elem_name, p.dims, "view", [], p.layout)
    if kind.adjoint_read is None:
        raise _no_dual(p, kind, text, "seed of an output")
    return P.buffer_param(name, p.elem_name, p.dims, "read", _pattern_for(p, buf, kind.adjoint_read), p.layout,
                          None, p.compute)


def _gradient(p, name: str, k: A.Kernel, text: str) -> str:
    if isinstance(p, A.ScalarParam):
        return f"{name}: {p.type_name}[1] add sum"
    buf, kind = _kind(p, k)
    if buf.is_view:
        return P.buffer_param(name, p.elem_name, p.dims, "view", [], p.layout)
    if kind.adjoint_add is None:
        raise _no_dual(p, kind, text, "gradient of a read")
    return P.buffer_param(name, p.elem_name, p.dims, accessors.ADD, _pattern_for(p, buf, kind.adjoint_add),
                          p.layout, None, p.compute)


def _tangent(p, name: str) -> str:
    if isinstance(p, A.ScalarParam):
        return f"{name}: {p.type_name}"
    if p.access == accessors.VIEW_MODE:
        return P.buffer_param(name, p.elem_name, p.dims, p.access, [], p.layout, None, p.compute)
    return P.buffer_param(name, p.elem_name, p.dims, p.access, p.patterns, p.layout, _zero_default(p), p.compute)


def _zero_default(p):
    """A tangent's default: 0 where the read has one (a read out of bounds gives a constant)."""
    return None if p.default is None else A.FloatLit(p.default.loc, 0.0, None, "0.0")


def _renamed(p, name: str) -> str:
    return P.buffer_param(name, p.elem_name, p.dims, p.access, p.patterns, p.layout, None, p.compute)


def _error(message: str, node, text: str, hint: str | None = None) -> CompileError:
    return CompileError(Diagnostic(message, node.loc, source=text, hint=hint))
