"""Which staged reads of ``kern-wgmma-contractions`` are a 2-d convolution's im2col view, for TMA's
im2col mode.

A staged read whose tile rows are several item coordinates flattened (``conv2d_fwd_f16``'s ``x``:
GEMM row ``m = (n, oh, ow)``, reduction ``kk = (r, s, c)``) is no box of its view, so tile-mode TMA
cannot load it; TMA's im2col mode can (PTX ISA 5.5.4, "im2col mode"): one copy walks the filter-base
positions of a pixel box in (N, H, W) order, W fastest, each spatial step the traversal stride, and
writes one row of ``channels`` consecutive channels per position, read at the position plus the
copy's im2col offsets. For a chunk of 64 reduction values inside one filter tap ``(r, s)`` that row
``p`` is exactly the tile's row ``m0 + p``: :func:`im2col_read` says when a read is that one.

The read's coordinates are put in a normal form (:class:`_Normal`): sums of products of atoms (the
kernel's parameters, the tile side's coordinates, the loop nest's variables) with integer
coefficients, where a division or remainder of a mixed-radix flattening of the side's coordinates
or of the nest's variables by a product of their trailing extents is the flattening's leading or
trailing part (``(n*OH + oh)*OW + ow`` divided by ``OW`` is ``n*OH + oh``; its remainder by ``OW`` is
``ow``): exact because each coordinate lies in ``0 .. extent - 1``. The im2col view's expansion
(``docs/layouts.md``) and a hand-written ``x.checked[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c]``
then have the same normal form.
"""

from __future__ import annotations

from typing import Callable

from kernc.dialect.access import ViewAccess
from kernc.support.mlir import ir

from .mma_contractions import _owner

#: ``arith.cmpi`` predicate numbers (MLIR's ``arith::CmpIPredicate``)
_SLT, _SGE, _ULT, _UGE = 2, 5, 6, 9
#: channels per pixel of one copy: one 128-byte swizzle row of 2-byte elements (the chunk's 64 k)
CHANNELS = 64


def _mul(p: dict, q: dict) -> dict:
    out: dict = {}
    for m1, c1 in p.items():
        for m2, c2 in q.items():
            m = tuple(sorted(m1 + m2))
            out[m] = out.get(m, 0) + c1 * c2
    return {m: c for m, c in out.items() if c}


def _add(p: dict, q: dict, sign: int = 1) -> dict:
    out = dict(p)
    for m, c in q.items():
        out[m] = out.get(m, 0) + sign * c
    return {m: c for m, c in out.items() if c}


