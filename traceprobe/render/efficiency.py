"""The kernel-efficiency tables of one report (its ``efficiency`` section): per category,
per op shape, per module; read by :func:`traceprobe.render.sections.trace_tables`.

Nothing is computed here but unit conversions (docs/FIGURES.md, "Kernel efficiency").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from traceprobe.render.units import DASH, fmt_count, fmt_pct, fmt_time

MODULE_DEPTH = 3  # module rows deeper than this are left out of the text table


def _rate(x: Any, unit: str) -> str:
    if x is None:
        return DASH
    return f"{x:,.0f} {unit}" if x >= 1000 else f"{x:.3g} {unit}"


def Table(title: str, headers: tuple[str, ...], align: str,  # noqa: N802
          rows: Sequence[tuple[str, ...]], notes: list[str], code: frozenset[int] = frozenset()
          ) -> dict[str, Any]:
    """The fields of a :class:`traceprobe.render.sections.Table` (built there)."""
    return {"title": title, "headers": headers, "align": align, "rows": rows, "notes": notes,
            "code": code}


def efficiency_tables(e: Mapping[str, Any] | None, top: int) -> list[dict[str, Any]]:
    """The tables' fields of a report's ``efficiency`` section (plain data already: rates in
    TFLOP/s and GB/s), in the order shown; none without one."""
    if not isinstance(e, Mapping) or not (e.get("categories") or e.get("rows")):
        return []
    out = []
    roof = e.get("roof")
    notes = []
    if roof:
        peaks = ", ".join(f"{k} {v:g}" for k, v in (roof.get("peaks_tflops") or {}).items())
        notes.append(f"{e.get('device')}: roof of the {roof['name']} ({roof['source']}): "
                     f"{peaks} TFLOP/s dense, {roof['bandwidth_gbs']:g} GB/s")
    notes.append(f"tensor cores: {fmt_pct(e.get('tensor_core_fraction'))} of kernel time "
                 "(by kernel name)")
    notes += [str(n) for n in e.get("notes") or []]
    rows = [(str(c["category"]), fmt_count(c.get("kernels")), fmt_time(c.get("time_us")),
             fmt_pct(c["tensor_core_us"] / c["time_us"] if c.get("time_us") else None),
             _rate(c.get("tflops"), "TFLOP/s"), _rate(c.get("gbs"), "GB/s"),
             fmt_pct(c.get("roof_fraction"))) for c in e.get("categories") or []]
    out.append(Table("Kernel efficiency", ("category", "kernels", "time", "tensor cores",
                                           "achieved", "bandwidth", "of roof"),
                     "lrrrrrr", rows, notes))
    shapes = [x for x in e.get("rows") or [] if x.get("time_us")][:top]
    if shapes:
        srows = [(str(x.get("op") or x.get("kernel") or DASH), str(x.get("input_dims") or DASH),
                  str(x.get("dtype") or DASH) + (" TC" if x.get("tensor_core") else ""),
                  fmt_count(x.get("calls")), fmt_time(x.get("time_us")),
                  _rate(x.get("tflops"), "TFLOP/s"), _rate(x.get("gbs"), "GB/s"),
                  DASH if x.get("intensity") is None else f"{x['intensity']:.3g}",
                  str(x.get("bound") or DASH), fmt_pct(x.get("roof_fraction")))
                 for x in shapes]
        out.append(Table("Efficiency per op shape", (
            "op", "input dims", "dtype", "calls", "kernel time", "achieved", "bandwidth",
            "FLOP/byte", "bound", "of roof"), "lllrrrrrlr", srows,
            ["one row per (op, input dims, input types), by kernel time; TC: on tensor cores"],
            code=frozenset({0})))
    mods = e.get("modules")
    if isinstance(mods, Mapping) and mods.get("rows"):
        mrows = [("  " * int(m["depth"]) + str(m["path"]).rsplit("/", 1)[-1],
                  fmt_count(m.get("calls")), fmt_time(m.get("self_us")),
                  fmt_time(m.get("total_us")))
                 for m in mods["rows"] if int(m["depth"]) < MODULE_DEPTH]
        out.append(Table("GPU time per module", ("module", "calls", "self", "total"), "lrrr",
                         mrows, [f"outside every module (backward, optimizer): "
                                 f"{fmt_time(mods.get('outside_us'))}"], code=frozenset({0})))
    return out
