"""The report's value objects: every figure of one analysed trace, in integer nanoseconds.

A :class:`Report` keeps integer nanoseconds (``*_ns`` fields); :meth:`Report.to_dict` is the
only place they become microseconds (``*_us``). Definitions: ``docs/FIGURES.md``; the JSON
contract: ``docs/REPORT_SCHEMA.md``. This module computes nothing: :mod:`.build` fills it,
:mod:`.headlines` and :mod:`.invariants` are functions *of* a report that it does not import.
"""

from __future__ import annotations

import gc
import math
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, fields, is_dataclass, replace
from decimal import Decimal
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the model imports no pandas
    import pandas as pd

    from traceprobe.metrics.copies import CopyRate
    from traceprobe.metrics.devices import DeviceBusy, StreamBusy
    from traceprobe.metrics.host import Host
    from traceprobe.metrics.overlap import CrossTrace, Overlap, Serial
    from traceprobe.metrics.runs import Run
    from traceprobe.metrics.steps import StepBreakdown
    from traceprobe.metrics.top import TopKernel, TopOp

SCHEMA = "traceprobe.report/1"  # one trace: Report.to_dict()
MULTI_SCHEMA = "traceprobe.reports/1"  # several traces: MultiReport.to_dict()
_PER_TRACE = ("steps", "headlines", "warnings", "salvaged", "efficiency")  # not in step reports

Step = int | str | None  # None, a step number (int or digits), or "all"


