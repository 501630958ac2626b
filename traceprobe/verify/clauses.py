"""What the rules share: readings of a variant and the words their sentences are made of.

    shortfall(v, 2, "cross-device overlap needs two")  # None, or why one cannot tell
    speedups(v, base)                                   # per-step time ratios, trace and wall
    speedups_over(v, peers, "serial")                   # the same, over the baseline variant
    pct(0.972) == "97.2%"; times(1.5) == "1.50x"; dur(1500.0) == "1.50 ms"
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from traceprobe.report.headlines import BUSY_ENOUGH, duration
from traceprobe.verify.figures import Figures
from traceprobe.verify.recorded import Recorded
from traceprobe.verify.thresholds import SPEEDUP_CLEAR


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def dur(us: float | None) -> str:
    return "n/a" if us is None else duration(us * 1000.0)


def times(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def rows_at(r: Mapping[str, Any], *path: str) -> list[Mapping[str, Any]]:
    """The mappings in the list at ``path`` of a report dict; [] where there is none."""
    obj: Any = r
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return [x for x in (obj or []) if isinstance(x, Mapping)]


def gpus_used(meta: Mapping[str, Any]) -> list[str]:
    """Distinct GPUs the variant ran on (``devices_used``; per rank for DDP)."""
    used = list(meta.get("devices_used") or [])
    used += [str(r.get("device")) for r in meta.get("ranks") or []]
    return sorted({str(d) for d in used if str(d).startswith("cuda")})


def shortfall(v: Recorded, need: int, what: str) -> str | None:
    """None when the variant ran on ``need`` GPUs with GPU activity, else the why."""
    used = gpus_used(v.meta)
    if len(used) >= need and v.has_gpu:
        return None
    if not used:
        had = len(v.meta.get("gpus") or [])  # the GPUs this machine has (meta.environment)
        where = (f"ran on the CPU (--device cpu, {had} GPU{'s' if had > 1 else ''} unused)"
                 if had else "ran on the CPU (0 GPUs on this machine)")
    elif len(used) < need:
        where = f"ran on {len(used)} GPU"
    else:
        where = f"ran on {len(used)} GPUs but the trace holds no GPU activity"
    return f"{where}: {what}"


def best_pair(report: Mapping[str, Any]) -> tuple[int, int]:
    rows = [r for r in rows_at(report, "overlap", "cross_device") if r.get("fraction_of_either")]
    if not rows:
        return (0, 1)
    row = max(rows, key=lambda r: r["fraction_of_either"])
    a, b = row.get("devices") or (0, 1)
    return int(a), int(b)


def idle_clause(report: Mapping[str, Any]) -> str:
    """'; GPU 1 was idle 45.0% of the window while the host spent 2.7 s in cudaHostAlloc'."""
    devs = [d for d in rows_at(report, "devices") if d.get("utilization") is not None]
    if not devs:
        return ""
    dev = min(devs, key=lambda d: d["utilization"])
    if dev["utilization"] >= BUSY_ENOUGH:
        return ""
    text = f"; GPU {dev.get('device')} was idle {pct(1 - dev['utilization'])} of the window"
    for h in rows_at(report, "host", "devices"):
        causes = rows_at(h, "causes")
        if h.get("device") == dev.get("device") and causes:
            text += f" while the host spent {dur(causes[0].get('us'))} in {causes[0].get('name')}"
    return text


def copy_row(report: Mapping[str, Any]) -> dict[str, float]:
    """The "all" rows of copy_compute, summed over devices."""
    rows = [r for r in rows_at(report, "overlap", "copy_compute") if r.get("direction") == "all"]
    keys = ("memcpy_us", "hidden_us", "exposed_us", "copies", "pageable")
    return {k: sum(float(r.get(k) or 0) for r in rows) for k in keys}


def speedups(v: Recorded, base: Recorded | None) -> Figures:
    """Per-step time of ``base`` over that of ``v``, from the traces and the wall clock."""
    if base is None:
        return {}
    return {
        "baseline": base.variant,
        "speedup_gpu_span": ratio(base.per_step_us("gpu_span_us"), v.per_step_us("gpu_span_us")),
        "speedup_span": ratio(base.per_step_us("span_us"), v.per_step_us("span_us")),
        "speedup_wall": ratio(base.plain_step_us, v.plain_step_us),
    }


def speedups_over(v: Recorded, peers: Mapping[str, Recorded], baseline: str) -> Figures:
    """:func:`speedups` over the ``baseline`` variant; {} for the baseline itself."""
    return {} if v.variant == baseline else speedups(v, peers.get(baseline))


def clear_speedup(s: Figures) -> bool:
    """Both the trace and the wall clock (when measured) show at least SPEEDUP_CLEAR."""
    trace = s.get("speedup_gpu_span") or s.get("speedup_span")
    wall = s.get("speedup_wall")
    return trace is not None and trace >= SPEEDUP_CLEAR and (wall is None or wall >= SPEEDUP_CLEAR)


def speed_clause(s: Figures, against: str) -> str:
    trace = s.get("speedup_gpu_span") or s.get("speedup_span")
    if trace is None:
        return ""
    return (f", a speedup over {against} of {times(trace)} by the trace "
            f"({times(s.get('speedup_wall'))} by the wall clock)")

