"""traceprobe's per-step figures as TensorBoard scalars, beside the traces.

::

    reports = [analyze(load(p), step="all").to_dict() for p in traces]   # one per trace
    written = write_scalars(run_dir, reports)     # -> [Path of each event file]

TensorBoard then shows, next to the PyTorch Profiler plugin's run ``<run>``, the scalars run
``<run>/traceprobe`` (one trace, or one worker) or ``<run>/traceprobe/<worker>`` (several
workers, e.g. one per rank; the worker is the trace file's name before ``.<id>.pt.trace.json``,
as the profiler plugin reads it). The event files hold no traces, so the profiler plugin
ignores them. ``global_step`` is the ProfilerStep number; a trace without ProfilerSteps gets
its whole-trace figures at step 0.

Tags, read from the report dict with the readers of :mod:`traceprobe.expect` (same
definitions as ``traceprobe check``; percentages are 100 × the fraction):

======================================== ============================================
tag                                      value
======================================== ============================================
traceprobe/span_us                       ``span_us`` (the step's length)
traceprobe/cross_device_overlap_pct      100 × ``cross_device_overlap`` (2+ GPUs only)
traceprobe/utilization_pct/gpu{d}        100 × ``utilization[d]``
traceprobe/gpu_idle_us/gpu{d}            ``idle_us[d]``
traceprobe/hidden_copy_pct/gpu{d}        100 × ``hidden_copy_fraction[d]`` (GPUs that copied)
traceprobe/concurrent_streams_us/gpu{d}  ``concurrent_streams_us[d]``
traceprobe/hidden_comm_pct/gpu{d}        100 × ``hidden_comm_fraction[d]`` (GPUs with NCCL kernels)
traceprobe/copy_gbps/gpu{d}              all copy bytes / all copy time of the GPU (``copies``)
traceprobe/step_{part}_us/gpu{d}         the step-time breakdown (``step_breakdown``): kernel,
                                         memcpy, memset, communication, runtime, dataloader,
                                         cpu_exec, other; ``/host`` on a CPU-only trace
======================================== ============================================

Each tag carries a one-line description (:data:`DESCRIPTIONS`), shown by TensorBoard.

An undefined figure is left out of that step (TensorBoard has no "missing"). TensorBoard
stores scalars as float32, so a value read back equals ``float(numpy.float32(value))``.

Files are written whole, atomically (:mod:`traceprobe.output`): the records are encoded
with tensorboard's own ``RecordWriter`` and protos into memory, then moved into place.
Writing again into a directory that already holds traceprobe scalars is refused unless
``force``; with ``force`` the old traceprobe event files there are removed, so TensorBoard
does not show two points per step. tensorboard is imported only here, when writing.
"""

from __future__ import annotations

import io
import os
import re
import socket
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from traceprobe import expect, output
from traceprobe.errors import OutputError, UsageError

Report = Mapping[str, Any]

SUBDIR = "traceprobe"
SUFFIX = ".traceprobe"  # ends every event file this module writes
INSTALL_HINT = "pip install 'traceprobe[tensorboard]'"
_WORKER = re.compile(r"^(.*?)(\.\d+)?\.pt\.trace\.json(?:\.gz)?$")  # as torch-tb-profiler


class TensorBoardMissing(UsageError):
    """tensorboard is not installed (the ``tensorboard`` extra); exit code 2."""


def _tensorboard() -> tuple[Any, Any, Any]:
    try:
        from tensorboard.compat.proto import event_pb2
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb
        from tensorboard.summary.writer.record_writer import RecordWriter
    except ImportError as e:
        raise TensorBoardMissing(
            f"writing TensorBoard scalars needs the tensorboard package ({e}); "
            f"install it with: {INSTALL_HINT}"
        ) from e
    return event_pb2, scalar_pb, RecordWriter


# ----------------------------------------------------------------------------- figures

DESCRIPTIONS: dict[str, str] = {
    "span_us": "Length of the step (µs).",
    "cross_device_overlap_pct": "Time both GPUs were busy, % of the time either was.",
    "utilization_pct": "GPU busy (any kernel, copy or memset), % of the step.",
    "gpu_idle_us": "GPU idle time in the step (µs).",
    "hidden_copy_pct": "Copy time that ran under a kernel of the same GPU, %.",
    "concurrent_streams_us": "Time two or more streams of the GPU were busy (µs).",
    "hidden_comm_pct": "Communication (NCCL) kernel time that ran under compute kernels, %.",
    "copy_gbps": "Copy bandwidth: bytes / copy time, GB/s (10^9 bytes per second).",
    "step_": "Step-time breakdown (µs): each instant goes to the first of kernel, memcpy, "
             "memset, communication, runtime, dataloader, cpu_exec active, else other.",
}


