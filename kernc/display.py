"""How the API's objects show themselves: ``repr()`` of a :class:`~kernc.api.Module`, a
:class:`~kernc.api.Kernel` and a :class:`~kernc.api.LaunchResult`, and their HTML for Jupyter.

A kernel shows its signature as the source declares it (``saxpy(a: f32, x: f32[n] read, y: f32[n]
add) over n``, hidden ``shared_indices`` tables left out), its block size and its attributes; a
module its file, target and kernels; a launch result its device, problem size, grid and, from the
CPU interpreter, the main traffic counters (``str(result.stats)`` is the whole table).
"""

from __future__ import annotations

import html

from kernc.dialect import accessors

#: Accessor kinds whose argument is the index buffer (``indexed(I)``), as the signature records
#: them (``Param.index_param``); every other non-default accessor is shown by its name.
_DEFAULT_ACCESSOR = accessors.SEQUENTIAL.name


def param_text(p) -> str:
    """One parameter as declared: ``a: f32``, ``x: f32[n] read indexed(idx)``,
    ``pos: f32[n, 3] read as (n,3):(1,n)``."""
    if p.kind == "scalar":
        return f"{p.name}: {p.dtype}"
    dims = ", ".join(str(d) for d in p.dims)
    text = f"{p.name}: {p.dtype}[{dims}] {p.access}"
    if p.accessor and p.accessor not in (_DEFAULT_ACCESSOR, p.access):
        text += f" {p.accessor}({p.index_param})" if p.index_param else f" {p.accessor}"
    if p.layout and len(p.dims) > 1:
        text += f" as {p.layout}"
    if p.compute:
        text += f" compute {p.compute}"
    return text


def signature_text(sig) -> str:
    """``name(params) over P`` of a :class:`~kernc.dialect.signature.KernelSignature`."""
    params = ", ".join(param_text(p) for p in sig.params if p.kind in ("scalar", "buffer"))
    return f"{sig.name}({params}) over {sig.problem_size}"


def kernel_repr(kernel) -> str:
    sig = kernel.signature
    attrs = "".join(f" @{a}" for a in sig.attributes if not a.startswith("block"))
    return f"<kernc kernel {signature_text(sig)}, block {sig.block}{attrs}>"


def module_repr(module) -> str:
    comp = module._compilation
    head = f"<kernc module {comp.filename} ({comp.options.arch})"
    kernels = list(module.kernels.values())
    if len(kernels) == 1:
        return f"{head}: {signature_text(kernels[0].signature)}, block {kernels[0].signature.block}>"
    lines = [f"  {signature_text(k.signature)}, block {k.signature.block}" for k in kernels]
    return f"{head}, {len(kernels)} kernels:\n" + "\n".join(lines) + ">"


def module_html(module) -> str:
    from kernc.kern_lexer import KernLexer  # (pygments: the kernels' declarations highlighted)
    from pygments import highlight
    from pygments.formatters import HtmlFormatter

    comp = module._compilation
    code = "\n".join(signature_text(k.signature) for k in module.kernels.values())
    body = highlight(code, KernLexer(), HtmlFormatter(noclasses=True, nowrap=False))
    return (f"<div><b>kernc module</b> <code>{html.escape(comp.filename)}</code> "
            f"({html.escape(comp.options.arch)}), {len(module.kernels)} kernel(s){body}</div>")


def launch_repr(result) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in result.sizes.items())
    text = (f"<kernc launch on {result.device}: P={result.problem_size}"
            + (f" ({sizes})" if sizes else "") + f", {result.grid} block{'' if result.grid == 1 else 's'} of {result.block}")
    if result.staged is not None:
        text += ", staged" if result.staged else ", unstaged"
    if getattr(result, "shared", None) is not None:
        text += ", shared staged" if result.shared else ", shared as indexed"
    if getattr(result, "tiled", None) is not None:
        text += ", tiled" if result.tiled else ", untiled (smaller than one block tile)"
    if getattr(result, "tensor_cores", None):
        text += f", tensor cores ({result.tensor_cores})"
    if getattr(result, "tma", None) is not None:
        text += ", TMA loads" if result.tma else f", without TMA ({result.no_tma})"
    s = result.stats
    if s is not None:
        text += (f"; {s.global_load_requests} load requests / {s.global_load_sectors} sectors, "
                 f"{s.global_store_requests} store requests / {s.global_store_sectors} sectors")
        if s.global_atomics:
            text += f", {s.global_atomics} atomics"
        if s.shared_requests:
            text += f", {s.shared_requests} shared requests / {s.shared_bank_conflicts} bank conflicts"
    return text + ">"


__all__ = ["param_text", "signature_text", "kernel_repr", "module_repr", "module_html", "launch_repr"]
