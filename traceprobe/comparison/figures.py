"""The figures two reports are compared on, each with what it says about a step.

Each figure is ``Figure(key, label, unit, a, b, scope, better)``: ``scope`` says which time
the figure is (``"window"``: a total over the analysed window; ``"step"``: a mean per step;
``"stat"``: a statistic of the steps' times; None: not a time of the step, e.g. a fraction,
a count or a per-launch latency) and ``better`` which way is an improvement (``"lower"``,
``"higher"`` or None when neither is). The order is fixed (the package docstring).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

from traceprobe.report.stepstats import (
    STATS,
    devices_with_steps,
    part_times,
    step_stats,
    step_times,
    step_times_of,
)

Report = Mapping[str, Any]


class Figure(NamedTuple):
    key: str
    label: str
    unit: str
    a: Any
    b: Any
    scope: str | None
    better: str | None


def fold(x: float, y: float) -> float:
    """max/min of two values; infinity when exactly one is 0 (both 0: 1)."""
    lo, hi = sorted((abs(x), abs(y)))
    if hi == 0:
        return 1.0
    return math.inf if lo == 0 else hi / lo


def _get(obj: Any, *path: str) -> Any:
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return obj


def _rows(r: Report, *path: str) -> list[Mapping[str, Any]]:
    return [row for row in (_get(r, *path) or []) if isinstance(row, Mapping)]


def _num(v: Any) -> float | None:
    if v is None or isinstance(v, bool):
        return None if v is None else float(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


Row = Mapping[str, Any]


def _by(rows: Sequence[Row], *fields: str) -> dict[tuple[Any, ...], Row]:
    return {tuple(_hashable(row.get(f)) for f in fields): row for row in rows}


def _hashable(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _order(keys: Sequence[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(set(keys), key=lambda k: tuple((str(type(x)), x) for x in k))


def _direction_order(key: tuple[Any, ...]) -> tuple[Any, ...]:
    device, direction = key
    return (str(type(device)), device, direction != "all", str(direction))




def _window_figures(a: Report, b: Report) -> Iterator[tuple[Any, ...]]:
    """The window's figures, in the fixed order of the package docstring."""
    yield "span_us", "span", "us", a.get("span_us"), b.get("span_us"), "window", "lower"
    yield ("gpu_span_us", "GPU span", "us", a.get("gpu_span_us"), b.get("gpu_span_us"), "window",
           "lower")

    da, db = _by(_rows(a, "devices"), "device"), _by(_rows(b, "devices"), "device")
    for (d,) in _order([*da, *db]):
        ra, rb = da.get((d,), {}), db.get((d,), {})
        for field, label, unit, scope, better in (
            ("busy_us", "busy", "us", "window", None),
            ("utilization", "utilization", "fraction", None, "higher"),
            ("idle_us", "idle", "us", "window", "lower"),
        ):
            yield (f"devices[{d}].{field}", f"GPU {d} {label}", unit, ra.get(field),
                   rb.get(field), scope, better)

    pa = _by(_rows(a, "overlap", "cross_device"), "devices")
    pb = _by(_rows(b, "overlap", "cross_device"), "devices")
    for (pair,) in _order([*pa, *pb]):
        ra, rb = pa.get((pair,), {}), pb.get((pair,), {})
        name = " & ".join(str(d) for d in pair)
        key = "-".join(str(d) for d in pair)
        yield (f"cross_device[{key}].fraction_of_either",
               f"GPU {name} overlap (share of time either was busy)", "fraction",
               ra.get("fraction_of_either"), rb.get("fraction_of_either"), None, "higher")
        yield (f"cross_device[{key}].overlap_us", f"GPU {name} overlap time", "us",
               ra.get("overlap_us"), rb.get("overlap_us"), "window", "higher")
    yield ("multi_device_us", "time with 2+ GPUs busy", "us",
           _get(a, "overlap", "multi_device_us"), _get(b, "overlap", "multi_device_us"),
           "window", "higher")

    ca = _by(_rows(a, "overlap", "copy_compute"), "device", "direction")
    cb = _by(_rows(b, "overlap", "copy_compute"), "device", "direction")
    for d, direction in sorted(set([*ca, *cb]), key=_direction_order):
        ra, rb = ca.get((d, direction), {}), cb.get((d, direction), {})
        what = "copies" if direction == "all" else f"{direction} copies"
        key = f"copy_compute[{d},{direction}]"
        yield (f"{key}.hidden_fraction", f"GPU {d} {what} hidden behind kernels", "fraction",
               ra.get("hidden_fraction"), rb.get("hidden_fraction"), None, "higher")
        yield (f"{key}.exposed_us", f"GPU {d} {what} exposed", "us",
               ra.get("exposed_us"), rb.get("exposed_us"), "window", "lower")

    ma = _by(_rows(a, "overlap", "comm_compute"), "device")
    mb = _by(_rows(b, "overlap", "comm_compute"), "device")
    for (d,) in _order([*ma, *mb]):
        ra, rb = ma.get((d,), {}), mb.get((d,), {})
        yield (f"comm_compute[{d}].hidden_fraction", f"GPU {d} communication hidden behind compute",
               "fraction", ra.get("hidden_fraction"), rb.get("hidden_fraction"), None, "higher")
        yield (f"comm_compute[{d}].exposed_us", f"GPU {d} communication exposed", "us",
               ra.get("exposed_us"), rb.get("exposed_us"), "window", "lower")

    sa = _by(_rows(a, "overlap", "streams"), "device")
    sb = _by(_rows(b, "overlap", "streams"), "device")
    for (d,) in _order([*sa, *sb]):
        ra, rb = sa.get((d,), {}), sb.get((d,), {})
        yield (f"streams[{d}].concurrent_us", f"GPU {d} time with 2+ streams busy", "us",
               ra.get("concurrent_us"), rb.get("concurrent_us"), "window", None)
        yield (f"streams[{d}].max_concurrent", f"GPU {d} most streams busy at once", "count",
               ra.get("max_concurrent"), rb.get("max_concurrent"), None, None)

    yield ("serial.speedup_vs_span", "overlap speedup (serial time / GPU span)", "ratio",
           _get(a, "serial", "speedup_vs_span"), _get(b, "serial", "speedup_vs_span"), None,
           "higher")
    yield ("serial.parallelism", "parallelism (streams at work while any is)", "ratio",
           _get(a, "serial", "parallelism"), _get(b, "serial", "parallelism"), None, "higher")
    yield ("launch_latency.p50_us", "median launch latency", "us",
           _get(a, "host", "launch_latency", "p50_us"), _get(b, "host", "launch_latency", "p50_us"),
           None, "lower")  # per launch: no step time of its own