def description(tag: str) -> str:
    """The description of a tag (docs in the module docstring)."""
    name = tag.split("/")[1] if "/" in tag else tag
    for key, text in DESCRIPTIONS.items():
        if name == key or (key.endswith("_") and name.startswith(key)):
            return text
    return ""


def scalars(report: Report) -> dict[str, float]:
    """The tag -> value map for one window (a whole-trace or one-step report dict)."""
    out: dict[str, float] = {}

    def put(tag: str, name: str, index: int | None = None, scale: float = 1.0) -> None:
        m = expect.measure(report, name, index)
        if m.value is not None:
            out[tag] = m.value * scale

    put("traceprobe/span_us", "span_us")
    put("traceprobe/cross_device_overlap_pct", "cross_device_overlap", scale=100.0)
    devices = sorted(
        {row.get("device") for row in report.get("devices") or [] if isinstance(row, Mapping)},
        key=str,
    )
    for d in devices:
        put(f"traceprobe/utilization_pct/gpu{d}", "utilization", d, 100.0)
        put(f"traceprobe/gpu_idle_us/gpu{d}", "idle_us", d)
        copied = any(
            row.get("device") == d and row.get("direction") == "all"
            for row in (report.get("overlap") or {}).get("copy_compute") or []
        )
        if copied:
            put(f"traceprobe/hidden_copy_pct/gpu{d}", "hidden_copy_fraction", d, 100.0)
        put(f"traceprobe/concurrent_streams_us/gpu{d}", "concurrent_streams_us", d)
        if any(row.get("device") == d and (row.get("comm_us") or 0) > 0
               for row in (report.get("overlap") or {}).get("comm_compute") or []):
            put(f"traceprobe/hidden_comm_pct/gpu{d}", "hidden_comm_fraction", d, 100.0)
        rows = [c for c in report.get("copies") or [] if c.get("device") == d]
        nbytes = sum(float(c.get("bytes") or 0) for c in rows)
        us = sum(float(c.get("us") or 0) for c in rows)
        if nbytes > 0 and us > 0:
            out[f"traceprobe/copy_gbps/gpu{d}"] = nbytes / (us * 1000)
    step = (report.get("window") or {}).get("step")
    for b in report.get("step_breakdown") or []:
        if step is not None and b.get("step") != step:
            continue  # a whole-trace report lists every step: only the window's own counts
        where = "host" if b.get("device") is None else f"gpu{b.get('device')}"
        for part in b.get("parts") or []:
            out[f"traceprobe/step_{part['name']}_us/{where}"] = float(part.get("us") or 0.0)
    return out


def step_scalars(report: Report) -> list[tuple[int, dict[str, float]]]:
    """``[(ProfilerStep number, scalars)]`` from a report made with ``step="all"``.

    A report without ProfilerSteps gives ``[(window.step or 0, scalars(report))]``.
    """
    steps = [s for s in report.get("steps") or [] if isinstance(s, Mapping)]
    if steps:
        return sorted(((int(s["window"]["step"]), scalars(s)) for s in steps), key=lambda t: t[0])
    n_steps = (report.get("counts") or {}).get("steps") or 0
    step = (report.get("window") or {}).get("step")
    if n_steps and step is None:
        raise UsageError(
            f"{report.get('trace')}: the trace has {n_steps} ProfilerSteps but the report has "
            "no per-step figures; analyze it with step='all' (traceprobe analyze --step all)"
        )
    return [(0 if step is None else int(step), scalars(report))]


# ----------------------------------------------------------------------------- writing


def event_bytes(steps: Sequence[tuple[int, Mapping[str, float]]], *, wall_time: float) -> bytes:
    """An event file's bytes: the file-version event, then one event per step."""
    event_pb2, scalar_pb, RecordWriter = _tensorboard()
    buf = io.BytesIO()
    writer = RecordWriter(buf)
    writer.write(
        event_pb2.Event(
            wall_time=wall_time,
            file_version="brain.Event:2",
            source_metadata=event_pb2.SourceMetadata(writer="traceprobe"),
        ).SerializeToString()
    )
    for step, values in steps:
        event = event_pb2.Event(wall_time=wall_time, step=int(step))
        for tag, value in values.items():
            event.summary.value.extend(
                scalar_pb(tag, float(value), description=description(tag) or None).value)
        writer.write(event.SerializeToString())
    return buf.getvalue()


