"""A profiling job: one process, ranks launched here, or ranks of the user's own launcher.

:func:`run` picks the shape from the arguments and the environment:

* **one process** (``traceprobe profile -- train.py``): the run folder ``OUT/NAME`` is
  staged (:func:`traceprobe.record.staging.staged`) and renamed into place once its trace
  and metadata are written, whatever way the script ended;
* **launched** (``--nproc-per-node N``): the staged folder is handed to
  ``python -m torch.distributed.run ... -m traceprobe.record.profile --into TMP``; each
  rank writes its trace ``<host>_<rank>.<ms>.pt.trace.json.gz`` and a hidden
  ``.rank<R>.json``; this process merges them into the metadata, then renames;
* **own launcher** (``torchrun ... -m traceprobe.record.profile -- train.py``: ``RANK``
  set, no ``--into``): each rank writes its (atomic) trace straight into ``OUT/NAME`` and
  re-merges the metadata under a file lock; the last rank to finish prints the summary.

The exit status is the script's (the highest over ranks), except for a script that
fails on import (one-line error, exit 5) or options that make no sense (exit 2).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from traceprobe.errors import OutputError, RecordError, UsageError
from traceprobe.record import meta, staging
from traceprobe.record.profile import summary
from traceprobe.record.profile import target as tgt
from traceprobe.record.profile.options import Args
from traceprobe.record.registry import Schedule

Echo = Callable[[str], None]
RANK_FILE = ".rank{}.json"


def worker_name(rank: int | None) -> str:
    """Same shape as the record wing's (``host``, ``host_<rank>``): no dots, which split ids."""
    import re
    import socket

    host = re.sub(r"[^A-Za-z0-9-]", "-", socket.gethostname().split(".")[0]) or "host"
    return host if rank is None else f"{host}_{rank}"


def step_options(a: Args) -> Any:
    from traceprobe.record.profile.steps import StepOptions

    s = Schedule(a.wait, a.warmup, a.active, a.repeat)
    if min(a.wait, a.warmup, a.host_steps) < 0 or a.active < 1 or a.repeat < 1:
        raise UsageError("--wait, --warmup and --host-steps must be 0 or more, --active and "
                         "--repeat 1 or more")
    if a.window_ms <= 0 or a.window_after < 0:
        raise UsageError("--window-ms must be more than 0 and --window-after 0 or more")
    return StepOptions(
        schedule=s,
        step_on=a.step_on,
        window_ms=a.window_ms,
        window_after_s=a.window_after,
        record_shapes=a.record_shapes,
        profile_memory=a.profile_memory,
        with_stack=a.with_stack,
        host_steps=a.host_steps,
    )


def run(a: Args, command: list[str], echo: Echo = print) -> int:
    """Profile the target the arguments name; return the exit status (see module doc)."""
    target = tgt.resolve(a.script, a.module, a.args)
    name = a.name or target.stem
    if not a.into and "RANK" not in os.environ:
        if a.name is None and not a.force:
            name = free_name(a.out, name)  # a second main.py: main-2, not a refusal
        _check_run_folder(a.out / name, a.force)  # before torch is imported: a refusal is quick
    from traceprobe.record import require_torch

    require_torch()
    opts = step_options(a)
    if a.into:
        return _rank_into(Path(a.into), target, opts)
    if a.nproc_per_node is not None:
        return _launched(a, target, opts, name, command, echo)
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return _own_launcher(a, target, opts, name, command, echo)
    return _single(a, target, opts, name, command, echo)


# -- one process --------------------------------------------------------------------------
class _NoTrace(Exception):
    pass


def _single(
    a: Args, target: tgt.Target, opts: Any, name: str, command: list[str], echo: Echo
) -> int:
    from traceprobe.record.profile.session import profile_process

    final = a.out / name
    _check_run_folder(final, a.force)
    started = _now()
    try:
        with staging.staged(final) as tmp:
            res, ended = profile_process(target, opts, tmp, worker_name(None))
            _raise_on_import_failure(target, ended, res)
            if not res["traces"]:
                raise _NoTrace
            m = metadata(tmp, [res], target, opts, command, started, "none")
            meta.write(tmp / meta.FILENAME, m)
    except _NoTrace:
        _after(target, ended)
        echo(summary.no_trace(target, res, opts.schedule, opts.host_steps))
        return ended.status
    _after(target, ended)
    echo(summary.text(final, m))
    return ended.status


