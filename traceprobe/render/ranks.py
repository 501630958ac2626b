"""The many-rank report (``{"ranks": ..., "rank_report": ...}``) laid out for people.

    doc = ranks_document(report, top=10)       # -> tables.Document (text, Markdown, HTML)
    write_ranks_csv(report, "out/")            # ranks.csv + collectives.csv

For N ranks this is a summary, not N reports: quantiles of the rank table, the top
stragglers, the slowest and the most skewed collectives, and the per-rank rows only of
the ``top`` slowest ranks when there are more than ``top`` (JSON and CSV hold all).
``rank_report`` (``--rank R``) is an ordinary one-trace report and renders as one.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from traceprobe.render.sections import Table
from traceprobe.render.tables import Document
from traceprobe.render.units import DASH, fmt_bytes, fmt_count, fmt_pct, fmt_time

CSV_FILES = ("ranks.csv", "collectives.csv")

_QUANTILE_ROWS = (
    ("step time (median per rank)", "step_median_us", fmt_time),
    ("step time (max per rank)", "step_max_us", fmt_time),
    ("GPU busy", "busy_us", fmt_time),
    ("utilization", "utilization", fmt_pct),
    ("comm kernel time", "comm_us", fmt_time),
    ("comm hidden by compute", "hidden_fraction", fmt_pct),
    ("GPU idle", "idle_us", fmt_time),
    ("collective call time", "collective_us", fmt_time),
    ("waiting at collectives", "wait_us", fmt_time),
    ("transfer at collectives", "transfer_us", fmt_time),
)


def is_ranks(report: Any) -> bool:
    """True for the many-rank object (``traceprobe.ranks/1``: ``ranks``, ``rank_report``)."""
    return (isinstance(report, Mapping) and isinstance(report.get("ranks"), Mapping)
            and "traces" not in report)


def ranks_document(report: Mapping[str, Any], *, top: int = 10) -> Document:
    r = report["ranks"]
    clock = r.get("clock") or {}
    facts = [
        f"{fmt_count(r.get('count'))} ranks; {'; '.join(r.get('notes') or [])}",
        f"clock: {clock.get('mode', '?')}: {clock.get('how', '')}"
        + (f" (residual {fmt_time(clock['residual_us'])})"
           if clock.get("residual_us") is not None else ""),
        f"collectives matched by {r.get('matching', '?')}: "
        f"{fmt_count(len(r.get('collectives') or []))} collectives",
    ]
    tables = [_quantiles(r), *_stragglers(r, top), *_collectives(r, top), _ranks(r, top)]
    return Document(f"{fmt_count(r.get('count'))} ranks", "", list(r.get("headlines") or []),
                    facts, [t for t in tables if t is not None])


def _quantiles(r: Mapping[str, Any]) -> Table | None:
    q = r.get("quantiles") or {}
    rows = []
    for label, key, fmt in _QUANTILE_ROWS:
        v = q.get(key)
        if v:
            rows.append((label, *(fmt(v.get(k)) for k in ("min", "p50", "p90", "p99", "max"))))
    if not rows:
        return None
    return Table("Across ranks (quantiles of the rank table)",
                 ("figure", "min", "p50", "p90", "p99", "max"), "lrrrrr", rows)


def _stragglers(r: Mapping[str, Any], top: int) -> list[Table]:
    st = r.get("stragglers")
    if not st:
        return [Table("Stragglers", notes=["not computed: the ranks are not on one clock"])]
    by_rank = st.get("by_rank") or []
    out = [Table(
        "Stragglers (ranks others waited for)",
        ("rank", "last at", "late (mean)", "others waited"), "rrrr",
        [(str(x["rank"]), fmt_count(x["last_at"]), fmt_time(x["late_mean_us"]),
          fmt_time(x["waited_for_us"])) for x in by_rank[:top]],
        [f"{len(by_rank) - top} more ranks arrived last somewhere: --format json lists all"]
        if len(by_rank) > top else [],
    )]
    steps = sorted(st.get("by_step") or [], key=lambda x: -x["late_mean_us"])
    if steps:
        out.append(Table(
            "Steps with the latest arrivals",
            ("step", "last rank", "last at", "late (mean)"), "rrrr",
            [(str(x["step"]), str(x["rank"]), f"{x['last_at']} of {x['collectives']}",
              fmt_time(x["late_mean_us"])) for x in steps[:top]],
        ))
    return out


def _collectives(r: Mapping[str, Any], top: int) -> list[Table]:
    out = []
    for title, key in (("Slowest collectives", "slowest"), ("Most skewed collectives",
                                                              "most_skewed")):
        rows = [_coll_row(c) for c in (r.get(key) or [])[:top]]
        if rows:
            out.append(Table(title, ("collective", "group", "step/seq", "size", "ranks",
                                     "duration", "algbw", "busbw", "skew", "last rank"),
                             "llrrrrrrrr", rows, code=frozenset({0})))
    return out


def _coll_row(c: Mapping[str, Any]) -> tuple[str, ...]:
    where = f"seq {c['seq']}" if c.get("seq") is not None else f"step {c.get('step')}"
    return (
        str(c.get("name")), str(c.get("group") or DASH), f"{where} #{c.get('index')}",
        fmt_bytes(c.get("bytes")), fmt_count(c.get("ranks")), fmt_time(c.get("duration_us")),
        _bw(c.get("algbw_gbps")), _bw(c.get("busbw_gbps")), fmt_time(c.get("skew_us")),
        DASH if c.get("last_rank") is None else str(c["last_rank"]),
    )


def _bw(x: float | None) -> str:
    return DASH if x is None else f"{x:.1f} GB/s"


def _ranks(r: Mapping[str, Any], top: int) -> Table:
    rows = list(r.get("table") or [])
    notes = []
    if len(rows) > top:
        rows = sorted(rows, key=lambda x: (-(x.get("step_median_us") or 0), x["rank"]))[:top]
        notes.append(f"the {top} ranks with the longest median step of {len(r['table'])}; "
                     "--format json or --csv lists every rank, --rank R shows one in full")
    return Table(
        "Ranks" if not notes else "Slowest ranks",
        ("rank", "steps", "step (median)", "step (max)", "busy", "util", "comm", "hidden",
         "idle", "waited", "transfer"), "rrrrrrrrrrr",
        [(str(x["rank"]), fmt_count(x.get("steps")), fmt_time(x.get("step_median_us")),
          fmt_time(x.get("step_max_us")), fmt_time(x.get("busy_us")),
          fmt_pct(x.get("utilization")), fmt_time(x.get("comm_us")),
          fmt_pct(x.get("hidden_fraction")), fmt_time(x.get("idle_us")),
          fmt_time(x.get("wait_us")), fmt_time(x.get("transfer_us"))) for x in rows],
        notes,
    )


def _cell(v: Any) -> Any:
    from traceprobe.output import spreadsheet_safe

    if v is None:
        return ""
    return spreadsheet_safe(v) if isinstance(v, str) else v


def write_ranks_csv(
    report: Mapping[str, Any], directory: str | os.PathLike[str], *, force: bool = False
) -> None:
    """``ranks.csv`` (the rank table) and ``collectives.csv``, written atomically."""
    import csv

    from traceprobe.output import atomic_directory

    r = report["ranks"]
    with atomic_directory(directory, list(CSV_FILES), force=force) as scratch:
        for name, rows in (("ranks.csv", r.get("table") or []),
                           ("collectives.csv", r.get("collectives") or [])):
            cols: list[str] = []
            for row in rows:
                cols += [k for k in row if k not in cols]
            with open(scratch / name, "w", newline="", encoding="utf-8") as f:
                w = csv.DictWriter(f, fieldnames=cols)
                w.writeheader()
                for row in rows:
                    w.writerow({k: _cell(row.get(k)) for k in cols})
