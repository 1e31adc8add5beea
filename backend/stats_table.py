"""``RunStats`` as an aligned text table (``str(result.stats)``, ``print(res.stats)``), with the
ratios the counters are read for: sectors per request (4 is ideal for 4-byte elements, 32 lanes x
4 bytes = 128 bytes = 4 sectors) and bank conflicts per shared request (0 is ideal). The
definitions of the counters are :class:`kernc.backend.interpreter.RunStats`'s."""

from __future__ import annotations

#: ``(counter, what it counts)``, in table order.
ROWS = (
    ("global_load_requests", "warp requests of global loads"),
    ("global_load_sectors", "32-byte sectors they touch"),
    ("global_store_requests", "warp requests of global stores"),
    ("global_store_sectors", "32-byte sectors they touch"),
    ("global_atomics", "lanes that ran a global atomic"),
    ("shared_requests", "warp requests to workgroup memory"),
    ("shared_bank_conflicts", "extra 4-byte words per bank, summed"),
    ("threads", "grid x block"),
    ("blocks", "grid"),
)


def _ratio(num: int, den: int, what: str) -> str:
    return f"{num / den:.2f} {what}" if den else ""


def stats_rows(stats) -> list[tuple[str, int, str, str]]:
    """``[(counter, value, meaning, ratio)]`` of ``stats`` (an object with ``to_dict()``)."""
    d = stats.to_dict()
    ratios = {
        "global_load_sectors": _ratio(d["global_load_sectors"], d["global_load_requests"], "per request"),
        "global_store_sectors": _ratio(d["global_store_sectors"], d["global_store_requests"], "per request"),
        "shared_bank_conflicts": _ratio(d["shared_bank_conflicts"], d["shared_requests"], "per request"),
    }
    known = [name for name, _ in ROWS]
    rows = [(name, d[name], meaning, ratios.get(name, "")) for name, meaning in ROWS if name in d]
    rows += [(name, value, "", "") for name, value in d.items() if name not in known]  # a new counter
    return rows


def stats_table(stats) -> str:
    """The counters of ``stats`` as a text table, one counter a line, columns aligned."""
    rows = stats_rows(stats)
    w_name = max(len(r[0]) for r in rows)
    w_value = max(len(str(r[1])) for r in rows)
    w_meaning = max(len(r[2]) for r in rows)
    lines = [f"{name:<{w_name}}  {value:>{w_value}}  {meaning:<{w_meaning}}  {ratio}".rstrip()
             for name, value, meaning, ratio in rows]
    return "\n".join(lines)


def stats_html(stats) -> str:
    """The same table as HTML (Jupyter's ``_repr_html_``)."""
    import html

    body = "".join(
        f"<tr><td><code>{html.escape(name)}</code></td><td style='text-align:right'>{value}</td>"
        f"<td>{html.escape(meaning)}</td><td>{html.escape(ratio)}</td></tr>"
        for name, value, meaning, ratio in stats_rows(stats))
    return f"<table><tr><th>counter</th><th>value</th><th></th><th></th></tr>{body}</table>"


__all__ = ["stats_table", "stats_html", "stats_rows"]