class _Normal:
    """The normal form of index values: ``of(v)`` is ``{monomial: coefficient}``, a monomial a
    sorted tuple of atom numbers (``()`` the constant term). ``chains``: lists of ``(value, extent
    value)``, outermost first, whose values each lie in ``0 .. extent - 1`` (the side's coordinates,
    the nest's variables); ``leaves``: the other values that may be atoms (the kernel's arguments).
    Any other value -- an opaque op's result, a division that is no chain part -- makes the form
    ``None`` (not recognised)."""

    def __init__(self, chains: list, leaves: list, split=None) -> None:
        self.atom: dict = {}  # value -> atom number
        self.value: list = []  # atom number -> value (or a split atom's key)
        self.memo: dict = {}
        self.meta: dict = {}  # a split atom -> ("div" | "rem", the atom split, the divisor's form)
        self.keys: dict = {}
        for v in leaves:
            self._atom(v)
        atoms = [[(self._atom(v), e) for v, e in ch] for ch in chains]
        # (an extent's form is None where it is no parameter or literal: such a chain is not used)
        self.chains = [[(a, self.of(e)) for a, e in ch] for ch in atoms]
        # a loop variable in 0 .. ub whose quotients and remainders by parameters are atoms too
        # (conv2d_wgrad_f16's m split into (n, oh, ow) by OH*OW and OW)
        self.split = None if split is None else self.atom[split]
        self.leaves = set(range(len(leaves)))

    def _atom(self, v) -> int:
        if v not in self.atom:
            self.atom[v] = len(self.value)
            self.value.append(v)
        return self.atom[v]

    def of(self, v) -> dict | None:
        """``v``'s normal form, or ``None``."""
        if v in self.atom:
            return {(self.atom[v],): 1}
        if v in self.memo:
            return self.memo[v]
        got = None
        if isinstance(v, ir.OpResult):
            op = _owner(v)
            args = [self.of(x) for x in op.operands] if op.name != "arith.constant" else []
            if None in args:
                got = None
            elif op.name == "arith.constant" and isinstance(v.type, ir.IndexType):
                got = {(): ir.IntegerAttr(op.attributes["value"]).value}
                got = {k: c for k, c in got.items() if c}
            elif op.name == "arith.addi":
                got = _add(args[0], args[1])
            elif op.name == "arith.subi":
                got = _add(args[0], args[1], -1)
            elif op.name == "arith.muli":
                got = _mul(args[0], args[1])
            elif op.name in ("arith.divsi", "arith.divui", "arith.remsi", "arith.remui"):
                got = self._part(args[0], args[1], op.name.startswith("arith.div"))
        self.memo[v] = got
        return got

    def flat(self, ch: list, lo: int, hi: int) -> dict:
        """The mixed-radix flattening of ``ch[lo:hi]`` (the last fastest)."""
        out: dict = {}
        for i in range(lo, hi):
            out = _add(out, _mul({(ch[i][0],): 1}, self.size(ch, i + 1, hi)))
        return out

    @staticmethod
    def size(ch: list, lo: int, hi: int) -> dict:
        """The product of the extents of ``ch[lo:hi]``."""
        out = {(): 1}
        for i in range(lo, hi):
            out = _mul(out, ch[i][1])
        return out

    def _part(self, p: dict, d: dict, div: bool) -> dict | None:
        for ch in self.chains:
            if any(e is None for _, e in ch):
                continue
            for lo in range(len(ch)):
                for hi in range(lo + 1, len(ch) + 1):
                    if p != self.flat(ch, lo, hi):
                        continue
                    for cut in range(lo, hi + 1):
                        if d == self.size(ch, cut, hi):
                            return self.flat(ch, lo, cut) if div else self.flat(ch, cut, hi)
        return self._split_part(p, d, div)

    def _split_part(self, p: dict, d: dict, div: bool) -> dict | None:
        """``p / d`` or ``p % d`` as an atom, for ``p`` the split loop variable or a quotient of it
        and ``d`` a product of parameters: ``(m / a) / b`` is ``m / (a*b)`` (one atom)."""
        if self.split is None or len(p) != 1 or not d or any(a not in self.leaves for m in d for a in m):
            return None
        (m, c), = p.items()
        if c != 1 or len(m) != 1:
            return None
        a = m[0]
        if a in self.meta and self.meta[a][0] == "div":
            if div:
                a, d = self.meta[a][1], _mul(self.meta[a][2], d)
        elif a != self.split:
            return None
        key = ("div" if div else "rem", a, tuple(sorted(d.items())))
        if key not in self.keys:
            self.keys[key] = len(self.value)
            self.value.append(key)
            self.meta[self.keys[key]] = (key[0], a, d)
        return {(self.keys[key],): 1}

    def holds(self, v) -> bool:
        """Whether the ``i1`` value ``v`` is true for every value of the chains: an ``arith.andi``
        of such, a true constant, ``f >= 0`` or ``f < size`` of a chain part ``f`` (and its
        extents' product)."""
        if not isinstance(v, ir.OpResult):
            return False
        op = _owner(v)
        if op.name == "arith.andi":
            return all(self.holds(x) for x in op.operands)
        if op.name == "arith.constant":
            return ir.IntegerAttr(op.attributes["value"]).value != 0
        if op.name != "arith.cmpi":
            return False
        pred = ir.IntegerAttr(op.attributes["predicate"]).value
        p, q = (self.of(x) for x in op.operands)
        if p is None or q is None:
            return False
        parts = [(self.flat(ch, lo, hi), self.size(ch, lo, hi)) for ch in self.chains
                 if all(e is not None for _, e in ch) for lo in range(len(ch)) for hi in range(lo + 1, len(ch) + 1)]
        if pred in (_SGE, _UGE) and not q:
            return not p or any(p == f for f, _ in parts)
        if pred in (_SLT, _ULT):
            return any(p == f and q == n for f, n in parts)
        return False


