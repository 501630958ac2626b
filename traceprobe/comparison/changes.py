"""Which figures changed, ranked by the step time at stake, each judged against the step.

A figure is listed when it changed by at least 1% (:data:`MIN_FOLD`) and by more than noise:
0.1 percentage points for fractions, for times 0.1% of the longer span (window totals) or of
the longer mean step (per-step figures), any change for counts. Missing on either side: not
listed. The statistics of the steps (``scope`` ``"stat"``/``"sample"``) are the headline and
are not listed; nor, when both sides have steps, the span and GPU span (window totals that
restate the steps: the profiled steps' sum, or more with ``--window events``).

**At stake** (``at_stake_us``, µs per step): for a per-step figure ``|b − a|``; for a window
total ``|b / n_b − a / n_a|`` with ``n`` the report's number of steps (1 without steps: the
window is then the step); none for a figure that is not a time of the step (fractions,
counts, ratios, the per-launch latency). First the per-step rows that name what changed (the
breakdown parts, phases and idle causes), largest stake first; then the window totals with a
stake (a GPU's idle or busy time: the sums those rows refine), largest first; then the others
by fold change ``max(a, b) / min(a, b)`` (a figure 0 on one side first); ties in figure order.

**Judged against the step**: ``effect`` is ``"better"`` or ``"worse"`` by the figure's own
direction (``better``: lower or higher), None when it has none; ``regression`` is true only for
a worse figure while the steps did not get faster (the chosen step statistic of B is not below
A's; without steps on both sides: the span). A slower launch in a faster step is no regression.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from traceprobe.comparison.figures import _num, _rows, fold, steps_in
from traceprobe.comparison.words import describe_change
from traceprobe.report.stepstats import step_times

Report = Mapping[str, Any]
MIN_FOLD = 1.01  # at least a 1% change
FRACTION_NOISE = 0.001  # 0.1 percentage point
TIME_NOISE_OF_SPAN = 0.001  # 0.1% of the longer span (or mean step)
CAUSE_KEYS = ("parts[", "phases[", "idle_causes[")  # figures that name what changed
HEADLINE_SCOPES = ("stat", "sample")
SPANS = ("span_us", "gpu_span_us")


def _noise(f: Mapping[str, Any], span: float, step: float) -> float:
    if f["unit"] == "fraction":
        return FRACTION_NOISE
    if f["unit"] == "us":
        return TIME_NOISE_OF_SPAN * (step if f["scope"] == "step" else span)
    return 0.0


def at_stake(f: Mapping[str, Any], n_a: int, n_b: int) -> float | None:
    """µs per step at stake in figure ``f`` (see the module docstring)."""
    x, y = f["a"], f["b"]
    if f["scope"] == "step":
        return abs(y - x)
    if f["scope"] == "window" and f["unit"] == "us":
        return abs(y / n_b - x / n_a)
    return None


def changes(figures: Sequence[Mapping[str, Any]], a: Report, b: Report,
            steps_faster: bool) -> list[dict[str, Any]]:
    """The ranked changes (module docstring); ``steps_faster``: B's steps beat A's."""
    span = max(_num(a.get("span_us")) or 0.0, _num(b.get("span_us")) or 0.0)
    n_a, n_b = steps_in(a), steps_in(b)
    step = max((_num(a.get("span_us")) or 0.0) / n_a, (_num(b.get("span_us")) or 0.0) / n_b)
    with_steps = bool(step_times(a)) and bool(step_times(b))
    ranked = []
    for position, f in enumerate(figures):
        x, y = f["a"], f["b"]
        if x is None or y is None or f["scope"] in HEADLINE_SCOPES:
            continue
        if with_steps and f["key"] in SPANS:
            continue
        k = fold(x, y)
        if k < MIN_FOLD or abs(y - x) <= _noise(f, span, step):
            continue
        stake = at_stake(f, n_a, n_b)
        named = 0 if f["key"].startswith(CAUSE_KEYS) else 1
        key = ((named, -stake, position) if stake is not None else (2, -k, position))
        ranked.append((key, k, stake, f))
    ranked.sort(key=lambda t: t[0])
    out = []
    for _, k, stake, f in ranked:
        effect = _effect(f)
        regression = effect == "worse" and not steps_faster
        text = describe_change(f["label"], f["unit"], f["a"], f["b"])
        if effect == "worse":
            text += " — a regression" if regression else " — but the steps got faster"
        out.append({
            "key": f["key"], "label": f["label"], "unit": f["unit"], "a": f["a"], "b": f["b"],
            "fold": None if math.isinf(k) else k, "at_stake_us": stake, "effect": effect,
            "regression": regression, "text": text,
        })
    return out


def _effect(f: Mapping[str, Any]) -> str | None:
    if f["better"] is None:
        return None
    lower = f["b"] < f["a"]
    return "better" if lower == (f["better"] == "lower") else "worse"


def copy_split(a: Report, b: Report) -> list[dict[str, Any]]:
    """Per device: exposed copy time saved, split into faster copies and more hiding."""
    rows_a = {r.get("device"): r for r in _rows(a, "overlap", "copy_compute")
              if r.get("direction") == "all"}
    rows_b = {r.get("device"): r for r in _rows(b, "overlap", "copy_compute")
              if r.get("direction") == "all"}
    out = []
    for d in sorted(set(rows_a) & set(rows_b), key=str):
        ta, tb = _num(rows_a[d].get("memcpy_us")) or 0.0, _num(rows_b[d].get("memcpy_us")) or 0.0
        if ta <= 0 or tb <= 0:
            continue
        ea, eb = _num(rows_a[d].get("exposed_us")) or 0.0, _num(rows_b[d].get("exposed_us")) or 0.0
        ha, hb = 1 - ea / ta, 1 - eb / tb
        out.append({
            "device": d, "a_copy_us": ta, "b_copy_us": tb, "a_exposed_us": ea,
            "b_exposed_us": eb, "exposed_saved_us": ea - eb,
            "faster_us": (ta - tb) * (1 - ha), "hidden_us": tb * (hb - ha),
            "a_gb_per_s": _rate(a, d), "b_gb_per_s": _rate(b, d),
        })
    return out


def _rate(r: Report, device: Any) -> float | None:
    rows = [c for c in _rows(r, "copies") if c.get("device") == device]
    nbytes = sum(_num(c.get("bytes")) or 0.0 for c in rows)
    us = sum(_num(c.get("us")) or 0.0 for c in rows)
    return nbytes / (us * 1000) if us > 0 and nbytes > 0 else None