@dataclass(frozen=True)
class Window:
    """What was analysed. ``basis``: ``"steps"`` (first ProfilerStep start to last step
    end), ``"profiler"`` (the profiler's own recording span, tightened to the events in
    it, start-up overhead left out), ``"events"`` (first event start to last event end:
    a trace with neither) or ``"step"`` (one ProfilerStep)."""

    start_ns: int
    end_ns: int
    step: int | None
    basis: str = "events"


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
    warnings: tuple[str, ...] = ()  # what the loader read leniently (the trace's own)
    salvaged: dict[str, Any] | None = None  # the file was cut short: what was kept
    steps: Sequence[Report] = ()  # --step all: a report.blocks.StepReports
    headlines: tuple[str, ...] = ()
    # traceprobe.graph's critical path of this window (plain data, already in µs)
    critical_path: dict[str, Any] | None = None
    # traceprobe.efficiency's figures of this window (plain data; rates in TFLOP/s, GB/s)
    efficiency: dict[str, Any] | None = None

    def device(self, device: int) -> DeviceBusy:
        for d in self.devices:
            if d.device == device:
                return d
        raise KeyError(device)

    # -- DataFrame views: the JSON's rows, same column names and units (µs); pandas on call

    def devices_frame(self) -> pd.DataFrame:
        """One row per GPU: ``busy_us``, ``utilization``... (the JSON's ``devices``)."""
        return _frame(self.to_dict()["devices"])

    def streams_frame(self) -> pd.DataFrame:
        """One row per (GPU, stream): ``busy_us``, ``kernels``... (``streams``)."""
        return _frame(self.to_dict()["streams"])

    def copies_frame(self) -> pd.DataFrame:
        """Copies against compute per GPU and direction (``overlap.copy_compute``)."""
        return _frame(self.to_dict()["overlap"]["copy_compute"])

    def cross_device_frame(self) -> pd.DataFrame:
        """Each pair of GPUs: ``overlap_us``, ``fraction_of_either``... (cross_device)."""
        return _frame(self.to_dict()["overlap"]["cross_device"])

    def stream_overlap_frame(self) -> pd.DataFrame:
        """Streams busy at once per GPU: ``concurrent_us``, ``max_concurrent``..."""
        return _frame(self.to_dict()["overlap"]["streams"])

    def kernel_gaps_frame(self) -> pd.DataFrame:
        """Waits between a stream's kernels, ``launch_bound`` (``host.kernel_gaps``)."""
        return _frame(self.to_dict()["host"]["kernel_gaps"])

    def top_kernels_frame(self) -> pd.DataFrame:
        """The kernels that took the most GPU time (``top_kernels``)."""
        return _frame(self.to_dict()["top_kernels"])

    def top_ops_frame(self) -> pd.DataFrame:
        """The CPU ops that took the most host time (``top_ops``)."""
        return _frame(self.to_dict()["top_ops"])

    def steps_frame(self) -> pd.DataFrame:
        """One row per ProfilerStep sub-report (``--step all``): window, spans, counts."""
        rows = []
        for s in self.to_dict()["steps"]:
            rows.append({"step": s["window"]["step"], "start_us": s["window"]["start_us"],
                         "end_us": s["window"]["end_us"], "span_us": s["span_us"],
                         "gpu_span_us": s["gpu_span_us"], **s["counts"]})
        return _frame(rows, ["step", "start_us", "end_us", "span_us", "gpu_span_us"])

    def __repr__(self) -> str:
        c = self.counts
        step = self.window.step
        basis = {"steps": "the profiled steps", "profiler": "the profiler's recording span",
                 "events": "the whole trace"}
        where = basis.get(self.window.basis, "the whole trace") if step is None else (
            f"ProfilerStep#{step}")
        gpus = ("GPUs " if len(self.devices) > 1 else "GPU ") + (
            ", ".join(str(d.device) for d in self.devices) or "none")
        lines = [
            f"Report of {self.trace} ({self.format})",
            f"  window {_ms(self.span_ns)} ({where}); GPU span {_ms(self.gpu_span_ns)};"
            f" {gpus}",
            f"  {_n(c.kernels, 'kernel')}, {_n(c.memcpys, 'memcpy')}, {_n(c.memsets, 'memset')},"
            f" {_n(c.cpu_ops, 'CPU op')}, {_n(c.runtime_calls, 'runtime call')},"
            f" {_n(c.steps, 'step')}",
            *(f"  * {h}" for h in self.headlines),
        ]
        if self.steps:
            lines.append(f"  + {_n(len(self.steps), 'step report')} (.steps, .steps_frame())")
        lines.append("  .to_dict(), .devices_frame(), .streams_frame(), .copies_frame(), ...")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """Exactly the ``traceprobe.report/1`` object (times in µs, None for undefined figures)."""
        with paused_gc():  # a tree of new dicts: nothing for the cycle collector to find
            return self._dict()

    def step_dicts(self) -> Iterator[dict[str, Any]]:
        """The items of ``to_dict()["steps"]``, made one at a time (a streaming writer
        holds one step's, not thousands: :func:`traceprobe.render.jsonfmt.pieces`)."""
        for s in self.steps:
            yield s._step_dict()

    def _dict(self, steps: bool = True) -> dict[str, Any]:
        """``to_dict()``; with ``steps=False`` its ``steps`` list is left empty."""
        # the steps are converted on their own below, not also by plain() (twice the work)
        bare = self if type(self.steps) is tuple and not self.steps else replace(self, steps=())
        out: dict[str, Any] = {"schema": SCHEMA, **plain(bare)}
        # µs floats resolve ~0.25 µs at epoch scale: the exact integer ns beside them
        out["window"]["start_ns"] = int(self.window.start_ns)
        out["window"]["end_ns"] = int(self.window.end_ns)
        if self.salvaged is None:
            del out["salvaged"]  # present only for a file that was cut short
        if steps:
            out["steps"] = [s._step_dict() for s in self.steps]
        return out

    def _step_dict(self) -> dict[str, Any]:
        """This report as an item of its whole-trace report's ``steps``."""
        return {k: v for k, v in self._dict().items() if k not in _PER_TRACE}

    def head_dict(self) -> dict[str, Any]:
        """``to_dict()`` with an empty ``steps`` list (:meth:`step_dicts` gives its items)."""
        with paused_gc():
            return self._dict(steps=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Report:
        """The report a ``traceprobe.report/1`` dict holds (a saved JSON report, the
        many-rank summary's ``rank_report``): ``*_us`` back to integer ``*_ns``
        (``window``'s exact ``start_ns``/``end_ns`` where present). Read leniently, as
        pyinstrument's ``Session.from_json``: a key the dict lacks is the field's default,
        else None; keys it does not know are left out."""
        return _restore(cls, data)


@dataclass(frozen=True)
class MultiReport:
    """Several traces analysed together, with device overlap across them."""

    reports: tuple[Report, ...]
    cross_trace: CrossTrace | None  # None: several reports put side by side, not compared
    runs: tuple[Run, ...] = ()  # jobs (ranks) and separate runs, by folder

    def __repr__(self) -> str:
        lines = [f"MultiReport of {_n(len(self.reports), 'trace')} (.reports, .to_dict())"]
        for r in self.reports:
            rank = "" if r.rank is None else f" rank {r.rank}"
            lines.append(f"  {r.trace}{rank}: window {_ms(r.span_ns)},"
                         f" GPUs {', '.join(str(d.device) for d in r.devices) or 'none'}")
        return "\n".join(lines)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MultiReport:
        """The reports a ``traceprobe.reports/1`` dict holds (as :meth:`Report.from_dict`)."""
        return _restore(cls, {**data, "reports": data.get("traces") or ()})

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": MULTI_SCHEMA,
            "traces": [r.to_dict() for r in self.reports],
            "cross_trace": plain(self.cross_trace),
            "runs": plain(self.runs),
        }


def _frame(rows: list[dict[str, Any]], columns: list[str] | None = None) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame(rows, columns=columns) if not rows else pd.DataFrame(rows)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3f} ms" if ns < 10**7 else f"{ns / 1e6:.1f} ms"