def write_events(
    logdir: str | os.PathLike[str],
    steps: Sequence[tuple[int, Mapping[str, float]]],
    *,
    force: bool = False,
) -> Path:
    """Write one event file of ``steps`` into ``logdir`` (created); return its path."""
    d = Path(logdir)
    old = sorted(d.glob(f"events.out.tfevents.*{SUFFIX}")) if d.is_dir() else []
    if old and not force:
        raise OutputError(
            f"{d} already holds traceprobe scalars ({old[0].name}); "
            "will not add a second set without --force"
        )
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputError(f"Cannot create {d}: {e.strerror or e}") from e
    now = time.time()
    name = f"events.out.tfevents.{int(now):010d}.{socket.gethostname()}.{os.getpid()}{SUFFIX}"
    path = d / name
    output.write_bytes(path, event_bytes(steps, wall_time=now), force=force)
    for f in old:
        if f != path:
            try:
                f.unlink()
            except FileNotFoundError:
                pass
            except OSError as e:
                raise OutputError(f"Cannot remove the old scalars {f}: {e.strerror or e}") from e
    return path


def worker_name(trace: str | os.PathLike[str] | None) -> str:
    """The worker of a trace file, as the profiler plugin names it (``rank0.123.pt.trace.json``
    -> ``rank0``); the file name without suffixes otherwise."""
    name = Path(str(trace or "trace")).name
    m = _WORKER.match(name)
    if m:
        return m.group(1) or name
    return name.split(".", 1)[0] or name


def check_targets(
    run_dir: str | os.PathLike[str], traces: Sequence[str | os.PathLike[str]], *, force: bool
) -> None:
    """Raise OutputError now if :func:`write_scalars` for ``traces`` (the trace files of
    one run directory) would refuse later: called before anything is loaded."""
    workers = {worker_name(t) for t in traces}
    base = Path(run_dir) / SUBDIR
    dirs = [base] if len(workers) <= 1 else [base / w for w in sorted(workers)]
    for d in [base, *dirs]:
        if d.exists() and not d.is_dir():
            raise OutputError(f"Cannot write TensorBoard scalars: {d} is a file, not a directory")
    if not force:
        for d in dirs:
            if d.is_dir() and any(d.glob(f"events.out.tfevents.*{SUFFIX}")):
                raise OutputError(
                    f"{d} already holds traceprobe scalars; will not add a second set without "
                    "--force"
                )
    parent = Path(run_dir)
    if not os.access(parent, os.W_OK):
        raise OutputError(f"Cannot write TensorBoard scalars: {parent} is not writable")


def write_scalars(
    run_dir: str | os.PathLike[str],
    reports: Report | Sequence[Report],
    *,
    force: bool = False,
) -> list[Path]:
    """Write the per-step scalars of the traces of one run directory; return the files written.

    ``reports``: one report dict per trace in ``run_dir`` (each made with ``step="all"``).
    One worker: ``run_dir/traceprobe/``; several: ``run_dir/traceprobe/<worker>/``. Reports of
    the same worker (several trace spans) share one event file.
    """
    items = [reports] if isinstance(reports, Mapping) else list(reports)
    if not items:
        raise UsageError(f"no reports to write as TensorBoard scalars for {run_dir}")
    _tensorboard()  # fail before any work if tensorboard is missing
    by_worker: dict[str, list[tuple[int, dict[str, float]]]] = {}
    for r in items:
        if "traces" in r and "trace" not in r:
            raise UsageError(
                "write_scalars takes one report per trace, not a several-traces report"
            )
        by_worker.setdefault(worker_name(r.get("trace")), []).extend(step_scalars(r))
    base = Path(run_dir) / SUBDIR
    if len(by_worker) == 1:
        targets = {base: next(iter(by_worker.values()))}
    else:
        targets = {base / w: s for w, s in sorted(by_worker.items())}
    if not force:  # refuse before writing anything
        for d in targets:
            if d.is_dir() and any(d.glob(f"events.out.tfevents.*{SUFFIX}")):
                raise OutputError(
                    f"{d} already holds traceprobe scalars; will not add a second set without "
                    "--force"
                )
    return [write_events(d, sorted(s, key=lambda t: t[0]), force=force) for d, s in targets.items()]