def _scalar(poly: dict, nm: _Normal, names: dict) -> str | None:
    """``poly`` as a kernel parameter's name or a non-negative literal, else ``None``."""
    if not poly:
        return "0"
    if list(poly) == [()]:
        return str(poly[()]) if poly[()] > 0 else None
    if len(poly) == 1:
        (m, c), = poly.items()
        if len(m) == 1 and c == 1 and nm.value[m[0]] in names:
            return names[nm.value[m[0]]]
    return None


def _nonzero(attr) -> bool:
    try:
        return ir.FloatAttr(attr).value != 0.0
    except (TypeError, ValueError):
        return ir.IntegerAttr(attr).value != 0


def _pixels_of_one_loop(nm: _Normal, forms: list, m: int):
    """The image, H and W atoms ``(m / (OH*OW), (m / OW) % OH, m % OW)`` of the split loop variable
    ``m`` the spatial coordinates use, with ``OW`` and ``OH``'s forms; ``None`` if they do not."""
    def parts(form, kind):
        return [a for mono in form for a in mono if nm.meta.get(a, ("",))[0] == kind]
    w = [a for a in parts(forms[2], "rem") if nm.meta[a][1] == m]
    h = [a for a in parts(forms[1], "rem") if nm.meta[a][1] in nm.meta and nm.meta[nm.meta[a][1]][1] == m]
    if len(w) != 1 or len(h) != 1:
        return None
    OW, OH = nm.meta[w[0]][2], nm.meta[h[0]][2]
    if nm.meta[nm.meta[h[0]][1]][2] != OW:
        return None
    n = nm.keys.get(("div", m, tuple(sorted(_mul(OH, OW).items()))))
    return None if n is None else ((n, h[0], w[0]), OW, OH)