# ----------------------------------------------------------------------------- the steps

PART_LABELS = {"kernel": "kernels", "memcpy": "copies", "memset": "memsets",
               "communication": "communication", "runtime": "runtime calls",
               "dataloader": "the DataLoader", "cpu_exec": "other CPU work",
               "other": "nothing running"}
CAUSE_LABELS = {"dataloader": "the DataLoader", "optimizer": "the optimizer",
                "region": "record_function regions", "wait": "waiting on another device",
                "sync": "synchronization", "cpu_op": "CPU ops", "runtime": "runtime calls",
                "host_idle": "Python (untraced)"}
STAT_LABELS = {"median": "median", "p90": "p90", "mean": "mean", "min": "shortest",
               "max": "longest"}


def figures(a: Report, b: Report, batch: tuple[int | None, int | None] = (None, None)
            ) -> Iterator[Figure]:
    """Every compared figure: the window's, then (when either side has steps) the steps':
    their statistics (per sample too, when both batch sizes are known), each breakdown part
    and phase per step, and the idle time of each cause kind per step."""
    for row in _window_figures(a, b):
        yield Figure(*row)
    sa, sb = step_stats(a), step_stats(b)
    if sa is None and sb is None:
        return
    for stat in STATS:
        va = None if sa is None else sa.stat(stat)
        vb = None if sb is None else sb.stat(stat)
        yield (Figure(f"step.{stat}_us", f"{STAT_LABELS[stat]} step", "us", va, vb, "stat",
                      "lower"))
        if batch[0] and batch[1]:
            yield Figure(f"step.{stat}_us_per_sample", f"{STAT_LABELS[stat]} step per sample",
                         "us", None if va is None else va / batch[0],
                         None if vb is None else vb / batch[1], "sample", "lower")
    pairs = _device_pairs(a, b)
    for da, db in pairs:
        d = db if da is None else da
        ma, mb = _per_step(a, da, "parts"), _per_step(b, db, "parts")
        for name in list(ma) + [n for n in mb if n not in ma]:
            yield Figure(f"parts[{_dev(d)}].{name}_us",
                         f"{PART_LABELS.get(name, name)} per step{_on(d)}", "us",
                         ma.get(name), mb.get(name), "step", "lower")
    for da, db in pairs[:1]:  # host time: the same on every device's row
        ma, mb = _per_step(a, da, "phases"), _per_step(b, db, "phases")
        for name in list(ma) + [n for n in mb if n not in ma]:
            yield Figure(f"phases[{name}]_us", f"{name} phase per step", "us",
                         ma.get(name), mb.get(name), "step", "lower")
    for d in _idle_devices(a, b):
        ca, cb = _causes_per_step(a, d), _causes_per_step(b, d)
        for kind in CAUSE_LABELS:
            if kind in ca or kind in cb:
                yield Figure(f"idle_causes[{d}].{kind}_us",
                             f"GPU {d} idle: {CAUSE_LABELS[kind]} per step", "us",
                             ca.get(kind, 0.0 if ca else None), cb.get(kind, 0.0 if cb else None),
                             "step", "lower")


