"""Step-level figures of a report dict: step-time statistics and the breakdown's shares.

    stats = step_stats(report.to_dict())        # StepStats(count, p50_us, p90_us, ...) or None
    shares = part_shares(report.to_dict(), 0)   # {"kernel": 0.21, "dataloader": 0.49, ...}

Functions of a finished ``traceprobe.report/1`` dict (docs/REPORT_SCHEMA.md), read by
``compare`` and ``check``; they compute no interval, only sums and order statistics of the
report's own ``step_breakdown`` rows (docs/FIGURES.md, "Step statistics"):

* a step's time is the sum of its ``step_breakdown`` row's parts (they partition the step, so
  this is ``end_us − start_us`` without the rounding of subtracting two epoch-scale µs
  floats; every device's row of a step has the same window; the first is read);
* ``p50``/``p90``: percentiles with linear interpolation between closest ranks (numpy's
  default), ``mean`` the arithmetic mean, ``min``/``max`` the extremes;
* a part's share over the steps is the sum of that part's time over the steps of one device
  divided by the sum of those steps' times (so long steps weigh more, as in the window).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Report = Mapping[str, Any]
STATS = ("median", "p90", "mean", "min", "max")


@dataclass(frozen=True)
class StepStats:
    """Order statistics of the steps' times (µs); ``count`` steps, all > 0 of them."""

    count: int
    p50_us: float
    p90_us: float
    mean_us: float
    min_us: float
    max_us: float

    def stat(self, name: str) -> float:
        """``median`` (= p50), ``p90``, ``mean``, ``min`` or ``max``."""
        return {"median": self.p50_us, "p50": self.p50_us, "p90": self.p90_us,
                "mean": self.mean_us, "min": self.min_us, "max": self.max_us}[name]


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) with linear interpolation between closest ranks:
    ``numpy.percentile``'s default, here without numpy (``values`` not empty)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _rows(report: Report) -> list[Mapping[str, Any]]:
    return [r for r in (report.get("step_breakdown") or []) if isinstance(r, Mapping)]


def step_times(report: Report) -> list[tuple[int, float]]:
    """``(step, µs)`` of each step in the report's window, in the report's order."""
    seen: dict[int, float] = {}
    for row in _rows(report):
        n = row.get("step")
        if isinstance(n, int) and n not in seen:
            seen[n] = _length(row)
    return list(seen.items())


def _length(row: Mapping[str, Any]) -> float:
    """A step's µs: its parts' sum, to the ns (see the module docstring)."""
    parts = row.get("parts")
    if parts:
        return round(sum(float(p["us"]) for p in parts), 3)
    return float(row["end_us"]) - float(row["start_us"])


def step_stats(report: Report) -> StepStats | None:
    """The steps' statistics, None for a report without steps."""
    times = [us for _, us in step_times(report)]
    if not times:
        return None
    return StepStats(len(times), percentile(times, 50), percentile(times, 90),
                     sum(times) / len(times), min(times), max(times))


def devices_with_steps(report: Report) -> list[int | None]:
    """The devices of the ``step_breakdown`` rows, in the report's order (None: no GPU)."""
    out: list[int | None] = []
    for row in _rows(report):
        d = row.get("device")
        if d not in out:
            out.append(d)
    return out


def part_shares(report: Report, device: int | None, key: str = "parts") -> dict[str, float]:
    """Per part (``key``: ``"parts"``, or ``"phases"``) of the step breakdown of ``device``:
    its time over the steps / the steps' time; empty without steps or when they last 0."""
    times = part_times(report, device, key)
    total = sum(us for _, us in step_times_of(report, device))
    if total <= 0:
        return {}
    return {name: us / total for name, us in times.items()}


def part_times(report: Report, device: int | None, key: str = "parts") -> dict[str, float]:
    """Per part: its time (µs) summed over the steps of ``device`` (report order of parts)."""
    out: dict[str, float] = {}
    for row in _rows(report):
        if row.get("device") != device:
            continue
        for p in row.get(key) or []:
            out[p["name"]] = out.get(p["name"], 0.0) + float(p["us"])
    return out


def step_times_of(report: Report, device: int | None) -> list[tuple[int, float]]:
    """``(step, µs)`` of the steps that have a row for ``device``."""
    return [(int(r["step"]), _length(r)) for r in _rows(report)
            if r.get("device") == device and isinstance(r.get("step"), int)]


def per_step_parts(report: Report, device: int | None, key: str = "parts"
                   ) -> list[tuple[int, float, dict[str, float]]]:
    """``(step, step µs, {part: µs})`` per step of ``device``: one bar of a chart each."""
    return [(int(r["step"]), _length(r), {p["name"]: float(p["us"]) for p in r.get(key) or []})
            for r in _rows(report) if r.get("device") == device]
