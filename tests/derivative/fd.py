"""Checking derivative kernels against central finite differences on the CPU interpreter.

``check(source, kernel, wrt, args)`` compiles ``kernc.grad`` and ``kernc.jvp`` of ``kernel`` once,
and returns the largest normwise relative errors (``max |g - fd| / max |fd|`` per parameter) of
the gradient against central differences of L = sum(y_bar * y), of ``K_jvp`` against central
differences along the tangent, and of the dot-product test ``<y_bar, J x_dot> = <J^T y_bar, x_dot>``.
Central differences ``D(h) = (L(x + h e) - L(x - h e)) / 2h`` at ``h = 1e-4 (1 + |x|)`` and ``h/2``,
extrapolated once (Richardson: ``(4 D(h/2) - D(h)) / 3``), whose error in f64 is about
``h^4 |L^(5)| + eps |L| / h`` (~1e-12), far below the 2e-5 target for the smooth kernels used.
"""

from __future__ import annotations

import numpy as np

import kernc


def _run(kern, args: dict, sizes: dict):
    kern(**{**args, **sizes}, stats=False)


def _outputs(fwd_sig, grad_sig, wrt):
    names = [p.name for p in fwd_sig.params if p.kind != "table"]
    extra = [p.name for p in grad_sig.params if p.kind != "table" and p.name not in names]
    seeds = extra[: len(extra) - len(wrt)]
    return [s[: -len("_bar")] for s in seeds]


def check(source: str, kernel: str, wrt, args: dict, sizes: dict | None = None, seed: int = 0,
          modules=None) -> dict:
    """The errors (see the module docstring) of the derivatives of ``kernel`` at ``args`` (every
    parameter of ``kernel`` by name: numpy arrays, outputs included, and scalars)."""
    sizes = dict(sizes or {})
    rng = np.random.default_rng(seed)
    if modules is None:  # one module holding K, K_grad and K_jvp: compiled once
        base = source.rstrip()
        jvp_kernel = kernc.derivative_source(source, kernel, wrt, "jvp")[len(base):]
        both = kernc.derivative_source(source, kernel, wrt, "grad") + jvp_kernel
        modules = (kernc.compile(both),) * 2
    gmod, jmod = modules
    fwd = gmod[kernel]
    gk, jk = gmod[f"{kernel}_grad"], jmod[f"{kernel}_jvp"]
    outs = _outputs(fwd.signature, gk.signature, wrt)
    seeds = {y: rng.standard_normal(np.shape(args[y])) for y in outs}

    def outputs_at(a):
        a = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in a.items()}
        _run(fwd, a, sizes)
        return {y: a[y] for y in outs}

    def loss(a):
        o = outputs_at(a)
        return sum(float(np.sum(seeds[y] * o[y])) for y in outs)

    # reverse mode
    gargs = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    for y in outs:
        gargs[f"{y}_bar"] = seeds[y]
    bars = {}
    for x in wrt:
        shape = np.shape(args[x]) if isinstance(args[x], np.ndarray) else (1,)
        bars[x] = gargs[f"{x}_bar"] = np.zeros(shape)
    _run(gk, gargs, sizes)
    errors = {"grad": 0.0, "jvp": 0.0, "dot": 0.0}
    fds = {}
    for x in wrt:
        base = args[x]
        flat = np.atleast_1d(np.asarray(base, dtype=np.float64)).ravel()
        fd = np.zeros(flat.size)
        for i in range(flat.size):
            def at(step, i=i):
                pert = flat.copy()
                pert[i] += step
                a = dict(args)
                a[x] = pert.reshape(np.shape(base)) if isinstance(base, np.ndarray) else float(pert[0])
                return loss(a)
            fd[i] = richardson(at, H * (1.0 + abs(flat[i])))
        fds[x] = fd
        g = bars[x].ravel()
        errors["grad"] = max(errors["grad"], _rel(g, fd))
    # forward mode: y_dot against central differences along x_dot, and the dot-product test
    dots = {}
    for x in wrt:
        base = args[x]
        dots[x] = rng.standard_normal(np.shape(base)) if isinstance(base, np.ndarray) else float(rng.standard_normal())
    jargs = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in args.items()}
    for x in wrt:
        jargs[f"{x}_dot"] = dots[x]
    for y in outs:
        jargs[f"{y}_dot"] = np.zeros(np.shape(args[y]))
    _run(jk, jargs, sizes)
    along: dict = {}

    def moved(step):
        if step not in along:
            along[step] = outputs_at({**args, **{x: args[x] + step * dots[x] for x in wrt}})
        return along[step]

    for y in outs:
        size = int(np.size(args[y]))
        fd = np.array([richardson(lambda step, j=j: float(np.ravel(moved(step)[y])[j]), H)
                       for j in range(size)])
        errors["jvp"] = max(errors["jvp"], _rel(jargs[f"{y}_dot"].ravel(), fd.ravel()))
    lhs = sum(float(np.sum(seeds[y] * jargs[f"{y}_dot"])) for y in outs)
    rhs = sum(float(np.sum(bars[x].ravel() * np.atleast_1d(dots[x]).ravel())) for x in wrt)
    errors["dot"] = abs(lhs - rhs) / max(abs(lhs), abs(rhs)) if lhs != rhs else 0.0
    errors["grads"] = {x: bars[x] for x in wrt}
    errors["fd"] = fds
    return errors


#: the step of the central differences (relative to 1 + |x|)
H = 1e-4


def richardson(f, h: float) -> float:
    """f'(0) from central differences at steps ``h`` and ``h/2`` with one Richardson extrapolation
    (``(4 D(h/2) - D(h)) / 3``): error ``O(h^4)`` plus ``eps |f| / h`` of rounding. Where the two
    differ by more than a smooth function's would (1e-3 relative: a jump of ``floor``, ``%`` or a
    branch lies within ``h``), the steps are taken 100 times smaller, down to ``1e-8``."""
    wide = (f(h) - f(-h)) / (2 * h)
    narrow = (f(h / 2) - f(-h / 2)) / h
    if abs(wide - narrow) > 1e-3 * max(abs(narrow), 1.0) and h > 1e-8:
        return richardson(f, h / 100)
    return (4 * narrow - wide) / 3


def _rel(got, want) -> float:
    if not (np.all(np.isfinite(got)) and np.all(np.isfinite(want))):
        return float("inf")
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    diff = float(np.max(np.abs(got - want))) if want.size else 0.0
    if scale == 0.0:
        return diff
    return diff / scale
