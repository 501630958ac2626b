"""Where a step ends, and the profiler that steps there.

A :class:`Stepper` owns one ``torch.profiler.profile`` with a wait/warmup/active/repeat
schedule and moves it on at *boundaries* that come from the unmodified script:

* ``optimizer`` (default): every step of the first optimizer that steps, through
  PyTorch's global hook ``torch.optim.optimizer.register_optimizer_step_post_hook``
  (a GAN's second optimizer does not count twice);
* ``--step-on NAME``: every exit of a ``record_function`` range labelled NAME, or every
  return from a Python function named NAME (through ``sys.setprofile``: a Python call
  per function call while the script runs, so prefer a ``record_function`` label);
* time windows of ``--window-ms`` (``SIGALRM`` on the main thread, where Kineto must
  be driven): from the start with ``--window-after 0``, else as a fallback when no
  optimizer has stepped ``--window-after`` seconds into the script. An optimizer
  step that comes while those windows are still in the schedule's ``wait`` (nothing
  recorded yet) undoes the fallback: the script was only slow to start. An optimizer step
  that has *begun* (``register_optimizer_step_pre_hook``) but not ended when the time is up
  is a slow step (an LBFGS step of many closure calls), not a script without an optimizer:
  no fallback. Each recorded time window holds a zero-length ``record_function`` named
  :data:`WINDOW_MARK`, so that the analysis labels its ``ProfilerStep#N`` as time windows.

The first boundary starts the profiler, so ``ProfilerStep#0`` is the iteration after
the first one (from the end of the first optimizer step to the end of the second):
the script's set-up never lands in a step. Kineto's own log lines (``profiler_start`` ...)
are written to ``log`` instead of the console's stderr.

``--host-steps N`` puts N *host steps* right after the first step (ProfilerStep#1 to #N; the
rest of the schedule's wait, warm-up and active steps follow, numbered on by N): each
begins on an idle device (a ``torch.cuda.synchronize()`` at its boundary) and is timed, so
its wall time is the host's unprofiled **issue time** for one step (the GPU does not hold the
host back unless the step waits for it). Their median goes into every trace the schedule
writes as the top-level key ``traceprobeUnprofiled`` (``host_ms``), on which ``traceprobe
whatif``'s ``no-profiler`` calibrates the profiler's cost (traceprobe/graph/calibrate.py).
Not with time windows, which are not steps.

**CUPTI torn down after the last cycle.** Kineto leaves CUPTI subscribed when the profiler
stops unless ``TEARDOWN_CUPTI=1`` (pytorch/pytorch#144455), and the steps after it keep paying
for it: a host-bound bf16 language model on an H200 ran 18.0 ms a step after the profiler
against 10.8 ms with the teardown. The steps after the last cycle are the unprofiled steps the
metadata times, so :func:`teardown_cupti` sets ``TEARDOWN_CUPTI=1`` for a single cycle on CUDA
12.6 or later (earlier CUDA crashed re-initialising CUPTI after a teardown with CUDA graphs;
several cycles re-initialise it), unless the environment sets it already.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.optim.optimizer import (
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
)

from traceprobe.record.registry import Schedule

OPTIMIZER, STEP_ON, WINDOWS = "optimizer", "step-on", "windows"
WINDOW_MARK = "traceprobe.time_window: {ms:g} ms"  # traceprobe.report.build reads it back
HOST = "host"  # the phase of a host step
UNPROFILED_KEY = "traceprobeUnprofiled"  # the trace's top-level key (traceprobe.load reads it)


@dataclass
class StepOptions:
    schedule: Schedule = field(default_factory=lambda: Schedule(3, 2, 3, 1))
    step_on: str | None = None
    window_ms: float = 1000.0
    window_after_s: float = 30.0
    record_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    host_steps: int = 0


def void(_: object) -> None:
    """Drop a value (an undo action returns nothing)."""


def phase_of(index: int, s: Schedule) -> str:
    """The schedule's phase of ProfilerStep ``index`` ("done" after the last cycle)."""
    cycle = s.wait + s.warmup + s.active
    if s.repeat and index >= cycle * s.repeat:
        return "done"
    pos = index % cycle
    return "wait" if pos < s.wait else "warmup" if pos < s.wait + s.warmup else "active"


