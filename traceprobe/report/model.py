"""The report's value objects: every figure of one analysed trace, in integer nanoseconds.

A :class:`Report` keeps integer nanoseconds (``*_ns`` fields); :meth:`Report.to_dict` is the
only place they become microseconds (``*_us``). Definitions: ``docs/FIGURES.md``; the JSON
contract: ``docs/REPORT_SCHEMA.md``. This module computes nothing: :mod:`.build` fills it,
:mod:`.headlines` and :mod:`.invariants` are functions *of* a report that it does not import.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, is_dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the model imports no pandas
    from traceprobe.metrics.copies import CopyRate
    from traceprobe.metrics.devices import DeviceBusy, StreamBusy
    from traceprobe.metrics.host import Host
    from traceprobe.metrics.overlap import CrossTrace, Overlap, Serial
    from traceprobe.metrics.runs import Run
    from traceprobe.metrics.steps import StepBreakdown
    from traceprobe.metrics.top import TopKernel, TopOp

SCHEMA = "traceprobe.report/1"

Step = int | str | None  # None, a step number (int or digits), or "all"


@dataclass(frozen=True)
class Window:
    start_ns: int
    end_ns: int
    step: int | None


@dataclass(frozen=True)
class Counts:
    kernels: int
    memcpys: int
    memsets: int
    cpu_ops: int
    runtime_calls: int  # cuda_runtime and cuda_driver calls
    steps: int


@dataclass(frozen=True)
class Report:
    """Every figure of one trace (or one step of it); field order is the JSON order."""

    trace: str
    format: str
    rank: int | None
    window: Window
    span_ns: int
    gpu_span_ns: int
    counts: Counts
    devices: tuple[DeviceBusy, ...]
    streams: tuple[StreamBusy, ...]
    overlap: Overlap
    host: Host
    serial: Serial
    top_kernels: tuple[TopKernel, ...]
    top_ops: tuple[TopOp, ...]
    copies: tuple[CopyRate, ...] = ()  # bandwidth per device, direction and memory kinds
    step_breakdown: tuple[StepBreakdown, ...] = ()  # per ProfilerStep and device
    steps: tuple[Report, ...] = ()
    headlines: tuple[str, ...] = ()

    def device(self, device: int) -> DeviceBusy:
        for d in self.devices:
            if d.device == device:
                return d
        raise KeyError(device)

    def to_dict(self) -> dict[str, Any]:
        """Exactly the ``traceprobe.report/1`` object (times in µs, None for undefined figures)."""
        out: dict[str, Any] = {"schema": SCHEMA, **plain(self)}
        out["steps"] = [
            {k: v for k, v in s.to_dict().items() if k not in ("steps", "headlines")}
            for s in self.steps
        ]
        return out


@dataclass(frozen=True)
class MultiReport:
    """Several traces analysed together, with device overlap across them."""

    reports: tuple[Report, ...]
    cross_trace: CrossTrace
    runs: tuple[Run, ...] = ()  # jobs (ranks) and separate runs, by folder

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "traces": [r.to_dict() for r in self.reports],
            "cross_trace": plain(self.cross_trace),
            "runs": plain(self.runs),
        }


def plain(value: Any) -> Any:
    """A dataclass tree as JSON-ready data: ``*_ns`` (and ``ns``) fields become µs floats."""
    if is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in fields(value):
            if f.metadata.get("internal"):
                continue
            v = getattr(value, f.name)
            if f.name == "ns" or f.name.endswith("_ns"):  # int / int is correctly rounded
                out[f.name[:-2] + "us"] = None if v is None else v / 1000
            else:
                out[f.name] = plain(v)
        return out
    if isinstance(value, (tuple, list)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and type(value).__module__ == "numpy":  # a numpy scalar
        return value.item()
    return value
