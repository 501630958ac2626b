"""What-if results (``traceprobe.whatif/1`` dicts) as text or Markdown.

``render(result, fmt="text"|"markdown") -> str``: one line per step (measured, its period,
the predicted period, speedup; "-" and a note where the replay's model does not hold for the
step), then a sentence saying what the change buys and what then bounds the step (the
predicted critical path's ``bound_by``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from traceprobe.render.units import fmt_time


def _bound(cp: Mapping[str, Any] | None) -> str:
    if not cp or not cp.get("length_us"):
        return "nothing"
    br = cp.get("breakdown") or {}
    top = cp.get("bound_by") or (max(br, key=lambda k: br[k]) if br else None)
    if top is None:
        return "nothing"
    gpu = ("kernel", "communication", "copy", "sync_wait")
    share = sum(br.get(k, 0.0) for k in gpu) if top == "GPU" else br.get(top, 0.0)
    return f"{top} ({share / cp['length_us']:.0%} of the path)"


def _times(w: Mapping[str, Any]) -> tuple[float, float]:
    """(measured, predicted): the periods when the result has them, else the marker spans."""
    if w.get("period_us") is not None and w.get("predicted_period_us") is not None:
        return float(w["period_us"]), float(w["predicted_period_us"])
    return float(w.get("measured_us") or 0.0), float(w.get("predicted_us") or 0.0)


def sentence(w: Mapping[str, Any], scenarios: list[str],
             baseline: Sequence[str] = ()) -> str:
    what = " + ".join(scenarios) if scenarios else "no change"
    m, p = _times(w)
    step = "the trace" if w.get("step") is None else f"step {w['step']}"
    if w.get("model_holds") is False:
        return (f"{what}: no prediction for {step}, the replay's model does not hold there "
                f"({w.get('why_not')}).")
    if not scenarios:
        gain = f"replays it under {' + '.join(baseline)}" if baseline else "replays it as measured"
    elif p < m:
        gain = f"would save {fmt_time(m - p)} of {step} ({(m - p) / m:.0%}, {m / p:.2f}x faster)"
    elif p > m:
        gain = f"would cost {fmt_time(p - m)} more on {step}"
    else:
        gain = f"would not change {step}"
    measured = _bound(w.get("measured_critical_path"))
    predicted = _bound(w.get("critical_path"))
    before = f"under {' + '.join(baseline)}" if baseline else "as measured"
    return (f"{what} {gain}; the path is bound by {measured} {before}, "
            f"by {predicted} after the change.")


def render(result: Mapping[str, Any], fmt: str = "text") -> str:
    scen = list(result.get("scenarios") or [])
    base = list(result.get("baseline") or [])
    ws = list(result.get("windows") or [])
    head = ("step", "measured", "period", "predicted", "speedup")
    rows = []
    notes = list(result.get("notes") or [])
    for w in ws:
        sp = w.get("speedup")
        m, p = _times(w)
        rows.append((
            "all" if w.get("step") is None else str(w["step"]),
            fmt_time(w.get("measured_us")), fmt_time(m), fmt_time(p),
            "-" if sp is None else f"{sp:.2f}x",
        ))
        if w.get("model_holds") is False:
            notes.append(f"step {w.get('step')}: the model does not hold ({w.get('why_not')})")
    title = f"what if: {' + '.join(scen) if scen else 'no change'}"
    if result.get("baseline"):
        title += f" (both sides under {' + '.join(result['baseline'])})"
    if fmt == "markdown":
        out = [f"# {title}", "", f"Trace: `{result.get('trace')}`", ""]
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(r) + " |" for r in rows]
        out.append("")
        out += [sentence(w, scen, base) for w in ws[:1]]
        out += [f"- {n}" for n in notes]
        return "\n".join(out) + "\n"
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(head)]
    lines = [f"traceprobe whatif: {result.get('trace')}", f"  {title}", ""]
    lines.append("  " + "  ".join(h.rjust(widths[i]) for i, h in enumerate(head)))
    lines += ["  " + "  ".join(c.rjust(widths[i]) for i, c in enumerate(r)) for r in rows]
    lines.append("")
    lines += [f"  {sentence(w, scen, base)}" for w in ws[:1]]
    if len(ws) > 1:
        tot_m = sum(_times(w)[0] for w in ws)
        tot_p = sum(_times(w)[1] for w in ws)
        if tot_p > 0:
            lines.append(f"  Over all {len(ws)} steps: {fmt_time(tot_m)} measured, "
                         f"{fmt_time(tot_p)} predicted ({tot_m / tot_p:.2f}x).")
    lines += [f"  note: {n}" for n in notes]
    return "\n".join(lines) + "\n"