def _raise_on_import_failure(target: tgt.Target, ended: tgt.Ended, res: dict[str, Any]) -> None:
    if ended.error is not None and res["boundaries"] == 0:
        line = tgt.import_error_line(target, ended.error)
        if line:
            raise RecordError(line)


def _after(target: tgt.Target, ended: tgt.Ended) -> None:
    """Print the script's traceback, as python would have."""
    if ended.error is not None and ended.how in ("exception", "SIGINT"):
        tgt.print_traceback(ended.error)


def free_name(out: Path, stem: str) -> str:
    """``stem``, or the first of ``stem-2``, ``stem-3``... that ``out`` does not hold yet:
    every pytorch/examples script is a ``main.py``, and a second one is a new run, not a
    reason to stop (``--name`` chooses the name; ``--force`` overwrites)."""
    if not (out / stem).exists():
        return stem
    n = 2
    while (out / f"{stem}-{n}").exists():
        n += 1
    return f"{stem}-{n}"


def _check_run_folder(final: Path, force: bool) -> None:
    if final.exists() and not final.is_dir():
        raise OutputError(f"{final} exists and is not a folder; choose another --out or --name")
    if final.exists() and not force:
        raise OutputError(staging.exists_message(final) + "; or choose another --name")


# -- ranks --------------------------------------------------------------------------------
def _rank() -> int:
    return int(os.environ.get("RANK", "0"))


def _rank_into(folder: Path, target: tgt.Target, opts: Any) -> int:
    """One rank started by :func:`_launched`: trace + .rank<R>.json into ``folder``."""
    from traceprobe.record.profile.session import profile_process

    rank = _rank()
    res, ended = profile_process(target, opts, folder, worker_name(rank), rank)
    _after(target, ended)
    _write_json(folder / RANK_FILE.format(rank), res)
    return ended.status


def _launched(
    a: Args, target: tgt.Target, opts: Any, name: str, command: list[str], echo: Echo
) -> int:
    from traceprobe.record import launch

    final = a.out / name
    _check_run_folder(final, a.force)
    started = _now()
    with staging.staged(final) as tmp:
        cmd = torchrun_command(a, target, tmp)
        proc = subprocess.Popen(cmd, env=launch.child_env())
        rc = _wait_forwarding(proc)
        ranks = [_read_json(p) for p in sorted(tmp.glob(".rank*.json"))]
        for p in tmp.glob(".rank*.json"):
            p.unlink()
        if not any(r["traces"] for r in ranks):
            raise RecordError(
                f"torchrun exited with {rc} and no rank wrote a trace; see its output above"
            )
        m = metadata(tmp, ranks, target, opts, command, started, "torch.distributed.run (here)")
        m["launcher_exit"] = rc
        meta.write(tmp / meta.FILENAME, m)
    echo(summary.text(final, m))
    return launched_status(rc, [r["exit_status"] for r in ranks])


def launched_status(rc: int, statuses: list[int]) -> int:
    """The script's status: a failing rank's own, not the SIGTERM (143) torchrun sent the rest."""
    own = [s for s in statuses if s not in (0, 143)]
    if own:
        return own[0]
    return max([*statuses, 0]) or rc


def torchrun_command(a: Args, target: tgt.Target, folder: Path) -> list[str]:
    cmd = [sys.executable, "-m", "torch.distributed.run", f"--nproc-per-node={a.nproc_per_node}"]
    if a.nnodes == "1":
        cmd.append("--standalone")
    else:
        cmd += [f"--nnodes={a.nnodes}", f"--node-rank={a.node_rank}"]
        if a.rdzv_endpoint:
            cmd += ["--rdzv-backend=c10d", f"--rdzv-endpoint={a.rdzv_endpoint}"]
    cmd += ["-m", "traceprobe.record.profile", "--into", str(folder)]
    for key in ("wait", "warmup", "active", "repeat", "window_ms", "window_after", "step_on"):
        value = getattr(a, key)
        if value is not None:
            cmd += [f"--{key.replace('_', '-')}", str(value)]
    for flag in ("record_shapes", "profile_memory", "with_stack"):
        if getattr(a, flag):
            cmd.append(f"--{flag.replace('_', '-')}")
    return [*cmd, "--", *target.argv()] if target.kind == "script" else [*cmd, *target.argv()]


