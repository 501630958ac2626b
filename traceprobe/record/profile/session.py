"""One process profiled: run the target under a :class:`~.steps.Stepper`, write its trace.

:func:`profile_process` is what every process does, alone or as one rank of many:

1. hook the profiler in (:meth:`Stepper.install`); SIGTERM becomes :class:`Terminated`
   in the main thread, and SIGTERM/Ctrl-C arriving while the profiler is being stepped
   wait until it is done, so Kineto is never left half-way;
2. run the target (:func:`.target.run`), timing it;
3. stop the profiler: a cycle still recording is written with the steps completed so far
   and the one in progress (``ProfilerStep#N`` each);
4. return the process's result (the ``ranks`` entries of the metadata).

Each trace goes to ``<worker>.<ms>.pt.trace.json.gz`` through a hidden temporary file
and a rename, so a folder never holds half a trace, even under a launcher the user runs.
"""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from traceprobe.record.profile import target as tgt
from traceprobe.record.profile.steps import StepOptions, Stepper, phase_of


def trace_writer(folder: Path, worker: str, written: list[str]) -> Any:
    """An ``on_trace_ready`` that exports atomically and notes the file's name."""

    def write(prof: Any) -> None:
        ms = int(time.time() * 1000)
        while (folder / f"{worker}.{ms}.pt.trace.json.gz").exists():
            ms += 1
        name = f"{worker}.{ms}.pt.trace.json.gz"
        part = folder / f".{name}.part-{os.getpid()}.gz"  # export_chrome_trace gzips on .gz
        try:
            prof.export_chrome_trace(str(part))
            os.replace(part, folder / name)
        finally:
            with contextlib.suppress(FileNotFoundError):
                part.unlink()
        written.append(name)

    return write


@contextlib.contextmanager
def _signals(stepper: Stepper) -> Iterator[None]:
    """SIGTERM -> Terminated; both it and SIGINT held back while the profiler steps."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        exc: BaseException = tgt.Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()
        if stepper.busy:
            stepper.pending = exc
        else:
            raise exc

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, handler)
    if previous[signal.SIGINT] is signal.default_int_handler:
        signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def profile_process(
    target: tgt.Target,
    opts: StepOptions,
    folder: Path,
    worker: str,
    rank: int | None = None,
) -> tuple[dict[str, Any], tgt.Ended]:
    """Profile ``target`` in this process into ``folder``; see the module doc."""
    written: list[str] = []
    log = folder / f"{worker}.profiler.log"
    stepper = Stepper(opts, trace_writer(folder, worker, written), log)
    with _signals(stepper):
        stepper.install()
        t0 = time.perf_counter()
        try:
            ended = tgt.run(target)
        finally:
            t1 = time.perf_counter()
            stepper.finish()
    return result(stepper, ended, t0, t1, written, worker, rank, target), ended


def result(
    stepper: Stepper,
    ended: tgt.Ended,
    t0: float,
    t1: float,
    traces: list[str],
    worker: str,
    rank: int | None,
    target: tgt.Target | None = None,
) -> dict[str, Any]:
    s = stepper.schedule
    rows = stepper.steps()
    in_progress = len(stepper.boundaries) - 1 if stepper.boundaries else None
    partial = (
        in_progress
        if in_progress is not None and traces and phase_of(in_progress, s) == "active"
        and stepper.stopped_at is not None and stepper.stopped_at >= t1
        else None
    )
    return {
        "rank": rank,
        "worker": worker,
        "pid": os.getpid(),
        "exit_status": ended.status,
        "ended": ended.how,
        "error": None if ended.error is None else f"{type(ended.error).__name__}: {ended.error}",
        "failed_at": None if target is None else tgt.failed_at(target, ended.error),
        "step_source": stepper.mode,
        "fell_back_to_windows": stepper.fell_back,
        "activities": stepper.activities,
        "cupti_teardown": stepper.cupti_teardown,  # TEARDOWN_CUPTI=1 set (steps.py)
        "boundaries": len(stepper.boundaries),
        "profiled_steps": [r["index"] for r in rows if r["phase"] == "active"],
        "partial_step": partial,
        "traces": traces,
        "timing": timing(stepper, rows, t0, t1),
    }


def timing(stepper: Stepper, rows: list[dict[str, Any]], t0: float, t1: float) -> dict[str, Any]:
    """Wall times: the script, the profiler window, and steps in and out of it.

    ``step_overhead`` compares the median ProfilerStep time while recording (``active``)
    with that of steps the profiler did not record: those after its last cycle (``done``), else
    those it skipped (``wait``, but not #0, which pays for first-step effects).
    """
    start = stepper.started_at
    stop = min(stepper.stopped_at or t1, t1) if start is not None else None
    window = (stop - start) if start is not None and stop is not None else 0.0
    out = outliers(rows)
    usual = [r for r in rows if r["index"] not in {o["index"] for o in out}]
    active = [r["wall_s"] for r in usual if r["phase"] == "active"]
    plain = [r["wall_s"] for r in usual if r["phase"] == "done"] or [
        r["wall_s"] for r in usual if r["phase"] == "wait" and r["index"] > 0
    ]
    host = stepper.host_issue_s()
    med_active = statistics.median(active) if active else None
    med_plain = statistics.median(plain) if plain else None
    return {
        "script_wall_s": round(t1 - t0, 6),
        "profiler_window_s": round(window, 6),
        "outside_window_s": round(t1 - t0 - window, 6),
        "profiler_calls_s": round(stepper.transitions_s(), 6),
        "step_wall_s": [round(r["wall_s"], 6) for r in rows],
        "step_phase": [r["phase"] for r in rows],
        "active_step_median_s": med_active,
        "unprofiled_step_median_s": med_plain,
        "unprofiled_from": "done" if any(r["phase"] == "done" for r in rows) else "wait",
        "step_overhead": (med_active / med_plain) if med_active and med_plain else None,
        "step_overhead_of": [len(active), len(plain)],  # steps behind each median
        # the host steps (--host-steps): each begun on an idle device; their median is in
        # the traces (traceprobeUnprofiled), for whatif's calibrated no-profiler
        "host_issue_median_s": statistics.median(host) if host else None,
        "host_steps": len(host),
        "outlier_steps": out,
    }


OUTLIER = 3.0  # a step over 3x the median step is an outlier, not the profiler's cost


def outliers(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Steps that took more than :data:`OUTLIER` times the median of all steps (a first
    compilation, a checkpoint, an evaluation pass): flagged with that median, and left out
    of the recorded-vs-unprofiled ratio, which compares typical steps."""
    walls = [r["wall_s"] for r in rows]
    if len(walls) < 3:
        return []
    med = statistics.median(walls)
    return [{"index": r["index"], "phase": r["phase"], "wall_s": r["wall_s"],
             "median_s": med, "times_median": r["wall_s"] / med}
            for r in rows if med > 0 and r["wall_s"] > OUTLIER * med]
