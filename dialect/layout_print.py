"""Text and SVG pictures of rank-2 layouts (``kernc layout``), after CuTe's ``print_layout``.

Rows are mode 0, columns mode 1 (a rank-1 layout is one column); each cell holds the offset of that
coordinate. With ``banks=True`` each offset is also given its shared-memory bank,
``(offset * elem_bytes // 4) % 32`` (32 banks of 4 bytes), and the text form ends with the worst
bank conflict when a whole row or a whole column is read at once (distinct 4-byte words that fall in
the same bank; equal words are broadcast and do not conflict).
"""

from __future__ import annotations

from collections import Counter

from .layout_algebra import ComposedLayout, Layout, LayoutError

MAX_CELLS = 1 << 16
NUM_BANKS = 32
BANK_BYTES = 4


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


def bank_of(offset: int, elem_bytes: int = 4) -> int:
    """Shared-memory bank of element ``offset`` for ``elem_bytes``-byte elements: ``(offset*elem_bytes//4) % 32``."""
    return (offset * elem_bytes // BANK_BYTES) % NUM_BANKS


def _ways(offsets, elem_bytes: int) -> int:
    words = {o * elem_bytes // BANK_BYTES for o in offsets}
    return max(Counter(w % NUM_BANKS for w in words).values())


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
    grid of banks and the worst row/column bank conflict. ``LayoutError`` for rank > 2, symbolic or
    huge layouts."""
    if elem_bytes < 1:
        raise LayoutError(f"elem_bytes must be positive, got {elem_bytes}")
    rows, cols, values = _grid(layout)
    lines = [str(layout)] + _render(rows, cols, values)
    if banks:
        bank_values = [[bank_of(v, elem_bytes) for v in row] for row in values]
        lines.append("")
        lines.append(f"banks: (offset*{elem_bytes}//{BANK_BYTES}) % {NUM_BANKS}")
        lines.extend(_render(rows, cols, bank_values))
        col_ways = max(_ways([values[m][n] for m in range(rows)], elem_bytes) for n in range(cols))
        row_ways = max(_ways(values[m], elem_bytes) for m in range(rows))
        lines.append(f"bank conflicts: reading a column is up to {col_ways}-way, a row up to {row_ways}-way")
    return "\n".join(lines) + "\n"


def layout_to_svg(layout, banks: bool = False, elem_bytes: int = 4, cell: int = 36) -> str:
    """An SVG picture of the grid: one cell per coordinate holding its offset (and ``b<bank>`` when
    ``banks``), cells coloured by bank (32 hues) when ``banks`` is set. Returns the SVG text."""
    # html (not xml.sax.saxutils, which pulls in urllib.request: ~10 ms) and only here: every
    # compile of a program with a layout imports this module, ~1 ms of html.entities for nothing
    from html import escape

    if elem_bytes < 1:
        raise LayoutError(f"elem_bytes must be positive, got {elem_bytes}")
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
