"""The names an expectation can use: ``utilization[0]``, ``cross_device_overlap``, ...

    m = measure(report.to_dict(), "utilization", 0)   # -> Measured(value, note)

What `traceprobe check` expectations (:mod:`traceprobe.expect`) and `traceprobe verify`
rules (:mod:`traceprobe.verify.rules`) read from a report and compare with thresholds.

Every name reads the report dict of docs/REPORT_SCHEMA.md, for the analysed window
(whole trace, or one ProfilerStep with ``--step N``). ``[d]`` selects the row whose
``device`` is ``d``; without it, the aggregate in the table is used. A value that is
undefined (the report has ``null``, or no row to read), or read with a ``[d]`` naming a
device absent from the report, is None, and the note says why.

========================== ===== ================================================================
name                        [d]  how it is read
========================== ===== ================================================================
span_us                      –   ``span_us``
gpu_span_us                  –   ``gpu_span_us``
busy_us                     yes  ``devices[d].busy_us``; no [d]: ``serial.busy_union_us``
                                 (time any device was busy)
idle_us                     yes  ``devices[d].idle_us``; no [d]: max over devices (the idlest)
utilization                 yes  ``devices[d].utilization``; no [d]: min over devices
devices                      –   number of rows in ``devices``
kernels, memcpys, memsets    –   ``counts.kernels`` / ``counts.memcpys`` / ``counts.memsets``
cross_device_overlap         –   max over ``overlap.cross_device`` rows of
                                 ``fraction_of_either``; undefined with fewer than 2 devices
cross_device_overlap_of_min  –   the same with ``fraction_of_min``
multi_device_us              –   ``overlap.multi_device_us``
hidden_copy_fraction        yes  ``hidden_fraction`` of the ``copy_compute`` row with
                                 ``direction == "all"`` for device d; no [d]: min over devices
                                 whose row has one (devices that copied); undefined if none did
exposed_copy_us             yes  ``exposed_us`` of that "all" row; no [d]: sum over devices
                                 (0 when nothing was copied)
hidden_comm_fraction        yes  ``overlap.comm_compute[d].hidden_fraction``; no [d]: min over
                                 devices with communication kernels; undefined if none
exposed_comm_us             yes  ``overlap.comm_compute[d].exposed_us``; no [d]: sum (0 if none)
max_concurrent_streams      yes  ``overlap.streams[d].max_concurrent``; no [d]: max over devices
                                 (0 when there is no GPU activity)
concurrent_streams_us       yes  ``overlap.streams[d].concurrent_us``; no [d]: sum over devices
speedup_vs_span              –   ``serial.speedup_vs_span``
parallelism                  –   ``serial.parallelism``
launch_latency_p50_us        –   ``host.launch_latency.p50_us`` (also ``_mean_us``, ``_p95_us``,
                                 ``_max_us``, ``_unqueued_p50_us``, ``_unqueued_max_us``)
launch_bound_streams         –   number of ``host.kernel_gaps`` rows with ``launch_bound`` true
steps                        –   number of steps in the window (``step_breakdown`` steps)
step_p50_us                  –   median step time (``end_us − start_us`` of each step); also
                                 ``step_p90_us``, ``step_mean_us``, ``step_min_us``,
                                 ``step_max_us``; undefined without steps (traceprobe.report.
                                 stepstats)
dataloader_share            yes  the ``dataloader`` part of the step breakdown over the steps'
                                 time (device d's rows); no [d]: max over devices
step_<part>_share           yes  the same for each part: ``kernel``, ``memcpy``, ``memset``,
                                 ``communication``, ``runtime``, ``dataloader``, ``cpu_exec``,
                                 ``other``
phase_<phase>_share         yes  the same for each phase of ``step_breakdown[].phases``:
                                 ``forward``, ``backward``, ``optimizer``, ``dataloader``,
                                 ``other``
idle_<kind>_share           yes  the idle causes of kind ``<kind>`` (``dataloader``,
                                 ``optimizer``, ``region``, ``wait``, ``sync``, ``cpu_op``,
                                 ``runtime``, ``host_idle``) summed, over the device's idle
                                 time (``host.devices[d].causes[]``: the report lists the 5
                                 largest causes, so a kind outside them reads 0 and the
                                 shares sum to at most 1); no [d]: max over devices
bound_by                     –   ``critical_path.bound_by``, a string (compare with == or !=
                                 and a quoted word: ``bound_by == "kernel"``)
gpu_bound                    –   1 when ``bound_by`` is ``kernel``, ``copy`` or
                                 ``communication`` (the GPU bounds the window), else 0
critical_path_gpu_share      –   (kernel + copy + communication) of ``critical_path.breakdown``
                                 over ``critical_path.length_us``
tensor_core_fraction         –   ``efficiency.tensor_core_fraction`` (kernel time on tensor
                                 cores, by kernel name; docs/FIGURES.md "Kernel efficiency")
gemm_roof_fraction           –   ``efficiency.gemm_roof_fraction`` (GEMM roof time / GEMM time)
gemm_tflops                  –   ``tflops`` of the ``efficiency.categories`` row "gemm"
tf32_saving_us               –   ``efficiency.precision.tf32_saving_us``; 0 when there is no
                                 fp32 matrix work off tensor cores on a GPU with TF32
========================== ===== ================================================================

The table in code is :data:`NAMES`; ``traceprobe check --help`` prints it from there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from traceprobe.errors import UsageError
from traceprobe.report.stepstats import (
    devices_with_steps,
    part_shares,
    step_stats,
    step_times,
)

Report = Mapping[str, Any]


@dataclass(frozen=True)
class Measured:
    """What a name read from a report: ``value`` (None when undefined) and a short note
    (which device an aggregate came from, or why the value is undefined)."""

    value: float | None
    note: str = ""
    text: str | None = None  # the value of a string name (bound_by); value is then None


# ----------------------------------------------------------------------------- readers


def _rows(r: Report, *path: str) -> list[Mapping[str, Any]]:
    obj: Any = r
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return [row for row in (obj or []) if isinstance(row, Mapping)]


def _devices_text(devs: Iterable[Any]) -> str:
    devs = list(devs)
    return ("GPU " if len(devs) == 1 else "GPUs ") + ", ".join(str(d) for d in devs)


def _scalar(*path: str) -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        obj: Any = r
        for key in path:
            obj = obj.get(key) if isinstance(obj, Mapping) else None
        if obj is None:
            return Measured(None, f"{'.'.join(path)} is null in the report")
        return Measured(float(obj))

    return read


def _count_rows(*path: str, where: str | None = None) -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        rows = _rows(r, *path)
        if where is not None:
            rows = [row for row in rows if row.get(where)]
        return Measured(float(len(rows)))

    return read


def _per_device(
    path: tuple[str, ...],
    field: str,
    aggregate: str,
    *,
    what: str,
    row_filter: Callable[[Mapping[str, Any]], bool] = lambda row: True,
    empty: float | None = None,
    whole: Callable[[Report, int | None], Measured] | None = None,
) -> Callable[[Report, int | None], Measured]:
    """Read ``field`` from the rows at ``path`` (one per device); aggregate without [d].

    ``aggregate`` is "min", "max" or "sum"; ``empty`` is the value when no row has the
    field (None: undefined, with ``what`` as the reason); ``whole`` overrides the aggregate.
    """

    def read(r: Report, index: int | None) -> Measured:
        rows = [row for row in _rows(r, *path) if row_filter(row)]
        if index is not None:
            match = [row for row in rows if row.get("device") == index]
            if not match:
                present = sorted({row.get("device") for row in rows}, key=str)
                if not present:
                    return Measured(None, f"no GPU {index}: {what}")
                return Measured(None, f"no GPU {index} in the report ({_devices_text(present)})")
            value = match[0].get(field)
            if value is None:
                return Measured(None, f"{field} is null for GPU {index}")
            return Measured(float(value))
        if whole is not None:
            return whole(r, None)
        known = [(row.get("device"), float(row[field])) for row in rows
                 if row.get(field) is not None]
        if not known:
            return Measured(empty, "" if empty is not None else what)
        over = _devices_text(d for d, _ in known)
        if aggregate == "sum":
            return Measured(sum(v for _, v in known), f"sum over {over}")
        pick = min if aggregate == "min" else max
        device, value = pick(known, key=lambda dv: dv[1])
        if len(known) == 1:
            return Measured(value, f"GPU {device}")
        return Measured(value, f"{aggregate} over {over}: GPU {device}")

    return read


def _efficiency(field: str, *, category: str | None = None, empty: float | None = None,
                sub: str | None = None) -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        e = r.get("efficiency")
        if not isinstance(e, Mapping):
            return Measured(None, "the report has no efficiency section")
        obj: Any = e
        if category is not None:
            obj = next((c for c in _rows(e, "categories") if c.get("category") == category), None)
            if obj is None:
                return Measured(None, f"no {category} kernels in the window")
        if sub is not None:
            obj = obj.get(sub)
            if obj is None:
                return Measured(empty, "" if empty is not None else f"no efficiency.{sub}")
        value = obj.get(field) if isinstance(obj, Mapping) else None
        if value is None:
            why = "the device is not in the device table, or no shapes were recorded"
            return Measured(None, why)
        return Measured(float(value))

    return read


def _pairs(field: str) -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        rows = _rows(r, "overlap", "cross_device")
        if not rows:
            return Measured(None, "fewer than two GPUs in the window")
        known: list[tuple[tuple[Any, ...], float]] = [
            (tuple(row.get("devices") or ()), float(row[field]))
            for row in rows
            if row.get(field) is not None
        ]
        if not known:
            return Measured(None, "no GPU pair was busy")
        pair, value = max(known, key=lambda dv: dv[1])
        label = "GPUs " + " & ".join(str(d) for d in pair)
        return Measured(value, label if len(rows) == 1 else f"max over pairs: {label}")

    return read


@dataclass(frozen=True)
class Name:
    """One expectation name: how it is read, whether it takes [d], its unit and its doc."""

    read: Callable[[Report, int | None], Measured]
    doc: str
    unit: str  # fraction | us | count | ratio | text (a string value, Measured.text)
    indexed: bool = False


def _all_row(row: Mapping[str, Any]) -> bool:
    return row.get("direction") == "all"


NAMES: dict[str, Name] = {
    "span_us": Name(_scalar("span_us"), "length of the analysed window", "us"),
    "gpu_span_us": Name(_scalar("gpu_span_us"), "first GPU start to last GPU end", "us"),
    "busy_us": Name(
        _per_device(("devices",), "busy_us", "sum", what="no GPU activity",
                    whole=_scalar("serial", "busy_union_us")),
        "devices[d].busy_us; no [d]: serial.busy_union_us", "us", indexed=True),
    "idle_us": Name(
        _per_device(("devices",), "idle_us", "max", what="no GPU activity"),
        "devices[d].idle_us; no [d]: max over GPUs", "us", indexed=True),
    "utilization": Name(
        _per_device(("devices",), "utilization", "min", what="no GPU activity"),
        "devices[d].utilization; no [d]: min over GPUs", "fraction", indexed=True),
    "devices": Name(_count_rows("devices"), "number of devices in the report", "count"),
    "kernels": Name(_scalar("counts", "kernels"), "counts.kernels", "count"),
    "memcpys": Name(_scalar("counts", "memcpys"), "counts.memcpys", "count"),
    "memsets": Name(_scalar("counts", "memsets"), "counts.memsets", "count"),
    "cross_device_overlap": Name(
        _pairs("fraction_of_either"),
        "max over GPU pairs of cross_device[].fraction_of_either", "fraction"),
    "cross_device_overlap_of_min": Name(
        _pairs("fraction_of_min"),
        "max over GPU pairs of cross_device[].fraction_of_min", "fraction"),
    "multi_device_us": Name(
        _scalar("overlap", "multi_device_us"), "overlap.multi_device_us", "us"),
    "hidden_copy_fraction": Name(
        _per_device(("overlap", "copy_compute"), "hidden_fraction", "min",
                    what="no copies in the window", row_filter=_all_row),
        'copy_compute "all" row hidden_fraction; no [d]: min over GPUs',
        "fraction", indexed=True),
    "exposed_copy_us": Name(
        _per_device(("overlap", "copy_compute"), "exposed_us", "sum",
                    what="no copies in the window", row_filter=_all_row, empty=0.0),
        'copy_compute "all" row exposed_us; no [d]: sum over GPUs', "us", indexed=True),
    "hidden_comm_fraction": Name(
        _per_device(("overlap", "comm_compute"), "hidden_fraction", "min",
                    what="no communication kernels in the window"),
        "comm_compute[d].hidden_fraction; no [d]: min over GPUs",
        "fraction", indexed=True),
    "exposed_comm_us": Name(
        _per_device(("overlap", "comm_compute"), "exposed_us", "sum",
                    what="no communication kernels in the window", empty=0.0),
        "comm_compute[d].exposed_us; no [d]: sum over GPUs", "us", indexed=True),
    "max_concurrent_streams": Name(
        _per_device(("overlap", "streams"), "max_concurrent", "max",
                    what="no GPU activity", empty=0.0),
        "overlap.streams[d].max_concurrent; no [d]: max over GPUs", "count",
        indexed=True),
    "concurrent_streams_us": Name(
        _per_device(("overlap", "streams"), "concurrent_us", "sum",
                    what="no GPU activity", empty=0.0),
        "overlap.streams[d].concurrent_us; no [d]: sum over GPUs", "us", indexed=True),
    "speedup_vs_span": Name(
        _scalar("serial", "speedup_vs_span"), "serial.speedup_vs_span", "ratio"),
    "parallelism": Name(_scalar("serial", "parallelism"), "serial.parallelism", "ratio"),
    **{
        f"launch_latency_{k}_us": Name(
            _scalar("host", "launch_latency", f"{k}_us"), f"host.launch_latency.{k}_us", "us")
        for k in ("mean", "p50", "p95", "max", "unqueued_p50", "unqueued_max")
    },
    "launch_bound_streams": Name(
        _count_rows("host", "kernel_gaps", where="launch_bound"),
        "host.kernel_gaps rows with launch_bound true", "count"),
    "tensor_core_fraction": Name(
        _efficiency("tensor_core_fraction"),
        "efficiency.tensor_core_fraction (kernel time on tensor cores)", "fraction"),
    "gemm_roof_fraction": Name(
        _efficiency("gemm_roof_fraction"),
        "efficiency.gemm_roof_fraction (GEMM roof time / GEMM kernel time)", "fraction"),
    "gemm_tflops": Name(
        _efficiency("tflops", category="gemm"), "efficiency gemm category tflops", "ratio"),
    "tf32_saving_us": Name(
        _efficiency("tf32_saving_us", sub="precision", empty=0.0),
        "efficiency.precision.tf32_saving_us (0 without the finding)", "us"),
}


# ----------------------------------------------------------------------------- step-level


def _step_stat(stat: str) -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        stats = step_stats(r)
        if stats is None:
            return Measured(None, "no ProfilerSteps in the window")
        return Measured(stats.stat(stat), f"over {stats.count} step" +
                        ("" if stats.count == 1 else "s"))

    return read


def _step_count(r: Report, index: int | None) -> Measured:
    return Measured(float(len(step_times(r))))


def _share_of_steps(part: str, key: str = "parts") -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        devs = devices_with_steps(r)
        if not devs:
            return Measured(None, "no ProfilerSteps in the window")
        if key == "phases" and not any(row.get("phases") for row in r["step_breakdown"]):
            return Measured(None, "the report has no phases")
        if index is not None:
            if index not in devs:
                return Measured(None, f"no GPU {index} in the step breakdown"
                                      f" ({_devices_text(d for d in devs if d is not None)})")
            devs = [index]
        known = [(d, part_shares(r, d, key).get(part)) for d in devs]
        values = [(d, v) for d, v in known if v is not None]
        if not values:
            return Measured(None, "the steps last 0 µs")
        device, value = max(values, key=lambda dv: dv[1])
        if index is not None or device is None:
            return Measured(value)
        if len(values) == 1:
            return Measured(value, f"GPU {device}")
        return Measured(value, f"max over {_devices_text(d for d, _ in values)}: GPU {device}")

    return read


def _idle_share(kind: str) -> Callable[[Report, int | None], Measured]:
    def read(r: Report, index: int | None) -> Measured:
        rows = _rows(r, "host", "devices")
        if index is not None:
            rows = [row for row in rows if row.get("device") == index]
            if not rows:
                return Measured(None, f"no GPU {index} in the report")
        known = []
        for row in rows:
            idle = row.get("idle_us")
            if not idle:
                continue
            us = sum(float(c.get("us") or 0) for c in row.get("causes") or []
                     if c.get("kind") == kind)
            known.append((row.get("device"), us / float(idle)))
        if not known:
            return Measured(None, "no GPU idle time in the window")
        device, value = max(known, key=lambda dv: dv[1])
        if index is not None:
            return Measured(value)
        return Measured(value, f"GPU {device}" if len(known) == 1 else
                        f"max over {_devices_text(d for d, _ in known)}: GPU {device}")

    return read


GPU_BOUNDS = ("kernel", "copy", "communication")  # critical-path categories on the GPU


def _bound_by(r: Report, index: int | None) -> Measured:
    path = r.get("critical_path")
    if not isinstance(path, Mapping) or path.get("bound_by") is None:
        return Measured(None, "no critical path for the window")
    return Measured(None, text=str(path["bound_by"]))


def _gpu_bound(r: Report, index: int | None) -> Measured:
    m = _bound_by(r, index)
    if m.text is None:
        return m
    return Measured(float(m.text in GPU_BOUNDS), f"bound by {m.text}")


def _path_gpu_share(r: Report, index: int | None) -> Measured:
    path = r.get("critical_path")
    if not isinstance(path, Mapping) or not path.get("length_us"):
        return Measured(None, "no critical path for the window")
    parts = path.get("breakdown") or {}
    return Measured(sum(float(parts.get(k) or 0) for k in GPU_BOUNDS) / float(path["length_us"]))


STEP_PARTS = ("kernel", "memcpy", "memset", "communication", "runtime", "dataloader",
              "cpu_exec", "other")  # traceprobe.metrics.steps.CATEGORIES (data, not imported)
PHASES = ("forward", "backward", "optimizer", "dataloader", "other")
IDLE_KINDS = ("dataloader", "optimizer", "region", "wait", "sync", "cpu_op", "runtime",
              "host_idle")

STEP_NAMES: dict[str, Name] = {
    "steps": Name(_step_count, "number of steps in the window", "count"),
    **{f"step_{k}_us": Name(_step_stat(k), f"{doc} step time (step_breakdown windows)", "us")
       for k, doc in (("p50", "median"), ("p90", "90th percentile"), ("mean", "mean"),
                      ("min", "shortest"), ("max", "longest"))},
    "dataloader_share": Name(
        _share_of_steps("dataloader"),
        "the step breakdown's dataloader part over the steps' time; no [d]: max over GPUs",
        "fraction", indexed=True),
    **{f"step_{p}_share": Name(
        _share_of_steps(p), f"the step breakdown's {p} part over the steps' time",
        "fraction", indexed=True) for p in STEP_PARTS},
    **{f"phase_{p}_share": Name(
        _share_of_steps(p, "phases"), f"the {p} phase over the steps' time",
        "fraction", indexed=True) for p in PHASES},
    **{f"idle_{k}_share": Name(
        _idle_share(k), f"idle causes of kind {k} over the GPU's idle time; no [d]: max",
        "fraction", indexed=True) for k in IDLE_KINDS},
    "bound_by": Name(_bound_by, 'critical_path.bound_by (a string: bound_by == "kernel")',
                     "text"),
    "gpu_bound": Name(_gpu_bound, "1 when bound_by is kernel, copy or communication, else 0",
                      "count"),
    "critical_path_gpu_share": Name(
        _path_gpu_share, "kernel + copy + communication of the critical path over its length",
        "fraction"),
}
NAMES.update(STEP_NAMES)  # the step-level names (tests/expect/test_step_names.py reads each)


def names_help() -> str:
    """The names table as plain text lines (for ``--help`` and error messages)."""
    width = max(len(n) for n in NAMES) + 3
    return "\n".join(
        f"{(n + '[d]') if spec.indexed else n:<{width}} {spec.doc}" for n, spec in NAMES.items()
    )


def measure(report: Report, name: str, index: int | None = None) -> Measured:
    """Read one name (see the table in the module docstring) from a one-trace report dict."""
    if "traces" in report and "trace" not in report:
        raise UsageError(
            "expectations apply to one trace's report; evaluate report['traces'][i] one at a time"
        )
    if name not in NAMES:
        raise UsageError(f"unknown name {name!r}; valid names: " + ", ".join(NAMES))
    return NAMES[name].read(report, index)