def _device_pairs(a: Report, b: Report) -> list[tuple[int | None, int | None]]:
    """The step-breakdown devices compared: those on both sides; with none in common and one
    on each side (a CPU-only run against a GPU one, or GPU 0 against GPU 1), that one."""
    da, db = devices_with_steps(a), devices_with_steps(b)
    both = [(d, d) for d in da if d in db]
    if both or not (len(da) == len(db) == 1):
        return both
    return [(da[0], db[0])]


def _dev(d: int | None) -> str:
    return "cpu" if d is None else str(d)


def _on(d: int | None) -> str:
    return "" if d is None else f" (GPU {d})"


def _per_step(r: Report, device: int | None, key: str) -> dict[str, float]:
    """Each part's mean time per step of ``device`` (its sum over the steps / their number)."""
    n = len(step_times_of(r, device))
    return {k: v / n for k, v in part_times(r, device, key).items()} if n else {}


def steps_in(r: Report) -> int:
    """The number of steps of a report (1 without any: the window is then "the step")."""
    return len(step_times(r)) or 1


def _idle_devices(a: Report, b: Report) -> list[Any]:
    da = [row.get("device") for row in _rows(a, "host", "devices")]
    db = [row.get("device") for row in _rows(b, "host", "devices")]
    return da + [d for d in db if d not in da]


def _causes_per_step(r: Report, device: Any) -> dict[str, float]:
    """The listed idle causes of ``device`` summed by kind, per step (report order of kinds)."""
    out: dict[str, float] = {}
    n = steps_in(r)
    for row in _rows(r, "host", "devices"):
        if row.get("device") == device:
            for c in row.get("causes") or []:
                kind = str(c.get("kind"))
                out[kind] = out.get(kind, 0.0) + float(c.get("us") or 0.0) / n
    return out
