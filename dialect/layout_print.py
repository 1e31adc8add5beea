"""Text and SVG pictures of rank-2 layouts (``kernc layout``), after CuTe's ``print_layout``.

Rows are mode 0, columns mode 1 (a rank-1 layout is one column); each cell holds the offset of that
coordinate. With ``banks=True`` each offset is also given its shared-memory bank,
``(offset * elem_bytes // 4) % 32`` (32 banks of 4 bytes; for 8- and 16-byte elements the bank of
the element's first word), and the text form ends with the worst bank conflict when a whole row or a
whole column is read at once, lane ``i`` of consecutive warps reading its ``i``-th element
(:func:`bank_conflicts`: the rule of ``RunStats.shared_bank_conflicts`` in
``backend/interpreter.py``, restated here because the dialect does not import the backend).
"""

from __future__ import annotations

from collections import Counter

from .layout_algebra import ComposedLayout, Layout, LayoutError

MAX_CELLS = 1 << 16
# The shared-memory model of the CPU interpreter (``SHARED_BANKS``, ``BANK_BYTES``, ``WARP_SIZE`` and
# ``RunStats`` in backend/interpreter.py; CUDA Programming Guide, "Shared Memory"). Kept equal to
# those by hand (tests/layout/test_layout_banks.py checks it): the dialect must not import the backend.
#: Shared-memory banks.
NUM_BANKS = 32
#: Width of one bank (bytes): a bank holds every 32nd 4-byte word.
BANK_BYTES = 4
#: Threads per warp: one shared-memory request is one warp's access.
WARP_SIZE = 32
#: Bytes one phase of a request serves (32 banks x 4 bytes): an 8-byte (16-byte) access is served
#: in 2 (4) phases of 16 (8) consecutive lanes.
PHASE_BYTES = NUM_BANKS * BANK_BYTES
#: Element sizes (bytes) the bank analysis takes (``--elem-bytes``).
ELEM_BYTES = (1, 2, 4, 8, 16)


def _grid(layout):
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise LayoutError(f"cannot print {layout!r}: not a layout")
    inner = layout.inner if isinstance(layout, ComposedLayout) else layout
    if not inner.is_static:
        raise LayoutError(f"printing needs static shapes; '{layout}' has size symbols")
    if inner.rank > 2:
        raise LayoutError(f"printing needs a rank-1 or rank-2 layout; '{layout}' has rank {inner.rank} "
                          f"(group modes first)")
    if inner.rank == 1:
        rows, cols = inner.size(), 1
    else:
        rows, cols = inner[0].size(), inner[1].size()
    if rows * cols > MAX_CELLS:
        raise LayoutError(f"'{layout}' has {rows * cols} cells; printing is limited to {MAX_CELLS}")
    if inner.rank == 1:
        values = [[layout(m)] for m in range(rows)]
    else:
        values = [[layout(m, n) for n in range(cols)] for m in range(rows)]
    return rows, cols, values


def _check_elem_bytes(elem_bytes) -> int:
    if isinstance(elem_bytes, bool) or elem_bytes not in ELEM_BYTES:
        # LayoutError is a ValueError
        raise LayoutError(f"elem_bytes must be one of {', '.join(map(str, ELEM_BYTES))} (bytes), "
                          f"got {elem_bytes!r}")
    return int(elem_bytes)


