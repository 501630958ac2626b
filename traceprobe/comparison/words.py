"""Comparisons in plain words, and the terminal rendering of a comparison."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from traceprobe.comparison.figures import STAT_LABELS, _get, fold
from traceprobe.render.units import DASH, UNIT_FORMATS


def fmt_value(unit: str, v: float | None) -> str:
    if unit in UNIT_FORMATS:
        return UNIT_FORMATS[unit](v)
    return DASH if v is None else f"{v:g}"


def describe_change(label: str, unit: str, x: float, y: float) -> str:
    """One change in plain words, e.g. ``span fell from 1.00 ms to 520 µs (-48.0%, 1.92× less)``."""
    verb = "rose" if y > x else "fell"
    text = f"{label} {verb} from {fmt_value(unit, x)} to {fmt_value(unit, y)}"
    if unit == "fraction":
        return f"{text} ({(y - x) * 100:+.1f} points)"
    if unit == "count":
        return text
    if x == 0:
        return text
    k = fold(x, y)
    times = f"{k:.2f}× {'more' if y > x else 'less'}" if math.isfinite(k) else ""
    return f"{text} ({(y - x) / abs(x) * 100:+.1f}%{', ' + times if times else ''})"


def step_words(result: Mapping[str, Any]) -> list[str]:
    """'B's median step is 1.59× faster than A's: 8.52 ms → 5.36 ms (p90 ..., 3 vs 3 steps)';
    the same per sample when both batch sizes are known."""
    steps = result.get("steps") or {}
    sa, sb, stat = steps.get("a"), steps.get("b"), steps.get("stat", "median")
    if not sa or not sb:
        only = "A" if sa else "B" if sb else None
        return [f"only {only} has ProfilerSteps: no step comparison"] if only else []
    name = STAT_LABELS.get(stat, stat)
    key = {"median": "p50_us"}.get(stat, f"{stat}_us")
    rest = "; ".join(f"{STAT_LABELS[s]} {fmt_value('us', sa[k])} → {fmt_value('us', sb[k])}"
                     for s, k in (("median", "p50_us"), ("p90", "p90_us"), ("min", "min_us"))
                     if s != stat)
    out = [f"B's {name} step is {_times(steps.get('speedup'))} A's: "
           f"{fmt_value('us', sa[key])} → {fmt_value('us', sb[key])} ({rest}; "
           f"{sa['count']} vs {sb['count']} steps)"]
    per = steps.get("per_sample")
    if per:
        out.append(f"Per sample (batch {per['a_batch']} vs {per['b_batch']}): {name} "
                   f"{fmt_value('us', per['a_us'])} → {fmt_value('us', per['b_us'])}, B "
                   f"{_times(per['speedup'])} A")
    return out


def _times(s: float | None) -> str:
    if s is None:
        return "not comparable with"
    if round(s, 2) == 1.0:
        return "as fast as"
    return f"{s:.2f}× faster than" if s > 1 else f"{1 / s:.2f}× slower than"


def speedup_words(result: Mapping[str, Any]) -> list[str]:
    out = []
    for key, what in (("span", "the whole window"), ("gpu_span", "the GPU span")):
        s = result["speedup"].get(key)
        if not s:  # null (B's is 0) or 0 (A's is 0: A has no GPU activity)
            continue
        if round(s, 2) == 1.0:
            out.append(f"A and B take the same time over {what} (B/A = {1 / s:.3f})")
        elif s > 1:
            out.append(f"B is {s:.2f}× faster than A over {what}")
        else:
            out.append(f"B is {1 / s:.2f}× slower than A over {what}")
    return out


def _input_lines(result: Mapping[str, Any]) -> list[str]:
    """A cut-short or leniently read trace, said under its name."""
    lines = []
    for side in ("a", "b"):
        s = result[side].get("salvaged")
        if s:
            lines.append(f"  {side.upper()} was cut short ({s.get('reason')}): only the "
                         f"{s.get('events_kept', 0):,} complete events before the cut count")
        lines += [f"  {side.upper()} read leniently: {w}"
                  for w in result[side].get("warnings") or ()]
    return lines


def format_text(result: Mapping[str, Any], *, top: int = 10) -> str:
    """A terminal rendering: speedups, the ``top`` largest changes, then every figure."""
    lines = [
        "traceprobe compare",
        f"  A: {result['a'].get('trace')}{_step(result['a'])}",
        f"  B: {result['b'].get('trace')}{_step(result['b'])}",
        *_input_lines(result),
        "",
    ]
    lines += [f"  * {s}" for s in step_words(result)]
    lines += [f"  * {s}" for s in speedup_words(result)]
    lines += [f"  * {s}" for s in copy_words(result)]
    changes = result["changes"][:top] if top >= 0 else result["changes"]
    if changes:
        lines += ["", "What changed most (step time at stake first, then relative change):"]
        lines += [f"  {i}. {c['text']}" for i, c in enumerate(changes, start=1)]
    elif result["changes"] == []:
        lines += ["", "Nothing changed by 1% or more."]
    for side in ("a", "b"):
        only = result["devices_only_in"][side]
        if only:
            lines.append(f"  GPU {', '.join(map(str, only))} only in {side.upper()}")
    rows = [
        (f["label"], fmt_value(f["unit"], f["a"]), fmt_value(f["unit"], f["b"]), _delta(f))
        for f in result["figures"]
    ]
    headers = ("figure", "A", "B", "change")
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        rest = [c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True)]
        return ("  " + "  ".join([first, *rest])).rstrip()

    lines += ["", "Figures:", line(headers), line(["-" * w for w in widths])]
    lines += [line(r) for r in rows]
    return "\n".join(lines) + "\n"


def _step(side: Mapping[str, Any]) -> str:
    step = _get(side, "window", "step")
    return "" if step is None else f" (step {step})"


def _delta(f: Mapping[str, Any]) -> str:
    x, y = f["a"], f["b"]
    if x is None or y is None:
        return "—"
    if x == y:
        return "="
    if f["unit"] == "fraction":
        return f"{(y - x) * 100:+.1f} pt"
    if f["unit"] == "count":
        return f"{y - x:+g}"
    if x == 0:
        return "new"
    return f"{(y - x) / abs(x) * 100:+.1f}%"


def copy_words(result: Mapping[str, Any]) -> list[str]:
    """'Copies on GPU 0: exposed copy time fell by 2.25 s: 2.19 s from faster copies ...'."""
    out = []
    for c in result.get("copies") or []:
        saved = c["exposed_saved_us"]
        if abs(saved) < 1e-9:
            continue
        rate = ""
        if c.get("a_gb_per_s") and c.get("b_gb_per_s"):
            rate = f", {c['a_gb_per_s']:.3g} → {c['b_gb_per_s']:.3g} GB/s"
        verb = "fell" if saved > 0 else "rose"
        out.append(
            f"Copies on GPU {c['device']}: exposed copy time {verb} by "
            f"{fmt_value('us', abs(saved))}: {fmt_value('us', c['faster_us'])} because the copies "
            f"took {'less' if c['faster_us'] >= 0 else 'more'} time "
            f"({fmt_value('us', c['a_copy_us'])} → {fmt_value('us', c['b_copy_us'])}{rate}), "
            f"{fmt_value('us', c['hidden_us'])} because more of them hid under compute "
            f"({(1 - c['a_exposed_us'] / c['a_copy_us']) * 100:.1f}% → "
            f"{(1 - c['b_exposed_us'] / c['b_copy_us']) * 100:.1f}% hidden)")
    return out
