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
      "figures": [{"key", "label", "unit", "a", "b", "delta", "relative"}, ...],
      "changes": [{"key", "label", "unit", "a", "b", "fold", "text"}, ...],   # ranked
      "devices_only_in": {"a": [device, ...], "b": [...]},
      "copies": [{"device", "a_copy_us", "b_copy_us", "a_exposed_us", "b_exposed_us",
                  "exposed_saved_us", "faster_us", "hidden_us", "a_gb_per_s", "b_gb_per_s"}]
    }

``speedup`` > 1 means B is faster than A (null when B's span is 0). ``figures`` holds, in a
fixed order: span, GPU span, each device's busy / utilization / idle, each overlap figure
(device pairs, time with >= 2 devices busy, copy/compute and comm/compute per device and
direction, stream concurrency), the serial-equivalent ratios and the median launch latency.
``delta`` is b - a and ``relative`` is (b - a) / |a| (null when a value is missing or a is 0).

``changes`` ranks the figures by **fold change**, max(a, b) / min(a, b), so that halving and
doubling rank alike; a figure that is 0 on one side and not on the other ranks above every
finite fold (``fold`` null), in figure order. A figure is listed only when it changed by at
least 1% and by more than noise: 0.1 percentage points for fractions, 0.1% of the longer span
for times, any change for counts. Figures missing on either side are not ranked; devices
present in one report only are listed in ``devices_only_in``.

``copies`` splits, per device with copies on both sides, the change in **exposed** copy time
(copy time no kernel of the device hid; ``overlap.copy_compute`` row "all") into two exact parts:
with T the copy time and h the hidden fraction, ``faster_us = (T_a − T_b)·(1 − h_a)`` (what B
saves because its copies take less time, hidden as A hid them) and ``hidden_us = T_b·(h_b −
h_a)`` (what B saves because more of its copy time hides); they sum to ``exposed_saved_us =
E_a − E_b``. ``*_gb_per_s``: all bytes over all copy time of the device (report ``copies``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from traceprobe.errors import UsageError
from traceprobe.render.units import DASH, UNIT_FORMATS

Report = Mapping[str, Any]
SCHEMA = "traceprobe.compare/1"

MIN_FOLD = 1.01  # at least a 1% change
FRACTION_NOISE = 0.001  # 0.1 percentage point
TIME_NOISE_OF_SPAN = 0.001  # 0.1% of the longer span


# ----------------------------------------------------------------------------- figures


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


Figure = tuple[str, str, str, Any, Any]  # key, label, unit, a, b


def _figures(a: Report, b: Report) -> Iterator[Figure]:
    """Every compared figure, in the fixed order described in the module docstring."""
    yield "span_us", "span", "us", a.get("span_us"), b.get("span_us")
    yield "gpu_span_us", "GPU span", "us", a.get("gpu_span_us"), b.get("gpu_span_us")

    da, db = _by(_rows(a, "devices"), "device"), _by(_rows(b, "devices"), "device")
    for (d,) in _order([*da, *db]):
        ra, rb = da.get((d,), {}), db.get((d,), {})
        for field, label, unit in (
            ("busy_us", "busy", "us"),
            ("utilization", "utilization", "fraction"),
            ("idle_us", "idle", "us"),
        ):
            yield f"devices[{d}].{field}", f"GPU {d} {label}", unit, ra.get(field), rb.get(field)

    pa = _by(_rows(a, "overlap", "cross_device"), "devices")
    pb = _by(_rows(b, "overlap", "cross_device"), "devices")
    for (pair,) in _order([*pa, *pb]):
        ra, rb = pa.get((pair,), {}), pb.get((pair,), {})
        name = " & ".join(str(d) for d in pair)
        key = "-".join(str(d) for d in pair)
        yield (f"cross_device[{key}].fraction_of_either",
               f"GPU {name} overlap (share of time either was busy)", "fraction",
               ra.get("fraction_of_either"), rb.get("fraction_of_either"))
        yield (f"cross_device[{key}].overlap_us", f"GPU {name} overlap time", "us",
               ra.get("overlap_us"), rb.get("overlap_us"))
    yield ("multi_device_us", "time with 2+ GPUs busy", "us",
           _get(a, "overlap", "multi_device_us"), _get(b, "overlap", "multi_device_us"))

    ca = _by(_rows(a, "overlap", "copy_compute"), "device", "direction")
    cb = _by(_rows(b, "overlap", "copy_compute"), "device", "direction")
    for d, direction in sorted(set([*ca, *cb]), key=_direction_order):
        ra, rb = ca.get((d, direction), {}), cb.get((d, direction), {})
        what = "copies" if direction == "all" else f"{direction} copies"
        key = f"copy_compute[{d},{direction}]"
        yield (f"{key}.hidden_fraction", f"GPU {d} {what} hidden behind kernels", "fraction",
               ra.get("hidden_fraction"), rb.get("hidden_fraction"))
        yield (f"{key}.exposed_us", f"GPU {d} {what} exposed", "us",
               ra.get("exposed_us"), rb.get("exposed_us"))

    ma = _by(_rows(a, "overlap", "comm_compute"), "device")
    mb = _by(_rows(b, "overlap", "comm_compute"), "device")
    for (d,) in _order([*ma, *mb]):
        ra, rb = ma.get((d,), {}), mb.get((d,), {})
        yield (f"comm_compute[{d}].hidden_fraction", f"GPU {d} communication hidden behind compute",
               "fraction", ra.get("hidden_fraction"), rb.get("hidden_fraction"))
        yield (f"comm_compute[{d}].exposed_us", f"GPU {d} communication exposed", "us",
               ra.get("exposed_us"), rb.get("exposed_us"))

    sa = _by(_rows(a, "overlap", "streams"), "device")
    sb = _by(_rows(b, "overlap", "streams"), "device")
    for (d,) in _order([*sa, *sb]):
        ra, rb = sa.get((d,), {}), sb.get((d,), {})
        yield (f"streams[{d}].concurrent_us", f"GPU {d} time with 2+ streams busy", "us",
               ra.get("concurrent_us"), rb.get("concurrent_us"))
        yield (f"streams[{d}].max_concurrent", f"GPU {d} most streams busy at once", "count",
               ra.get("max_concurrent"), rb.get("max_concurrent"))

    yield ("serial.speedup_vs_span", "overlap speedup (serial time / GPU span)", "ratio",
           _get(a, "serial", "speedup_vs_span"), _get(b, "serial", "speedup_vs_span"))
    yield ("serial.parallelism", "parallelism (streams at work while any is)", "ratio",
           _get(a, "serial", "parallelism"), _get(b, "serial", "parallelism"))
    yield ("launch_latency.p50_us", "median launch latency", "us",
           _get(a, "host", "launch_latency", "p50_us"), _get(b, "host", "launch_latency", "p50_us"))


# ----------------------------------------------------------------------------- comparing


def _ratio(x: float | None, y: float | None) -> float | None:
    return None if x is None or y is None or y == 0 else x / y


def _fold(x: float, y: float) -> float:
    """max/min of two values; infinity when exactly one is 0 (both 0: 1)."""
    lo, hi = sorted((abs(x), abs(y)))
    if hi == 0:
        return 1.0
    return math.inf if lo == 0 else hi / lo


def _noise(unit: str, span: float) -> float:
    if unit == "fraction":
        return FRACTION_NOISE
    if unit == "us":
        return TIME_NOISE_OF_SPAN * span
    return 0.0


def compare(a: Report, b: Report) -> dict[str, Any]:
    """Compare two one-trace report dicts; see the module docstring for the result."""
    for label, r in (("A", a), ("B", b)):
        if not isinstance(r, Mapping):
            raise UsageError(f"compare: report {label} is not a report dict")
        if "traces" in r and "trace" not in r:
            raise UsageError(
                f"compare: report {label} holds several traces; compare one trace with one trace"
            )
    figures = []
    for key, label, unit, va, vb in _figures(a, b):
        x, y = _num(va), _num(vb)
        figures.append({
            "key": key, "label": label, "unit": unit, "a": x, "b": y,
            "delta": None if x is None or y is None else y - x,
            "relative": None if x is None or y is None or x == 0 else (y - x) / abs(x),
        })
    span = max(_num(a.get("span_us")) or 0.0, _num(b.get("span_us")) or 0.0)
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
        "figures": figures,
        "changes": _changes(figures, span),
        "devices_only_in": {
            "a": sorted(devs_a - devs_b, key=str),
            "b": sorted(devs_b - devs_a, key=str),
        },
        "copies": copy_split(a, b),
    }


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


def _changes(figures: list[dict[str, Any]], span: float) -> list[dict[str, Any]]:
    ranked = []
    for position, f in enumerate(figures):
        x, y = f["a"], f["b"]
        if x is None or y is None:
            continue
        fold = _fold(x, y)
        if fold < MIN_FOLD or abs(y - x) <= _noise(f["unit"], span):
            continue
        ranked.append((-fold, position, f))
    ranked.sort(key=lambda t: (t[0], t[1]))
    return [
        {
            "key": f["key"], "label": f["label"], "unit": f["unit"], "a": f["a"], "b": f["b"],
            "fold": None if math.isinf(-neg) else -neg,
            "text": describe_change(f["label"], f["unit"], f["a"], f["b"]),
        }
        for neg, _, f in ranked
    ]


# ----------------------------------------------------------------------------- words


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
    fold = _fold(x, y)
    times = f"{fold:.2f}× {'more' if y > x else 'less'}" if math.isfinite(fold) else ""
    return f"{text} ({(y - x) / abs(x) * 100:+.1f}%{', ' + times if times else ''})"


def speedup_words(result: Mapping[str, Any]) -> list[str]:
    out = []
    for key, what in (("span", "the whole window"), ("gpu_span", "the GPU span")):
        s = result["speedup"].get(key)
        if s is None:
            continue
        if round(s, 2) == 1.0:
            out.append(f"A and B take the same time over {what} (B/A = {1 / s:.3f})")
        elif s > 1:
            out.append(f"B is {s:.2f}× faster than A over {what}")
        else:
            out.append(f"B is {1 / s:.2f}× slower than A over {what}")
    return out


def _input(r: Mapping[str, Any]) -> dict[str, Any]:
    """The report's ``salvaged`` and ``warnings``, only where there are any."""
    out: dict[str, Any] = {}
    if r.get("salvaged"):
        out["salvaged"] = r["salvaged"]
    if r.get("warnings"):
        out["warnings"] = list(r["warnings"])
    return out


def _input_lines(result: Mapping[str, Any]) -> list[str]:
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
    lines += [f"  * {s}" for s in speedup_words(result)]
    lines += [f"  * {s}" for s in copy_words(result)]
    changes = result["changes"][:top] if top >= 0 else result["changes"]
    if changes:
        lines += ["", "What changed most (largest relative change first):"]
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
