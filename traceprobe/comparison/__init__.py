"""Two reports side by side: what got faster, what overlaps more, what changed most.

::

    result = compare(report_a, report_b)   # two one-trace report dicts -> plain dict
    print(format_text(result, top=10))

Both inputs are ``Report.to_dict()`` objects (docs/REPORT_SCHEMA.md); nothing else is
read. The result is deterministic (same inputs, same dict, same order) and JSON-safe
(no NaN or infinity)::

    {
      "schema": "traceprobe.compare/1",
      "a": {"trace": ..., "window": {...}},  "b": {...},
      "speedup": {"span": a.span_us / b.span_us, "gpu_span": a.gpu_span_us / b.gpu_span_us},
      "steps": {"stat": "median", "a": {"count", "p50_us", "p90_us", "mean_us", "min_us",
                "max_us"} | null, "b": {...} | null, "speedup": a_stat / b_stat | null,
                "per_sample": {"a_batch", "b_batch", "a_us", "b_us", "speedup"} | null},
      "figures": [{"key", "label", "unit", "scope", "better", "a", "b", "delta",
                   "relative"}, ...],
      "changes": [{"key", "label", "unit", "a", "b", "fold", "at_stake_us", "effect",
                   "regression", "text"}, ...],   # ranked
      "devices_only_in": {"a": [device, ...], "b": [...]},
      "copies": [{"device", "a_copy_us", "b_copy_us", "a_exposed_us", "b_exposed_us",
                  "exposed_saved_us", "faster_us", "hidden_us", "a_gb_per_s", "b_gb_per_s"}]
    }

``speedup`` > 1 means B is faster than A (null when B's span is 0). ``steps`` compares the
steps (:mod:`traceprobe.report.stepstats`): their statistics on each side and the speedup of
the chosen one (``step_stat``: ``median``, ``p90`` or ``mean``; > 1: B's steps are faster);
``per_sample`` divides the statistic by each side's batch size when both are given. Windows of
different step counts are not comparable as totals; the steps are.

``figures`` holds, in a fixed order: span, GPU span, each device's busy / utilization / idle,
each overlap figure (device pairs, time with >= 2 devices busy, copy/compute and comm/compute
per device and direction, stream concurrency), the serial-equivalent ratios and the median
launch latency; then, when either side has steps, the step statistics (median, p90, mean,
min, max; per sample too with both batch sizes), each step-breakdown part per step and device
(``parts[d].dataloader_us``: the part's mean time per step), each phase per step
(``phases[backward]_us``: host time, one row whatever the devices), and the listed idle
causes of each kind per step (``idle_causes[d].dataloader_us``). ``scope`` and ``better`` say
what each is (:mod:`.figures`). ``delta`` is b - a and ``relative`` is (b - a) / |a| (null
when a value is missing or a is 0).

``changes`` ranks the figures by the **step time at stake**, each judged against the step
(:mod:`.changes`): the figures that moved most µs per step first, then those that are not a
time of the step by fold change; ``regression`` only where a figure got worse while the steps
did not get faster. Figures missing on either side are not ranked; devices present in one
report only are listed in ``devices_only_in``.

``copies`` splits, per device with copies on both sides, the change in **exposed** copy time
(copy time no kernel of the device hid; ``overlap.copy_compute`` row "all") into two exact parts:
with T the copy time and h the hidden fraction, ``faster_us = (T_a − T_b)·(1 − h_a)`` (what B
saves because its copies take less time, hidden as A hid them) and ``hidden_us = T_b·(h_b −
h_a)`` (what B saves because more of its copy time hides); they sum to ``exposed_saved_us =
E_a − E_b``. ``*_gb_per_s``: all bytes over all copy time of the device (report ``copies``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

from traceprobe.comparison.changes import MIN_FOLD, changes, copy_split
from traceprobe.comparison.figures import _num, _rows, figures
from traceprobe.comparison.words import (
    copy_words,
    describe_change,
    fmt_value,
    format_text,
    speedup_words,
    step_words,
)
from traceprobe.errors import UsageError
from traceprobe.report.stepstats import step_stats

__all__ = ["MIN_FOLD", "SCHEMA", "STEP_STATS", "compare", "copy_split", "copy_words",
           "describe_change", "fmt_value", "format_text", "speedup_words", "step_words"]

Report = Mapping[str, Any]
SCHEMA = "traceprobe.compare/1"
STEP_STATS = ("median", "p90", "mean")  # what --step-stat may choose


def _ratio(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None or y == 0 else x / y


def compare(a: Report, b: Report, *, step_stat: str = "median",
            batch: tuple[int | None, int | None] = (None, None)) -> dict[str, Any]:
    """Compare two one-trace report dicts; see the module docstring for the result.
    ``batch``: A's and B's batch sizes (samples per step), for the per-sample figures."""
    for label, r in (("A", a), ("B", b)):
        if not isinstance(r, Mapping):
            raise UsageError(f"compare: report {label} is not a report dict")
        if "traces" in r and "trace" not in r:
            raise UsageError(
                f"compare: report {label} holds several traces; compare one trace with one trace"
            )
    if step_stat not in STEP_STATS:
        raise UsageError(f"step_stat must be one of {', '.join(STEP_STATS)}, not {step_stat!r}")
    for label, n in zip("AB", batch, strict=True):
        if n is not None and n <= 0:
            raise UsageError(f"compare: {label}'s batch size must be 1 or more, not {n}")
    rows = []
    for f in figures(a, b, batch):
        x, y = _num(f.a), _num(f.b)
        rows.append({
            "key": f.key, "label": f.label, "unit": f.unit, "scope": f.scope,
            "better": f.better, "a": x, "b": y,
            "delta": None if x is None or y is None else y - x,
            "relative": None if x is None or y is None or x == 0 else (y - x) / abs(x),
        })
    steps = _steps(a, b, step_stat, batch)
    if steps["speedup"] is not None:
        faster = steps["speedup"] > 1
    else:
        faster = (_ratio(_num(a.get("span_us")), _num(b.get("span_us"))) or 0.0) > 1
    devs_a = {row.get("device") for row in _rows(a, "devices")}
    devs_b = {row.get("device") for row in _rows(b, "devices")}
    return {
        "schema": SCHEMA,
        "a": {"trace": a.get("trace"), "window": a.get("window"), **_input(a)},
        "b": {"trace": b.get("trace"), "window": b.get("window"), **_input(b)},
        "speedup": {
            "span": _ratio(_num(a.get("span_us")), _num(b.get("span_us"))),
            "gpu_span": _ratio(_num(a.get("gpu_span_us")), _num(b.get("gpu_span_us"))),
        },
        "steps": steps,
        "figures": rows,
        "changes": changes(rows, a, b, faster),
        "devices_only_in": {
            "a": sorted(devs_a - devs_b, key=str),
            "b": sorted(devs_b - devs_a, key=str),
        },
        "copies": copy_split(a, b),
    }


def _steps(a: Report, b: Report, stat: str, batch: tuple[int | None, int | None]
           ) -> dict[str, Any]:
    sa, sb = step_stats(a), step_stats(b)
    va = None if sa is None else sa.stat(stat)
    vb = None if sb is None else sb.stat(stat)
    per = None
    if va is not None and vb is not None and batch[0] and batch[1]:
        pa, pb = va / batch[0], vb / batch[1]
        per = {"a_batch": batch[0], "b_batch": batch[1], "a_us": pa, "b_us": pb,
               "speedup": _ratio(pa, pb)}
    return {"stat": stat, "a": None if sa is None else asdict(sa),
            "b": None if sb is None else asdict(sb), "speedup": _ratio(va, vb),
            "per_sample": per}


def _input(r: Mapping[str, Any]) -> dict[str, Any]:
    """The report's ``salvaged`` and ``warnings``, only where there are any (the text says
    them too: a figure of a cut-short or leniently read trace is not what it seems)."""
    out: dict[str, Any] = {}
    if r.get("salvaged"):
        out["salvaged"] = r["salvaged"]
    if r.get("warnings"):
        out["warnings"] = list(r["warnings"])
    return out
