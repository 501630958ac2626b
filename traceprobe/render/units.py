"""How a figure is written in a table cell: ``8.25 µs``, ``91.2%``, ``1.50 GiB``, ``1.75×``.

    fmt_time(8250.0) == "8.25 ms"; fmt_pct(0.912) == "91.2%"; fmt_bytes(1536) == "1.50 KiB"

Every function takes None (and NaN) for an unknown figure and writes it as :data:`DASH`;
times are in microseconds, as in the report dict (docs/REPORT_SCHEMA.md): a renderer reading a
Report's integer ns writes ``fmt_time(us(ns))``, the same float the JSON holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

DASH = "—"


def fmt_time(us: float | None) -> str:
    """Microseconds as a short human figure: ``420 ns``, ``8.25 µs``, ``12.3 ms``, ``1.46 s``."""
    if us is None:
        return DASH
    us = float(us)
    if us != us:  # NaN
        return DASH
    if us == 0:
        return "0"
    for scale, unit in ((1e-3, "ns"), (1.0, "µs"), (1e3, "ms"), (1e6, "s")):
        v = us / scale
        text = _three_figures(v)
        if abs(float(text)) < 1000 or unit == "s":
            return f"{text} {unit}"
    raise AssertionError("unreachable")


def _three_figures(v: float) -> str:
    a = abs(v)
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def fmt_pct(fraction: float | None) -> str:
    """A fraction in [0, 1] as a percentage with one decimal; tiny non-zero shares as <0.1%."""
    if fraction is None or fraction != fraction:
        return DASH
    if 0 < fraction < 0.0005:
        return "<0.1%"
    return f"{fraction * 100:.1f}%"


def fmt_count(n: int | float | None) -> str:
    if n is None:
        return DASH
    return f"{int(n):,}"


def fmt_bytes(n: int | float | None) -> str:
    """Bytes in binary units: ``512 B``, ``4.00 KiB``, ``1.50 GiB``; unknown (None, < 0): a dash."""
    if n is None or n < 0:
        return DASH
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{_three_figures(n)} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def fmt_ratio(x: float | None) -> str:
    if x is None or x != x:
        return DASH
    return f"{x:.2f}×"


def fmt_device(d: Any) -> str:
    return DASH if d is None else str(d)


# The writer of a figure by its unit, as named in the verdicts' ``units`` and compare's rows.
UNIT_FORMATS: dict[str, Callable[[float | None], str]] = {
    "us": fmt_time,
    "fraction": fmt_pct,
    "ratio": fmt_ratio,
}


def us(ns: float | None) -> float | None:
    """A report's nanoseconds in microseconds, the unit the ``fmt_*`` functions take (the
    same float ``Report.to_dict`` writes: ``ns / 1000``, correctly rounded)."""
    return None if ns is None else ns / 1000