def _wait_forwarding(proc: subprocess.Popen[bytes]) -> int:
    """Wait for torchrun; pass SIGTERM on (Ctrl-C reaches it through the terminal)."""

    def forward(signum: int, frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signum)

    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, lambda s, f: None)  # torchrun gets its own and stops the ranks
    try:
        return proc.wait()
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def _own_launcher(
    a: Args, target: tgt.Target, opts: Any, name: str, command: list[str], echo: Echo
) -> int:
    from traceprobe.record.profile.session import profile_process

    rank, world = _rank(), int(os.environ["WORLD_SIZE"])
    folder = a.out / name
    worker = worker_name(rank)
    folder.mkdir(parents=True, exist_ok=True)
    mine = [*folder.glob(f"{worker}.*.pt.trace.json*"), folder / RANK_FILE.format(rank)]
    if any(p.exists() for p in mine):
        if not a.force:
            raise OutputError(
                f"{folder} already holds rank {rank}'s trace; will not overwrite without --force"
            )
        for p in mine:
            with contextlib.suppress(FileNotFoundError):
                p.unlink()
    started = _now()
    res, ended = profile_process(target, opts, folder, worker, rank)
    _after(target, ended)
    with _locked(folder / ".traceprobe.lock"):  # so exactly one rank sees them all
        _write_json(folder / RANK_FILE.format(rank), res)
        ranks = [_read_json(p) for p in sorted(folder.glob(".rank*.json"))]
        m = metadata(folder, ranks, target, opts, command, started, "the user's (RANK set)")
        meta.write(folder / meta.FILENAME, m)
    if len(ranks) >= world:
        echo(summary.text(folder, m))
    return ended.status


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


# -- metadata -----------------------------------------------------------------------------
def metadata(
    folder: Path,
    ranks: list[dict[str, Any]],
    target: tgt.Target,
    opts: Any,
    command: list[str],
    started: datetime,
    launcher: str,
) -> dict[str, Any]:
    """The run's ``traceprobe.meta/1`` document (fields documented in docs/PROFILE.md)."""
    env = meta.environment()
    ranks = sorted(ranks, key=lambda r: -1 if r["rank"] is None else r["rank"])
    first = ranks[0]
    by_worker = {r["worker"]: r["rank"] for r in ranks}
    traces = []
    for r in ranks:
        for f in r["traces"]:
            if (folder / f).exists():
                traces.append({"file": f, "bytes": (folder / f).stat().st_size, "rank": r["rank"]})
    return {
        "schema": meta.SCHEMA,
        "kind": "profile",
        "workload": "profile",
        "variant": folder.name.split(".tmp-")[0].lstrip("."),
        "target": {"kind": target.kind, "name": target.name, "args": list(target.args)},
        "script": str(Path(target.name).resolve()) if target.kind == "script" else None,
        "cwd": os.getcwd(),
        "command": command,
        "argv": env["command"],
        "torch": env["torch"],
        "cuda": env["cuda"],
        "gpus": env["gpus"],
        "hostname": env["hostname"],
        "python": env["python"],
        "traceprobe": env["traceprobe"],
        "started": started.isoformat(timespec="seconds"),
        "launcher": launcher,
        "world_size": int(os.environ.get("WORLD_SIZE", len(ranks))) if launcher != "none" else 1,
        "exit_status": max(r["exit_status"] for r in ranks),
        "ended": first["ended"],
        "profiler": {
            "activities": first["activities"],
            "schedule": asdict(opts.schedule),
            "step_source": first["step_source"],
            "step_on": opts.step_on,
            "window_ms": opts.window_ms,
            "window_after_s": opts.window_after_s,
            "fell_back_to_windows": first["fell_back_to_windows"],
            "record_shapes": opts.record_shapes,
            "profile_memory": opts.profile_memory,
            "with_stack": opts.with_stack,
            "profiled_steps": first["profiled_steps"],
            "partial_step": first["partial_step"],
        },
        "timing": first["timing"],
        "overhead": {
            "step_overhead": first["timing"]["step_overhead"],
            "definition": "median recorded (active) step time / median unprofiled step time, "
            "same run; whole-script figures in docs/PROFILE.md",
        },
        "traces": traces,
        "ranks": ranks,
        "worker_ranks": by_worker,
    }


def _now() -> datetime:
    return datetime.now(timezone.utc)  # noqa: UP017 (3.10)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    os.replace(tmp, path)


def _read_json(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data