def bank_of(offset: int, elem_bytes: int = 4) -> int:
    """Shared-memory bank (0..31) of the element at ``offset`` (in elements) for ``elem_bytes``-byte
    elements: ``(offset*elem_bytes//4) % 32``; an 8- or 16-byte element spans 2 or 4 consecutive
    banks, and this is the first. ``LayoutError`` (a ``ValueError``) unless ``elem_bytes`` is 1, 2,
    4, 8 or 16."""
    elem_bytes = _check_elem_bytes(elem_bytes)
    return (offset * elem_bytes // BANK_BYTES) % NUM_BANKS


def bank_conflicts(offsets, elem_bytes: int = 4) -> tuple:
    """Bank conflicts of reading the elements at ``offsets`` (in elements, ``elem_bytes`` bytes each)
    at once, lane ``i`` of consecutive warps (the first starting at lane 0) reading ``offsets[i]``.

    Counted as ``RunStats.shared_bank_conflicts`` (backend/interpreter.py) counts them: the lanes
    are split into phases of ``128 // elem_bytes`` consecutive lanes for 8- and 16-byte elements
    (16 and 8 lanes: an element occupies 2 and 4 consecutive 4-byte words) and into warps of 32
    lanes for 1-, 2- and 4-byte elements (one phase per warp); a phase costs (the maximum over the
    32 banks of the number of distinct 4-byte words it touches in that bank) - 1, so several lanes
    reading one word (a broadcast) do not conflict, and a conflict-free f64 access costs 0.

    Returns ``(ways, conflicts)``: ``ways`` is the worst phase's maximum number of distinct words in
    one bank (1 = conflict-free; 0 for no offsets), ``conflicts`` the sum over phases of ``ways - 1``
    (the amount a kernel doing this read adds to ``shared_bank_conflicts``). ``LayoutError`` (a
    ``ValueError``) unless ``elem_bytes`` is 1, 2, 4, 8 or 16.
    """
    elem_bytes = _check_elem_bytes(elem_bytes)
    offsets = list(offsets)
    words_per_elem = max(1, elem_bytes // BANK_BYTES)
    lanes = min(WARP_SIZE, PHASE_BYTES // elem_bytes)   # lanes per phase: 32, 32, 32, 16, 8
    worst = total = 0
    for start in range(0, len(offsets), lanes):
        phase = offsets[start:start + lanes]
        if words_per_elem == 1:
            words = {o * elem_bytes // BANK_BYTES for o in phase}
        else:
            words = {o * words_per_elem + j for o in phase for j in range(words_per_elem)}
        ways = max(Counter(w % NUM_BANKS for w in words).values())
        worst = max(worst, ways)
        total += ways - 1
    return worst, total


def _render(rows: int, cols: int, values) -> list:
    w = max([len(str(v)) for row in values for v in row] + [len(str(cols - 1))])
    lw = max(2, len(str(rows - 1)))
    pad = " " * (lw + 2)
    sep = pad + "+" + ("-" * (w + 2) + "+") * cols
    lines = [(pad + "".join(f"  {n:>{w}} " for n in range(cols))).rstrip(), sep]
    for m in range(rows):
        lines.append(f"{m:>{lw}}  |" + "".join(f" {v:>{w}} |" for v in values[m]))
        lines.append(sep)
    return lines


def layout_to_text(layout, banks: bool = False, elem_bytes: int = 4) -> str:
    """The layout's name and a grid of offsets (CuTe ``print_layout`` style); with ``banks`` a second
    grid of banks (of ``elem_bytes``-byte elements) and a last line with the worst bank conflict of
    reading one column and one row at once: ``N-way`` and the number of conflicts as
    :func:`bank_conflicts` (and the interpreter's ``RunStats``) counts them. Returns the text.
    ``LayoutError`` (a ``ValueError``) for rank > 2, symbolic or huge layouts, and unless
    ``elem_bytes`` is 1, 2, 4, 8 or 16."""
    elem_bytes = _check_elem_bytes(elem_bytes)
    rows, cols, values = _grid(layout)
    lines = [str(layout)] + _render(rows, cols, values)
    if banks:
        bank_values = [[bank_of(v, elem_bytes) for v in row] for row in values]
        lines.append("")
        head = f"banks: (offset*{elem_bytes}//{BANK_BYTES}) % {NUM_BANKS}"
        if elem_bytes > BANK_BYTES:
            k = elem_bytes // BANK_BYTES
            head += (f" (an element's first of {k} words; a warp's access is served in {k} phases of "
                     f"{WARP_SIZE // k} lanes)")
        lines.append(head)
        lines.extend(_render(rows, cols, bank_values))
        col = [bank_conflicts([values[m][n] for m in range(rows)], elem_bytes) for n in range(cols)]
        row = [bank_conflicts(values[m], elem_bytes) for m in range(rows)]
        col_ways, col_conf = max(w for w, _ in col), max(c for _, c in col)
        row_ways, row_conf = max(w for w, _ in row), max(c for _, c in row)
        lines.append(f"bank conflicts: reading a column is up to {col_ways}-way ({col_conf} conflicts), "
                     f"a row up to {row_ways}-way ({row_conf} conflicts)")
    return "\n".join(lines) + "\n"


def layout_to_svg(layout, banks: bool = False, elem_bytes: int = 4, cell: int = 36) -> str:
    """An SVG picture of the grid: one cell per coordinate holding its offset (and ``b<bank>`` when
    ``banks``), cells coloured by bank (32 hues) when ``banks`` is set; ``elem_bytes`` is the element
    size in bytes (:func:`bank_of`). Returns the SVG text. ``LayoutError`` (a ``ValueError``) as
    :func:`layout_to_text`, and unless ``elem_bytes`` is 1, 2, 4, 8 or 16."""
    # html (not xml.sax.saxutils, which pulls in urllib.request: ~10 ms) and only here: every
    # compile of a program with a layout imports this module, ~1 ms of html.entities for nothing
    from html import escape

    elem_bytes = _check_elem_bytes(elem_bytes)
    rows, cols, values = _grid(layout)
    margin_x, margin_y = cell, cell + 24
    width, height = margin_x + cols * cell + 8, margin_y + rows * cell + 8
    font = max(8, cell // 3)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="monospace">',
        f'<title>{escape(str(layout))}</title>',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="4" y="16" font-size="14">{escape(str(layout))}</text>',
    ]
    for n in range(cols):
        x = margin_x + n * cell + cell / 2
        out.append(f'<text x="{x}" y="{margin_y - 6}" font-size="{font}" text-anchor="middle" fill="#555">{n}</text>')
    for m in range(rows):
        y = margin_y + m * cell + cell / 2
        out.append(f'<text x="{margin_x - 6}" y="{y}" font-size="{font}" text-anchor="end" '
                   f'dominant-baseline="middle" fill="#555">{m}</text>')
        for n in range(cols):
            v = values[m][n]
            x0, y0 = margin_x + n * cell, margin_y + m * cell
            if banks:
                b = bank_of(v, elem_bytes)
                fill = f"hsl({b * 360 // NUM_BANKS},70%,82%)"
            else:
                fill = "#eef2fb"
            out.append(f'<rect x="{x0}" y="{y0}" width="{cell}" height="{cell}" fill="{fill}" stroke="#333" '
                       f'stroke-width="1"><title>({m},{n}) -&gt; {v}</title></rect>')
            cx = x0 + cell / 2
            if banks:
                out.append(f'<text x="{cx}" y="{y0 + cell * 0.42}" font-size="{font}" text-anchor="middle" '
                           f'dominant-baseline="middle">{v}</text>')
                out.append(f'<text x="{cx}" y="{y0 + cell * 0.78}" font-size="{max(6, font * 2 // 3)}" '
                           f'text-anchor="middle" dominant-baseline="middle" fill="#444">b{b}</text>')
            else:
                out.append(f'<text x="{cx}" y="{y0 + cell / 2}" font-size="{font}" text-anchor="middle" '
                           f'dominant-baseline="middle">{v}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---- Jupyter ------------------------------------------------------------------------------------
# A layout in a notebook shows as the picture `kernc layout --svg` draws of it. The layout classes
# cannot import this module (it imports them), so it gives them the two methods of IPython's
# display protocol; a layout that cannot be drawn (symbolic, rank > 2, too many cells) returns
# None, and the notebook shows its repr instead.

def _repr_svg_(layout) -> str | None:
    """The SVG of :func:`layout_to_svg`, or ``None`` when the layout cannot be drawn."""
    try:
        return layout_to_svg(layout)
    except LayoutError:
        return None


def _repr_html_(layout) -> str | None:
    """The same picture inline in HTML (front ends that prefer HTML to SVG), or ``None``."""
    svg = _repr_svg_(layout)
    return None if svg is None else f'<div class="kernc-layout">{svg}</div>'


for _cls in (Layout, ComposedLayout):
    _cls._repr_svg_ = _repr_svg_
    _cls._repr_html_ = _repr_html_