@contextmanager
def paused_gc() -> Iterator[None]:
    """Python's cyclic garbage collector off for a block that builds many acyclic objects
    (thousands of step reports), back as it was after. Reference counting still frees
    everything; only the collector's passes over the growing heap are saved."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def plain(value: Any) -> Any:
    """A dataclass tree as JSON-ready data: ``*_ns`` (and ``ns``) fields become µs floats."""
    t = type(value)
    if t in _SCALARS or t is dict:
        return value
    if t is tuple or t is list:
        return [plain(v) for v in value]
    conv = _CONVERTERS.get(t)
    if conv is None:
        if not is_dataclass(value) or isinstance(value, type):
            if isinstance(value, (tuple, list)):
                return [plain(v) for v in value]
            if hasattr(value, "item") and t.__module__ == "numpy":  # a numpy scalar
                return value.item()
            return value
        conv = _CONVERTERS[t] = _converter(t)
    return conv(value)


_SCALARS = frozenset({int, float, str, bool, type(None)})
_CONVERTERS: dict[type, Any] = {}


def _converter(cls: type) -> Any:
    """``plain`` of one dataclass type, compiled once into one dict display (as
    :mod:`dataclasses` compiles ``__init__``): ``--step all`` turns thousands of reports
    into dicts, and a loop over fields per object cost 7 µs of a 10 µs conversion."""
    items = []
    for f in fields(cls):
        if f.metadata.get("internal") or not f.name.isidentifier():
            continue
        if f.name == "ns" or f.name.endswith("_ns"):  # int / int is correctly rounded
            items.append(f"{f.name[:-2] + 'us'!r}: (None if o.{f.name} is None"
                         f" else o.{f.name} / 1000)")
        else:
            items.append(f"{f.name!r}: (v if type(v := o.{f.name}) in S else P(v))")
    code = "def convert(o):\n    return {" + ", ".join(items) + "}\n"
    scope: dict[str, Any] = {"S": _SCALARS, "P": plain}
    exec(compile(code, f"<plain {cls.__qualname__}>", "exec"), scope)  # noqa: S102
    return scope["convert"]


# -- reading a report dict back: the inverse of plain() --------------------------------------

_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        import traceprobe.metrics.copies
        import traceprobe.metrics.devices
        import traceprobe.metrics.host
        import traceprobe.metrics.overlap
        import traceprobe.metrics.runs
        import traceprobe.metrics.steps
        import traceprobe.metrics.top  # noqa: F401  (the names the model's hints use)

        scope: dict[str, Any] = {}
        for mod in ("copies", "devices", "host", "overlap", "runs", "steps", "top"):
            scope.update(vars(getattr(traceprobe.metrics, mod)))
        scope.update(globals())
        hints = _HINTS[cls] = typing.get_type_hints(cls, globalns=scope)
    return hints


def _restore(cls: type, data: Mapping[str, Any]) -> Any:
    """One dataclass of the report tree from its ``plain`` dict."""
    hints = _hints(cls)
    kw: dict[str, Any] = {}
    for f in fields(cls):
        if f.metadata.get("internal"):
            continue
        ns = f.name == "ns" or f.name.endswith("_ns")
        key = f.name[:-2] + "us" if ns else f.name
        if ns and f.name in data:  # window's exact start_ns / end_ns
            kw[f.name] = data[f.name]
        elif key in data:
            kw[f.name] = _value(hints[f.name], data[key], ns)
        elif f.default is MISSING and f.default_factory is MISSING:
            kw[f.name] = None
    return cls(**kw)


def _value(hint: Any, v: Any, ns: bool) -> Any:
    if v is None:
        return None
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        hint = args[0] if len(args) == 1 else hint
        args = list(typing.get_args(hint))
    if ns:
        return round(_ns_of(v)) if hint is int else _ns_of(v)
    if is_dataclass(hint) and isinstance(hint, type) and isinstance(v, Mapping):
        return _restore(hint, v)
    origin = typing.get_origin(hint)
    if origin in (tuple, Sequence) and isinstance(v, (list, tuple)):
        if len(args) == 2 and args[1] is Ellipsis or origin is Sequence:
            return tuple(_value(args[0], x, False) for x in v)
        return tuple(v)
    return v


def _ns_of(us: float) -> float:
    """The ns whose ``/ 1000`` is ``us`` again (so the read-back report writes the same JSON),
    preferring the µs's decimal digits shifted (261.6285 µs: 261628.5 ns, not ...49999997)."""
    us = float(us)
    near = us * 1000
    for x in (float(Decimal(repr(us)).scaleb(3)), near, math.nextafter(near, math.inf),
              math.nextafter(near, -math.inf)):
        if x / 1000 == us:
            return x
    return near