@contextlib.contextmanager
def quiet_stderr(log: Path) -> Iterator[None]:
    """Send file descriptor 2 to ``log`` for the duration (Kineto writes there from C++)."""
    with contextlib.suppress(Exception):
        sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(log, "ab") as f:
            os.dup2(f.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


TEARDOWN_MIN_CUDA = (12, 6)


def teardown_cupti(environ: dict[str, str] | os._Environ[str], cuda: str | None,
                   repeat: int) -> bool:
    """Set ``TEARDOWN_CUPTI=1`` in ``environ`` when the module doc says so; whether it did."""
    if "TEARDOWN_CUPTI" in environ or repeat != 1 or not cuda:
        return False
    try:
        version = tuple(int(x) for x in cuda.split(".")[:2])
    except ValueError:
        return False
    if version < TEARDOWN_MIN_CUDA:
        return False
    environ["TEARDOWN_CUPTI"] = "1"
    return True


class Stepper:
    """One profiler moved on at the script's boundaries; see the module doc."""

    def __init__(self, opts: StepOptions, write_trace: Callable[[Any], None], log: Path) -> None:
        self.opts = opts
        self.log = log
        self.mode = STEP_ON if opts.step_on else WINDOWS if opts.window_after_s == 0 else OPTIMIZER
        self.fell_back = False
        # perf_counter on entering and leaving each boundary (the first starts the profiler)
        self.boundaries: list[tuple[float, float]] = []
        self.started_at: float | None = None
        self.stopped_at: float | None = None
        self._optimizer: int | None = None  # id() of the optimizer whose steps count
        self.optimizer_began = False  # an optimizer step started (pre-hook), ended or not
        self.busy = False
        self.pending: BaseException | None = None  # a signal held back while stepping
        self._undo: list[Callable[[], None]] = []
        self._write_trace = write_trace
        activities = [torch.profiler.ProfilerActivity.CPU]
        self.cupti_teardown = False
        if torch.cuda.is_available():
            activities.append(torch.profiler.ProfilerActivity.CUDA)
            self.cupti_teardown = teardown_cupti(os.environ, torch.version.cuda,
                                                 opts.schedule.repeat)
        self.activities = [a.name for a in activities]
        self._activities = activities
        s = opts.schedule  # the profiler's: the host steps wait too
        self.schedule = Schedule(s.wait + opts.host_steps, s.warmup, s.active, s.repeat)
        self.prof = self._profiler()

    def phase(self, index: int) -> str:
        """The phase of ProfilerStep ``index``: the schedule's, or :data:`HOST`."""
        if 1 <= index <= self.opts.host_steps:
            return HOST
        return phase_of(index, self.schedule)

    def host_issue_s(self, now: float | None = None) -> list[float]:
        """The host steps' wall times, in seconds, of those complete (none with time
        windows); ``now``: a boundary entered then, not yet in :attr:`boundaries`."""
        if self.mode == WINDOWS:
            return []
        b = self.boundaries + ([] if now is None else [(now, now)])
        return [b[i + 1][0] - b[i][1] for i in range(1, min(self.opts.host_steps + 1, len(b) - 1))]

    def _profiler(self) -> Any:
        s, o = self.schedule, self.opts
        return torch.profiler.profile(
            activities=self._activities,
            schedule=torch.profiler.schedule(
                wait=s.wait, warmup=s.warmup, active=s.active, repeat=s.repeat
            ),
            on_trace_ready=self._ready,
            record_shapes=o.record_shapes,
            profile_memory=o.profile_memory,
            with_stack=o.with_stack,
        )

    # -- wiring -------------------------------------------------------------------
    def install(self) -> None:
        """Hook into the process; :meth:`finish` undoes every hook."""
        if self.mode == STEP_ON:
            self._install_step_on(self.opts.step_on or "")
        else:
            handle = register_optimizer_step_post_hook(self._optimizer_hook)
            self._undo.append(handle.remove)
            began = register_optimizer_step_pre_hook(self._optimizer_began)
            self._undo.append(began.remove)
            if self.mode == WINDOWS:
                self._start_windows(0.0)
            elif threading.current_thread() is threading.main_thread():
                self._start_windows(self.opts.window_after_s)

    def _optimizer_hook(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.fell_back and self.mode == WINDOWS and self._phase_now() == "wait":
            self._back_to_optimizer()  # a slow start, not a script without optimizer
        if self.mode != OPTIMIZER:
            return
        if self._optimizer is None:
            self._optimizer = id(optimizer)
            self._cancel_timer()  # an optimizer stepped: no fallback to windows
        if id(optimizer) == self._optimizer:
            self.boundary()

    def _optimizer_began(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.optimizer_began = True

    def _back_to_optimizer(self) -> None:
        """Undo a fallback to windows that has recorded nothing yet (still in its wait)."""
        self._cancel_timer()
        with quiet_stderr(self.log):
            self.prof.stop()  # in the wait phase: nothing was collected, nothing is written
        self.prof = self._profiler()
        self.mode, self.fell_back = OPTIMIZER, False
        self.started_at, self.boundaries = None, []

    def _install_step_on(self, name: str) -> None:
        cls = torch.autograd.profiler.record_function
        original = cls.__exit__
        stepper = self

        def exit_(self: Any, *exc: Any) -> Any:
            result = original(self, *exc)
            if getattr(self, "name", None) == name:
                stepper.boundary()
            return result

        cls.__exit__ = exit_  # type: ignore[method-assign]
        self._undo.append(lambda: setattr(cls, "__exit__", original))

        def on_call(frame: Any, event: str, arg: Any) -> None:
            if event == "return" and frame.f_code.co_name == name:
                stepper.boundary()

        previous = sys.getprofile()
        sys.setprofile(on_call)
        self._undo.append(lambda: sys.setprofile(previous))

    # -- time windows -------------------------------------------------------------
    def _start_windows(self, after_s: float) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        previous = signal.getsignal(signal.SIGALRM)
        if previous not in (signal.SIG_DFL, signal.SIG_IGN, None):
            return  # the script's own alarm: leave it alone (no fallback)
        signal.signal(signal.SIGALRM, self._alarm)
        self._undo.append(lambda: void(signal.signal(signal.SIGALRM, previous)))
        self._arm(after_s if after_s > 0 else 1e-6)

    def _arm(self, seconds: float) -> None:
        signal.setitimer(signal.ITIMER_REAL, seconds)

    def _cancel_timer(self) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, 0)

    def _alarm(self, signum: int, frame: Any) -> None:
        if self.mode == OPTIMIZER:
            if self._optimizer is not None or self.optimizer_began:
                return  # an optimizer stepped, or its first step is still running: slow
            self.mode, self.fell_back = WINDOWS, True
        if self.mode != WINDOWS or self.stopped_at is not None:
            return
        self.boundary()
        if self._phase_now() != "done":
            self._arm(self.opts.window_ms / 1000)

    # -- the profiler ---------------------------------------------------------------
    def boundary(self) -> None:
        """The script finished a step: start the profiler, or move it on."""
        if self.busy:
            return
        entered = time.perf_counter()
        if self.started_at is not None and self._phase_now() == "done":
            self.boundaries.append((entered, entered))
            return  # every cycle written: the profiler is off, steps are only timed
        if self.stopped_at is not None:
            return
        self.busy = True
        try:
            with quiet_stderr(self.log), warnings.catch_warnings():
                warnings.filterwarnings("ignore", module=r"torch\.profiler.*")
                warnings.filterwarnings("ignore", message=".*[Pp]rofiler.*")
                if self.started_at is None:
                    self.prof.start()
                    self.started_at = entered
                else:
                    self.prof.step()
                    if phase_of(self.prof.step_num, self.schedule) == "done":
                        self._stop_profiler()
                    self._host_step_begins(entered)
                if self.mode == WINDOWS and self.stopped_at is None:
                    with torch.profiler.record_function(WINDOW_MARK.format(ms=self.opts.window_ms)):
                        pass  # the window is labelled in the trace itself
            self.boundaries.append((entered, time.perf_counter()))
        finally:
            self.busy = False
        if self.pending is not None:
            exc, self.pending = self.pending, None
            raise exc

    def _host_step_begins(self, entered: float) -> None:
        """At a boundary: the step that begins is a host step: drain the device first (the
        leave time is taken after this); or it is recorded: store the host steps' median."""
        if self.mode == WINDOWS or not self.opts.host_steps:
            return
        now = len(self.boundaries)  # the step beginning at this boundary
        if self.phase(now) == HOST:
            if torch.cuda.is_available():
                torch.cuda.synchronize()
        elif phase_of(now, self.schedule) in ("warmup", "active"):
            issue = self.host_issue_s(entered)
            if issue:
                import json
                import statistics

                with contextlib.suppress(Exception):  # a torch without it: no calibration
                    self.prof.add_metadata_json(UNPROFILED_KEY, json.dumps({
                        "host_ms": statistics.median(issue) * 1e3, "host_steps": len(issue),
                        "how": "median wall time of host steps, each begun on an idle "
                               "device: the host's issue time (traceprobe profile)"}))

    def _phase_now(self) -> str:
        return phase_of(len(self.boundaries) - 1, self.schedule)

    def _stop_profiler(self) -> None:
        if self.stopped_at is None and self.started_at is not None:
            self.prof.stop()
            self.stopped_at = time.perf_counter()

    def _ready(self, prof: Any) -> None:
        self._write_trace(prof)

    def finish(self) -> None:
        """Unhook; stop the profiler, writing the cycle in progress if it was recording.

        Signals stay held from here on (``busy``): a SIGTERM a launcher sends while the
        last trace is being exported must not cut the export short; it is dropped, the
        script having ended already."""
        self.busy = True
        self._cancel_timer()
        for undo in reversed(self._undo):
            with contextlib.suppress(Exception):
                undo()
        self._undo.clear()
        if self.started_at is not None and self.stopped_at is None:
            with quiet_stderr(self.log), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                self._stop_profiler()

    # -- what happened ----------------------------------------------------------------
    def steps(self) -> list[dict[str, Any]]:
        """One row per ProfilerStep window completed: index, phase, the script's wall time
        in it (from leaving one boundary to entering the next: the profiler's own start,
        step and export are left out and summed in :meth:`transitions_s`)."""
        b = self.boundaries
        return [
            {"index": i, "phase": self.phase(i), "wall_s": b[i + 1][0] - b[i][1]}
            for i in range(len(b) - 1)
        ]

    def transitions_s(self) -> float:
        """Time spent inside the profiler's start/step calls (Kineto set-up, exports)."""
        return sum(out - into for into, out in self.boundaries)
