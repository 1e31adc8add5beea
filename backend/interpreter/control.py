"""Structured control flow (``scf``) in lockstep under a boolean lane mask: ``scf.if`` runs its
regions under ``mask & cond`` and ``mask & ~cond`` and merges the yielded values; ``scf.for`` with
lane-varying bounds and ``scf.while`` iterate until no lane is active."""

from __future__ import annotations

import numpy as np

from kernc.support.errors import KerncRuntimeError

from .numeric import _int_const, _uv
from .translate import _run_ops, handles
from .types import _is_memref


@handles("scf.if")
def _if(tr, o):
    c = tr.use(o.operands[0])
    for res in o.results:
        if _is_memref(res.type):
            tr.unsupported(o, "scf.if yielding memrefs")
    res_slots = [tr.define(x) for x in o.results]
    zeros = [tr.ty(x.type, o).zero() for x in o.results]
    then_ops, then_y = tr.block(o.regions[0].blocks[0])
    if len(o.regions) > 1 and len(o.regions[1].blocks):
        else_ops, else_y = tr.block(o.regions[1].blocks[0])
    else:
        else_ops, else_y = [], []

    def f(fr, mask):
        env = fr.env
        cv = env[c]
        if type(cv) is not np.ndarray:
            if cv:
                _run_ops(then_ops, fr, mask)
                ys = then_y
            else:
                _run_ops(else_ops, fr, mask)
                ys = else_y
            for rs, y in zip(res_slots, ys):
                env[rs] = env[y]
            return
        tm = mask & cv
        em = mask & ~cv
        t_any = bool(tm.any())
        e_any = bool(em.any())
        if t_any and not e_any:
            tm = mask
        if e_any and not t_any:
            em = mask
        tv = ev = None
        if t_any:
            _run_ops(then_ops, fr, tm)
            tv = [env[y] for y in then_y]
        if e_any:
            _run_ops(else_ops, fr, em)
            ev = [env[y] for y in else_y]
        if t_any and e_any:
            for rs, a, b in zip(res_slots, tv, ev):
                env[rs] = np.where(cv, a, b)
        else:
            vals = tv if t_any else ev if e_any else zeros
            for rs, a in zip(res_slots, vals):
                env[rs] = a
    return f


@handles("scf.for")
def _for(tr, o):
    lb, ub, st = (tr.use(v) for v in list(o.operands)[:3])
    inits = [tr.use(v) for v in list(o.operands)[3:]]
    ivty = tr.ty(o.operands[0].type, o)
    unsigned = "unsignedCmp" in o.attributes
    body = o.regions[0].blocks[0]
    for res in o.results:
        if _is_memref(res.type):
            tr.unsupported(o, "scf.for carrying memrefs")
    tr.enter_loop()
    iv = tr.define(body.arguments[0])
    iters = [tr.define(a) for a in list(body.arguments)[1:]]
    ops, ys = tr.block(body)
    memo_keys = tr.exit_loop()
    res_slots = [tr.define(x) for x in o.results]
    loc = str(o.location)

    def f(fr, mask):
        env = fr.env
        lo, hi, step = env[lb], env[ub], env[st]
        vals = [env[s] for s in inits]
        if type(lo) is not np.ndarray and type(hi) is not np.ndarray and type(step) is not np.ndarray:
            if unsigned:
                ilo, ihi, istep = (int(_uv(x, ivty)) for x in (lo, hi, step))
            else:
                ilo, ihi, istep = int(lo), int(hi), int(step)
            if istep <= 0:
                if ilo < ihi:
                    raise KerncRuntimeError(f"scf.for with non-positive step {istep} (at {loc})")
                istep = 1
            for i in range(ilo, ihi, istep):
                env[iv] = _int_const(i, ivty)
                for s, v in zip(iters, vals):
                    env[s] = v
                _run_ops(ops, fr, mask)
                vals = [env[y] for y in ys]
        else:
            L = fr.L
            cur = np.array(np.broadcast_to(lo, (L,)))
            hi_a = hi
            if unsigned:
                def cont(x):
                    return _uv(x, ivty) < _uv(hi_a, ivty)
            else:
                def cont(x):
                    return x < hi_a
            # an iteration that every lane of ``mask`` runs runs under ``mask`` itself (the memory
            # ops' fast paths test ``mask is fr.full``) and needs no merge of the carried values
            nmask = fr.L if mask is fr.full else int(np.count_nonzero(mask))
            active = mask & cont(cur)
            nact = int(np.count_nonzero(active))
            if nact == nmask:
                active = mask
            if type(step) is np.ndarray:
                if bool((active & (step <= 0)).any()):
                    raise KerncRuntimeError(f"scf.for with non-positive step (at {loc})")
            elif step <= 0 and nact:
                raise KerncRuntimeError(f"scf.for with non-positive step {step} (at {loc})")
            while nact:
                env[iv] = cur
                for s, v in zip(iters, vals):
                    env[s] = v
                _run_ops(ops, fr, active)
                if active is mask:
                    vals = [env[y] for y in ys]
                    cur = cur + step
                else:
                    vals = [np.where(active, env[y], v) for y, v in zip(ys, vals)]
                    cur = np.where(active, cur + step, cur)
                active = active & cont(cur)
                nact = int(np.count_nonzero(active))
                if nact == nmask:
                    active = mask
        for rs, v in zip(res_slots, vals):
            env[rs] = v
        for k in memo_keys:
            fr.memo.pop(k, None)
    return f