def im2col_read(plan, s, view: ViewAccess, names: list[str], entry, X: int,
                ends_at: Callable) -> dict | str:
    """The im2col tensor map (:attr:`Param.tensor_map`, ``"mode": "im2col"``) of staged read ``s``
    of ``plan`` (:class:`~kernc.passes.tile_contractions._Analysis`) with an ``X``-row tile, or why
    it has none. Eligible: a read ``X[n', h', w', c']`` of a dense NHWC 4-d view (strides ``(H*W*C,
    W*C, C, 1)``, no start offset) whose coordinates are, in normal form (:class:`_Normal`), ``n' =
    n``, ``h' = oh*sh + r*dh - ph``, ``w' = ow*sw + s*dw - pw``, ``c' = c``, the strides, dilations,
    paddings and extents each a kernel parameter or a literal, loops from 0; a checked read's default
    0 and its mask true for every item and iteration (the im2col view's range check). Either

    - ``"rows": "pixels"`` (a forward convolution): ``(n, oh, ow)`` the tile side's coordinates in
      that order, ``(r, s, c)`` the variables of a nest of three loops (``c`` the innermost, ending
      at the view's ``C``; ``r``, ``s`` in either order); one copy per chunk writes the K-major tile
      (``pixels = X`` rows of 64 channels); or
    - ``"rows": "taps"`` (a weight gradient): ``(r, s, c)`` the tile side's coordinates (``c`` the
      last, its extent the view's ``C``) and ``(n, oh, ow)`` a nest of three loops (``n`` ending at
      the view's ``N``), or one loop ``m`` split as ``(m / (OH*OW), (m / OW) % OH, m % OW)``
      (conv2d_wgrad_f16's im2col view); per chunk one copy per 64-row block (64 channels of one tap
      by the chunk's 64 pixels: an MN-major block, ``"major": "mn"``).

    ``names``: the entry's argument names (``sig.arg_names``); ``ends_at(ub, extent)``: whether
    loop bound ``ub`` is the view extent ``extent``. The runtime conditions (``C`` a multiple of 64,
    the output the convolution's, the driver's ranges, one loop's bound ``N*OH*OW``) are the
    launcher's (:func:`kernc.backend.tensor_map.conv2d_im2col_reason`, ``binding._im2col_map``)."""
    rows = plan.sides[s.side]
    coord_names = [plan.coord_names[x] for x in rows]
    L = len(plan.levels)
    if len(rows) != 3 or L not in (1, 3):
        return (f"its tile's rows are the flattened coordinates ({', '.join(coord_names)}) and its k "
                f"{'one loop' if L == 1 else f'a nest of {L} loops'}: TMA's im2col mode loads a 2-d "
                "convolution's input with rows (n, oh, ow) and k (r, s, c), or rows (r, s, c) and k (n, oh, ow)")
    if view.layout.rank != 4:
        return f"its view is {view.layout.rank}-d, not an NHWC image (im2col mode)"
    lay = view.layout
    shape, stride = lay.shape, lay.stride
    dense = [shape[1] * shape[2] * shape[3], shape[2] * shape[3], shape[3]]
    if str(stride[3]) != "1" or any(stride[d] != dense[d] for d in range(3)) or not (
            lay.start.is_const and lay.start.value == 0):
        return f"its layout {view.layout_text} is not a dense NHWC one (im2col mode's map)"
    for level in plan.levels:
        lb = level.operands[0]
        if not (isinstance(lb, ir.OpResult) and _owner(lb).name == "arith.constant"
                and ir.IntegerAttr(_owner(lb).attributes["value"]).value == 0):
            return "its loops do not start at 0"
    args = list(entry.arguments)
    by_value = {a: names[i] for i, a in enumerate(args) if i < len(names)}
    nm = _Normal([[(plan.coords[x], plan.delin.extents[x]) for x in rows],
                  [(iv, level.operands[1]) for iv, level in zip(plan.ivs, plan.levels)]], args,
                 split=plan.ivs[0] if L == 1 else None)
    if any(e is None for ch in nm.chains for _, e in ch):
        return "its coordinates' or loops' extents are not kernel parameters or literals"
    forms = [nm.of(v) for v in view.coords]
    if None in forms:
        return "its coordinates are not sums of products of the item's and loops' coordinates (im2col mode)"
    row_atoms = [a for a, _ in nm.chains[0]]
    k_atoms = [a for a, _ in nm.chains[1]]
    if L == 3 and forms[0] == {(row_atoms[0],): 1}:
        mode, pix, taps_pool, out_names = "pixels", row_atoms, k_atoms, coord_names
        out = [plan.extents[rows[2]], plan.extents[rows[1]]]
    else:
        mode, taps_pool, out_names = "taps", row_atoms, ("n", "oh", "ow")
        if L == 3:
            pix = k_atoms
            out = [_scalar(nm.of(plan.levels[i].operands[1]), nm, by_value) for i in (2, 1)]
        else:
            got = _pixels_of_one_loop(nm, forms, k_atoms[0])
            if got is None:
                return ("its coordinates are not im2col's: x[n, oh*sh + r*dh - ph, ow*sw + s*dw - pw, c] over "
                        "rows (n, oh, ow) and k (r, s, c), or rows (r, s, c) and k (n, oh, ow) (one loop m: "
                        "n = m / (OH*OW), oh = m / OW % OH, ow = m % OW)")
            pix, OW, OH = got
            out = [_scalar(OW, nm, by_value), _scalar(OH, nm, by_value)]
        if None in out:
            return "its output extents are not kernel parameters or literals"

    def only(form, atom) -> bool:
        return form == {(atom,): 1}

    if not only(forms[0], pix[0]):
        return (f"its image coordinate is not '{out_names[0]}' (im2col mode: x[n, oh*sh + r*dh - ph, ow*sw + s*dw - "
                "pw, c])")
    if not only(forms[3], taps_pool[2]):
        return ("its channel coordinate is not the " + ("innermost loop's variable (put the channel loop innermost: "
                                                        if mode == "pixels" else "tile's last coordinate (") +
                "a chunk is 64 consecutive channels of one filter tap)")
    variant = set(k_atoms) | set(row_atoms)  # (and the split atoms: nm.meta)
    spatial, taps = [], []
    for d in (2, 1):  # W, then H (innermost first)
        outer = {pix[d]: None, taps_pool[0]: None, taps_pool[1]: None}
        rest: dict = {}
        for mono, c in forms[d].items():
            hit = [a for a in mono if a in outer]
            if len(hit) > 1 or any(a in variant or a in nm.meta for a in mono if a not in hit):
                return "its spatial coordinates are not im2col's (a product of two coordinates)"
            if hit:
                if outer[hit[0]] is not None:
                    return "its spatial coordinates are not im2col's"
                outer[hit[0]] = {tuple(a for a in mono if a != hit[0]): c}
            else:
                rest[mono] = c
        tap = [a for a in taps_pool[:2] if outer[a] is not None]
        if outer[pix[d]] is None or len(tap) != 1:
            return (f"its {'W' if d == 2 else 'H'} coordinate is not {out_names[d]}*stride + "
                    "tap*dilation - padding (im2col mode)")
        texts = [_scalar(outer[pix[d]], nm, by_value), _scalar(outer[tap[0]], nm, by_value),
                 _scalar(_add({}, rest, -1), nm, by_value)]
        where = "W" if d == 2 else "H"
        if None in texts[:2] or "0" in texts[:2]:
            return (f"its {where} stride or dilation is not a positive kernel parameter or literal (o*stride + "
                    "tap*dilation - padding; a flipped filter's -tap*dilation is not im2col's)")
        if texts[2] is None:
            return (f"its {where} padding is not a kernel parameter or literal subtracted (o*stride + tap*dilation - "
                    "padding; '+ padding' or a positive offset would be a negative padding)")
        spatial.append(texts)
        taps.append(taps_pool.index(tap[0]))
    if taps[0] == taps[1]:
        return "one loop variable is both its H and W filter tap"
    if mode == "pixels":
        filt = [_scalar(nm.of(plan.levels[t].operands[1]), nm, by_value) for t in taps]
        chan_ok = ends_at(plan.levels[2].operands[1], shape[3])
    else:
        filt = [_scalar(nm.of(plan.delin.extents[rows[t]]), nm, by_value) for t in taps]
        chan_ok = ends_at(plan.delin.extents[rows[2]], shape[3])
        if L == 3 and not ends_at(plan.levels[0].operands[1], shape[0]):
            return f"its image loop does not end at the view's N extent {shape[0]}"
    if None in filt:
        return "its filter extents are not kernel parameters or literals"
    if not chan_ok:
        return (f"its channel {'loop' if mode == 'pixels' else 'coordinate'} does not end at the view's C "
                f"extent {shape[3]}")
    if view.checked and view.default is not None and _nonzero(view.default):
        return "its checked read's default is not 0 (TMA fills the padding with 0)"
    if view.mask is not None and not nm.holds(view.mask):
        return "its read's mask is not only the im2col view's range check"
    m = {"view": names[args.index(view.buffer)], "mode": "im2col", "rows": mode,
         "dims": [str(shape[3]), str(shape[2]), str(shape[1]), str(shape[0])],
         "strides": [str(stride[2]), str(stride[1]), str(stride[0])],
         "out": out, "filter": filt,
         "stride": [spatial[0][0], spatial[1][0]], "dilation": [spatial[0][1], spatial[1][1]],
         "pad": [spatial[0][2], spatial[1][2]], "taps": [taps[0], taps[1], 2],
         "box": [CHANNELS, X], "swizzle": 128}
    if not view.checked:  # (the launcher keeps a padded walk off TMA: its zero fill would hide the error)
        m["unchecked"] = True
    if mode == "taps":
        if X % CHANNELS:
            return f"its {X}-row tile is not a multiple of the {CHANNELS}-channel blocks of its MN-major tile"
        m.update(box=[CHANNELS, CHANNELS], major="mn", copies=X // CHANNELS)
        if L == 1:  # (the launcher checks that the loop covers exactly the pixel walk)
            m["loop"] = _scalar(nm.of(plan.levels[0].operands[1]), nm, by_value)
            if m["loop"] is None:
                return "its loop's bound is not a kernel parameter or a literal"
    return m


__all__ = ["im2col_read", "CHANNELS"]
