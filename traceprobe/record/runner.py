"""Record workloads: warm up, time without the profiler, then profile; write it all down.

For each selected ``(workload, variant)``::

    plan devices -> prepare(ctx) -> measure(step) -> check() -> metadata -> rename into place

:func:`measure` is the heart and is shared with the DDP worker (one call per rank):

1. one warm-up step, outside any profiler;
2. ``plain_steps`` steps without the profiler: host wall time per step (after the
   devices are synchronized) and CUDA-event time per GPU;
3. ``schedule.steps`` steps under ``torch.profiler.profile`` with that schedule,
   ``prof.step()`` after each; the same timings per step, with the step's phase
   (wait / warmup / active). Traces go through ``tensorboard_trace_handler``; whatever torch
   writes to the console meanwhile (its C++ log lines) goes to ``torch.log`` beside them.

The timing dict (``timing`` in the metadata)::

    {"warmup_steps": 1,
     "plain":    {"steps", "step_wall_s": [...], "mean_s", "min_s", "cuda_event_ms": {dev: [...]}},
     "profiled": {"steps": [{"index", "phase", "wall_s", "cuda_event_ms"}],
                  "active_step_wall_s": [...], "active_wall_s", "active_mean_s",
                  "region_wall_s",        # first active step start -> last active end
                  "cuda_event_ms": {dev: [active steps]}},
     "profiler_overhead": active_mean_s / plain mean_s}
"""

from __future__ import annotations

import contextlib
import gc
import re
import signal
import socket
import statistics
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import torch
from tqdm import tqdm

from traceprobe.errors import RecordError
from traceprobe.record import devices, meta, quiet, registry, staging, workloads
from traceprobe.record.registry import Schedule, WorkloadSpec

Echo = Callable[[str], None]


@dataclass
class Options:
    device: str = "auto"  # auto | cpu | cuda
    scale: str = "auto"  # auto | small | full (auto: full on GPUs, small on the CPU)
    schedule: Schedule = field(default_factory=Schedule)
    record_shapes: bool = False
    profile_memory: bool = False
    with_stack: bool = False
    plain_steps: int = 3
    ddp_timeout_s: float = 300.0
    # The command line that reproduces this run (the CLI fills it in); else sys.argv.
    command: list[str] | None = None


def worker_name(rank: int | None = None) -> str:
    """``host`` for one process; ``host_<rank>`` per rank, the ``<node>_<number>`` shape
    torch-tb-profiler's distributed view parses (no dots: they separate the trace id)."""
    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0]) or "host"
    return host if rank is None else f"{host}_{rank}"


def phase_of(index: int, s: Schedule) -> str:
    pos = index % (s.wait + s.warmup + s.active)
    return "wait" if pos < s.wait else "warmup" if pos < s.wait + s.warmup else "active"


def _timed(step: Callable[[], None], gpus: list[torch.device]) -> tuple[float, dict[str, float]]:
    timer = devices.EventTimer(gpus)
    t0 = time.perf_counter()
    timer.start()
    step()
    timer.stop()
    devices.synchronize(gpus)
    wall = time.perf_counter() - t0
    return wall, timer.elapsed_ms()