@handles("scf.while")
def _while(tr, o):
    inits = [tr.use(v) for v in o.operands]
    before = o.regions[0].blocks[0]
    after = o.regions[1].blocks[0]
    for res in o.results:
        if _is_memref(res.type):
            tr.unsupported(o, "scf.while carrying memrefs")
    tr.enter_loop()
    bargs = [tr.define(a) for a in before.arguments]
    b_ops, b_term = tr.block(before)
    cond, fwd = b_term[0], b_term[1:]
    aargs = [tr.define(a) for a in after.arguments]
    a_ops, a_y = tr.block(after)
    memo_keys = tr.exit_loop()
    res_slots = [tr.define(x) for x in o.results]

    def f(fr, mask):
        env = fr.env
        vals = [env[s] for s in inits]
        active = mask
        results = None
        while True:
            for s, v in zip(bargs, vals):
                env[s] = v
            _run_ops(b_ops, fr, active)
            cv = env[cond]
            fv = [env[s] for s in fwd]
            if type(cv) is not np.ndarray:
                exiting, cont = (None, active) if cv else (active, None)
            else:
                cont = active & cv
                exiting = active & ~cv
                if not exiting.any():
                    exiting, cont = None, active
                elif not cont.any():
                    exiting, cont = active, None
            if exiting is not None:
                if results is None:
                    results = fv
                else:
                    results = [np.where(exiting, a, b) for a, b in zip(fv, results)]
            if cont is None:
                break
            for s, v in zip(aargs, fv):
                env[s] = v
            _run_ops(a_ops, fr, cont)
            if cont is active:
                vals = [env[y] for y in a_y]
            else:
                vals = [np.where(cont, env[y], v) for y, v in zip(a_y, fv)]
            active = cont
        for rs, v in zip(res_slots, results):
            env[rs] = v
        for k in memo_keys:
            fr.memo.pop(k, None)
    return f


@handles("scf.execute_region")
def _execute_region(tr, o):
    blocks = o.regions[0].blocks
    if len(blocks) != 1:
        tr.unsupported(o, "scf.execute_region with several blocks")
    ops, ys = tr.block(blocks[0])
    res_slots = [tr.define(x) for x in o.results]

    def f(fr, mask):
        env = fr.env
        _run_ops(ops, fr, mask)
        for rs, y in zip(res_slots, ys):
            env[rs] = env[y]
    return f
