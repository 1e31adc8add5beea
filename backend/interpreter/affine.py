"""Which ``index`` values are affine in the block and thread ids: a translation-time analysis that
lets memory ops address a batch's lanes with one slice instead of a gather.

A value ``v`` is *affine* with coefficients ``(cb, ct)`` when, in every run,
``v = u + cb * block_id + ct * thread_id`` with ``u`` uniform over the batch (a numpy scalar at run
time: constants, scalar arguments, ``block_dim``, ``grid_dim`` and pure ops on those). Uniform values
are the affine ones with ``(0, 0)``. Lane ``l`` of a batch starting at block ``b0`` is thread
``l % B`` of block ``b0 + l // B``, so when ``cb == ct * B`` the value is ``v[0] + ct * l``: a load
of ``x[block_id * B + thread_id]`` reads one contiguous run of ``x`` per batch. Only ``index``
values (64-bit, computed exactly) carry non-zero coefficients; narrower integers wrap.

The facts live on the translator (``tr.lin``: slot -> ``(cb, ct)``; ``tr.const``: slot -> the
Python int of an integer constant); handlers record them with :func:`define` and read them with
:func:`coefficients`.
"""

from __future__ import annotations

import numpy as np

#: ops that keep a value affine (on ``index``), given the coefficients of their operands
_ADD, _SUB, _MUL, _SHL = "arith.addi", "arith.subi", "arith.muli", "arith.shli"


def define(tr, slot: int, cb: int = 0, ct: int = 0, const: int | None = None) -> None:
    """Record that ``slot`` is affine with ``(cb, ct)`` (``(0, 0)``: uniform); ``const``: its value
    when it is an integer constant."""
    tr.lin[slot] = (cb, ct)
    if const is not None:
        tr.const[slot] = const


def coefficients(tr, slot: int):
    """``(cb, ct)`` of ``slot``, or ``None`` when it is not known to be affine."""
    return tr.lin.get(slot)


def uniform(tr, *slots: int) -> bool:
    """Whether every one of ``slots`` is uniform over a batch (a scalar at run time)."""
    return all(tr.lin.get(s) == (0, 0) for s in slots)


def binop(tr, name: str, is_index: bool, a: int, b: int, r: int) -> None:
    """Record what the integer binop ``name`` (``r = a op b``) keeps of its operands' facts."""
    la, lb = tr.lin.get(a), tr.lin.get(b)
    if la is None or lb is None:
        return
    both_uniform = la == (0, 0) and lb == (0, 0)
    if not is_index:
        if both_uniform:
            define(tr, r)  # any pure op on uniform values is uniform
        return
    ka, kb = tr.const.get(a), tr.const.get(b)
    if name == _ADD:
        lin = (la[0] + lb[0], la[1] + lb[1])
    elif name == _SUB:
        lin = (la[0] - lb[0], la[1] - lb[1])
    elif name == _MUL and kb is not None:
        lin = (la[0] * kb, la[1] * kb)
    elif name == _MUL and ka is not None:
        lin = (lb[0] * ka, lb[1] * ka)
    elif name == _SHL and kb is not None and 0 <= kb < 63:
        lin = (la[0] << kb, la[1] << kb)
    elif both_uniform:
        lin = (0, 0)
    else:
        return
    const = None
    if ka is not None and kb is not None:
        const = {_ADD: ka + kb, _SUB: ka - kb, _MUL: ka * kb}.get(name)
        if const is not None and not -(1 << 63) <= const < 1 << 63:
            const = None  # wrapped: the run-time value differs; only the coefficients stay
    define(tr, r, *lin, const=const)


def note_pure(tr, o) -> None:
    """After the translation of ``o``: when it is a pure ``arith``/``math`` op of *block-periodic*
    operands -- each the same function of the thread id in every block (the thread id, the lane
    id, uniform values) -- so are its results (``tr.periodic``). A workgroup access with such an
    index does the same in every block of a batch (:func:`kernc.backend.interpreter.memory`)."""
    if not o.name.startswith(("arith.", "math.")) or len(o.regions):
        return
    slots = tr.slots
    for v in o.operands:
        s = slots[v]
        if s not in tr.periodic and tr.lin.get(s) != (0, 0):
            return
    tr.periodic.update(slots[v] for v in o.results)


def lane_stride(fr, lin, rel) -> int | None:
    """For an access whose index ``rel`` (a lane array, every lane active) has the coefficients
    ``lin``: the ``ct`` of ``rel[l] == rel[0] + ct * l`` over the whole batch (global memory: the
    block coefficient must be ``ct * B``), or ``None``."""
    if lin is None or type(rel) is not np.ndarray:
        return None
    cb, ct = lin
    return ct if ct >= 1 and cb == ct * fr.B else None


def block_stride(fr, lin, rel) -> int | None:
    """Like :func:`lane_stride` for an index into a per-block array (workgroup memory): the ``ct`` of
    ``rel[l] == rel[0] + ct * (l % B)`` (no block term), or ``None``."""
    if lin is None or type(rel) is not np.ndarray:
        return None
    cb, ct = lin
    return ct if ct >= 1 and cb == 0 else None