def _per_device(rows: list[dict[str, float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for row in rows:
        for dev, ms in row.items():
            out.setdefault(dev, []).append(ms)
    return out


def measure(
    step: Callable[[], None],
    gpus: list[torch.device],
    schedule: Schedule,
    options: Options,
    trace_dir: Path,
    worker: str,
    bar: tqdm | None = None,
) -> dict[str, Any]:
    """Warm up, time ``options.plain_steps`` plain steps, then profile; see module doc."""
    tick = bar.update if bar is not None else (lambda n=1: None)
    _timed(step, gpus)  # warm-up, outside the profiler
    tick(1)

    plain_wall: list[float] = []
    plain_events: list[dict[str, float]] = []
    for _ in range(options.plain_steps):
        wall, ev = _timed(step, gpus)
        plain_wall.append(wall)
        plain_events.append(ev)
        tick(1)

    activities = [torch.profiler.ProfilerActivity.CPU]
    if gpus:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    rows: list[dict[str, Any]] = []
    first_active: float | None = None
    last_active_end = 0.0
    log = trace_dir / quiet.LOG_NAME  # torch's own lines, off the console (record/quiet.py)
    with quiet.to_log(log), warnings.catch_warnings():
        # torch >= 2.5 warns on every profiler with a schedule; we export each cycle ourselves.
        warnings.filterwarnings("ignore", message=".*clears events at the end of each cycle")
        with torch.profiler.profile(
            activities=activities,
            schedule=torch.profiler.schedule(
                wait=schedule.wait,
                warmup=schedule.warmup,
                active=schedule.active,
                repeat=schedule.repeat,
            ),
            on_trace_ready=torch.profiler.tensorboard_trace_handler(
                str(trace_dir), worker_name=worker, use_gzip=True
            ),
            record_shapes=options.record_shapes,
            profile_memory=options.profile_memory,
            with_stack=options.with_stack,
        ) as prof:
            for i in range(schedule.steps):
                phase = phase_of(i, schedule)
                start = time.perf_counter()
                wall, ev = _timed(step, gpus)
                if phase == "active":
                    first_active = start if first_active is None else first_active
                    last_active_end = start + wall
                rows.append({"index": i, "phase": phase, "wall_s": wall, "cuda_event_ms": ev})
                prof.step()
                tick(1)  # the bar writes to the console itself (quiet.console), not to the log
    quiet.drop_if_empty(log)

    active = [r for r in rows if r["phase"] == "active"]
    active_wall = [r["wall_s"] for r in active]
    plain_mean = statistics.fmean(plain_wall) if plain_wall else None
    active_mean = statistics.fmean(active_wall)
    return {
        "warmup_steps": 1,
        "plain": {
            "steps": len(plain_wall),
            "step_wall_s": plain_wall,
            "mean_s": plain_mean,
            "min_s": min(plain_wall) if plain_wall else None,
            "cuda_event_ms": _per_device(plain_events),
        },
        "profiled": {
            "steps": rows,
            "active_step_wall_s": active_wall,
            "active_wall_s": sum(active_wall),
            "active_mean_s": active_mean,
            "region_wall_s": last_active_end - (first_active or 0.0),
            "cuda_event_ms": _per_device([r["cuda_event_ms"] for r in active]),
        },
        "profiler_overhead": active_mean / plain_mean if plain_mean else None,
    }


def profiler_info(
    schedule: Schedule, spec: WorkloadSpec, options: Options, gpus: bool
) -> dict[str, Any]:
    return {
        "activities": ["CPU", "CUDA"] if gpus else ["CPU"],
        "schedule": asdict(schedule),
        "schedule_from": "workload" if spec.schedule else "options",
        "record_shapes": options.record_shapes,
        "profile_memory": options.profile_memory,
        "with_stack": options.with_stack,
        "steps_run": schedule.steps,
        "profiled_steps": schedule.active * schedule.repeat,
    }


def trace_files(folder: Path, ranks: dict[str, int] | None = None) -> list[dict[str, Any]]:
    """The traces in ``folder``; ``ranks`` maps a worker name to its rank (ddp)."""
    out = []
    for p in sorted(folder.glob("*.pt.trace.json*")):
        worker = p.name.split(".")[0]
        rank = (ranks or {}).get(worker)
        out.append({"file": p.name, "bytes": p.stat().st_size, "rank": rank})
    return out


def record_in_process(
    spec: WorkloadSpec,
    variant: str,
    machine: devices.Machine,
    scale: str,
    options: Options,
    tmp: Path,
    bar: tqdm | None,
) -> dict[str, Any]:
    plan = devices.plan(spec.wants, machine)
    sizes = workloads.sizes_for(spec, scale)
    ctx = workloads.Context(variant, plan, sizes)
    prepared = workloads.load(spec).prepare(ctx)
    used = prepared.devices if prepared.devices is not None else plan.devices
    gpus = devices.distinct_gpus(used)
    schedule = spec.schedule or options.schedule
    timing = measure(prepared.step, gpus, schedule, options, tmp, worker_name(), bar)
    correct, detail = prepared.check() if prepared.check else (None, None)
    return {
        "devices_wanted": plan.wanted,
        "devices_used": [str(d) for d in used],
        "fallback": plan.fallback,
        "notes": plan.notes + prepared.notes,
        "sizes": asdict(sizes),
        "correct": correct,
        "correct_detail": detail,
        "facts": prepared.facts,
        "profiler": profiler_info(schedule, spec, options, bool(gpus)),
        "timing": timing,
    }


def record_variant(
    spec: WorkloadSpec,
    variant: str,
    machine: devices.Machine,
    scale: str,
    options: Options,
    out: Path,
    env: dict[str, Any],
    progress: bool,
) -> dict[str, Any]:
    from traceprobe.record import launch

    schedule = spec.schedule or options.schedule
    total = 1 if spec.distributed else 1 + options.plain_steps + schedule.steps
    started = datetime.now(timezone.utc)  # noqa: UP017 (3.10)
    t0 = time.perf_counter()
    with (
        staging.staged(out / spec.name / variant) as tmp,
        quiet.console() as console,
        tqdm(
            total=total,
            desc=f"{spec.name}/{variant}",
            unit="step",
            file=console,
            disable=not progress,
            leave=False,
        ) as bar,
    ):
        if spec.distributed:
            body = launch.record_distributed(spec, variant, machine, scale, options, tmp)
            bar.update(1)
        else:
            body = record_in_process(spec, variant, machine, scale, options, tmp, bar)
        notes = body.pop("notes")
        worker_ranks = body.pop("worker_ranks", None)
        m: dict[str, Any] = {
            "schema": meta.SCHEMA,
            "workload": spec.name,
            "variant": variant,
            "claim": spec.claim_of(variant),
            "devices_wanted": body.pop("devices_wanted"),
            "devices_used": body.pop("devices_used"),
            "fallback": body.pop("fallback"),
            "note": " ".join(notes) if notes else None,
            "machine": {"device": options.device, "kind": machine.kind, "gpus": machine.gpus},
            "torch": env["torch"],
            "cuda": env["cuda"],
            "gpus": env["gpus"],
            "scale": scale,
            **body,
            "traces": trace_files(tmp, worker_ranks),
            "command": options.command or env["command"],
            "argv": env["command"],
            "hostname": env["hostname"],
            "started": started.isoformat(timespec="seconds"),
            "recorded_s": round(time.perf_counter() - t0, 3),
            "python": env["python"],
            "traceprobe": env["traceprobe"],
        }
        if not m["traces"]:
            raise RecordError(f"{spec.name}/{variant}: the profiler wrote no trace into {tmp}")
        m["tensorboard_scalars"] = write_scalars(tmp)
        meta.write(tmp / meta.FILENAME, m)
    return m


def write_scalars(folder: Path) -> str:
    """traceprobe's per-step figures as TensorBoard scalars beside the traces; says what it did.

    Needs the analysis wing's dependencies (msgspec, tensorboard). Where they are missing
    (e.g. a bare GPU box with torch only), the traces are still recorded and the metadata
    says why there are no scalars; `traceprobe analyze DIR --tensorboard` adds them later.
    """
    try:
        from traceprobe import report, tensorboard
        from traceprobe.load import pipeline as loader

        reports = [report.analyze(t, step="all").to_dict() for t in loader.load_many(
            loader.find_traces(folder), jobs=1)]
        files = tensorboard.write_scalars(folder, reports)
    except ImportError as e:
        return f"not written: {e}; run `traceprobe analyze DIR --tensorboard` where it is installed"
    except Exception as e:  # noqa: BLE001 - the traces matter more than the scalars
        return f"not written: {type(e).__name__}: {e}"
    return ", ".join(str(Path(f).relative_to(folder)) for f in files)


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """SIGTERM -> KeyboardInterrupt, so a killed run cleans its temp folders as Ctrl-C does."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def resolve_scale(scale: str, machine: devices.Machine) -> str:
    if scale not in ("auto", "small", "full"):
        raise RecordError(f"--scale must be auto, small or full, not {scale!r}")
    if scale == "auto":
        return "full" if machine.kind == "cuda" else "small"
    return scale


def record(
    selectors: list[str] | tuple[str, ...],
    out: Path,
    options: Options | None = None,
    *,
    force: bool = False,
    progress: bool = True,
    echo: Echo = print,
) -> list[dict[str, Any]]:
    """Record the selected variants (all when none) into ``out``; return their metadata.

    A variant that fails is reported through ``echo`` and the others still run; at the
    end :class:`RecordError` lists the failures. Ctrl-C stops at once and leaves only
    finished variant folders behind.
    """
    options = options or Options()
    pairs = registry.select(selectors)
    options.schedule.check()
    if options.plain_steps < 0:
        raise RecordError("--plain-steps must be 0 or more")
    out = Path(out)
    machine = devices.resolve(options.device)
    staging.check_out(out, force)
    scale = resolve_scale(options.scale, machine)
    env = meta.environment()
    if machine.kind == "cuda":
        where = f"{machine.label} ({', '.join(g['name'] for g in env['gpus'])})"
    else:
        where = "the CPU" + (" (--device cpu)" if env["gpus"] else " (no GPU)")
    echo(f"Recording {len(pairs)} variant(s) on {where}, {scale} sizes, into {out}")
    results: list[dict[str, Any]] = []
    failures: list[str] = []
    with _sigterm_as_interrupt():
        for spec, variant in pairs:
            try:
                m = record_variant(spec, variant, machine, scale, options, out, env, progress)
            except Exception as e:  # noqa: BLE001 - reported, the others still run
                failures.append(f"{spec.name}/{variant}")
                echo(f"{spec.name}/{variant}: FAILED: {type(e).__name__}: {e}")
                continue
            finally:
                gc.collect()
                if torch.cuda.is_available():
                    torch.cuda.empty_cache()
            results.append(m)
            echo(meta.summary_line(m))
            if m["note"]:
                echo(f"    note: {m['note']}")
    if failures:
        raise RecordError(
            f"{len(failures)} of {len(pairs)} variant(s) failed: {', '.join(failures)} "
            "(see the FAILED lines above); the others are in place"
        )
    return results
