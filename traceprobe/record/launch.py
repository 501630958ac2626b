"""Run a distributed workload through torchrun: one process, and one trace, per rank.

``python -m torch.distributed.run --standalone --nproc_per_node N -m
traceprobe.record.ddp_worker ...`` with N = the number of GPUs (NCCL), or 2 on the CPU
(gloo). Each rank writes its trace (worker ``<host>_<rank>``) and a ``_rank<R>.json``
with its timing into the variant's temporary folder; this module merges those into the
variant's metadata (``ranks``) and keeps torchrun's output as ``torchrun.log`` beside the
traces.

Children get ``NCCL_NVLS_ENABLE=0``, ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1`` and
``NVSHMEM_DISABLE_NVLS=1`` (NVLink multicast off, as shared GPU hosts require), and a
``PYTHONPATH`` that finds this copy of traceprobe even when it is not installed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from traceprobe.errors import RecordError
from traceprobe.record import devices
from traceprobe.record.registry import WorkloadSpec

MULTICAST_OFF = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


def child_env() -> dict[str, str]:
    import traceprobe

    env = dict(os.environ)
    env.update(MULTICAST_OFF)
    src = str(Path(traceprobe.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    env.setdefault("OMP_NUM_THREADS", "1")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def world_size(machine: devices.Machine) -> int:
    return machine.gpus if machine.kind == "cuda" else 2


def command(
    spec: WorkloadSpec,
    variant: str,
    machine: devices.Machine,
    scale: str,
    options: Any,
    folder: Path,
) -> list[str]:
    s = spec.schedule or options.schedule
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={world_size(machine)}",
        "-m",
        "traceprobe.record.ddp_worker",
        "--workload",
        spec.name,
        "--variant",
        variant,
        "--out",
        str(folder),
        "--device",
        machine.kind,
        "--scale",
        scale,
        "--wait",
        str(s.wait),
        "--warmup",
        str(s.warmup),
        "--active",
        str(s.active),
        "--repeat",
        str(s.repeat),
        "--plain-steps",
        str(options.plain_steps),
    ]
    for flag in ("record_shapes", "profile_memory", "with_stack"):
        if getattr(options, flag):
            cmd.append("--" + flag.replace("_", "-"))
    return cmd


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End torchrun and its workers (their own process group, started by us)."""
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


def record_distributed(
    spec: WorkloadSpec,
    variant: str,
    machine: devices.Machine,
    scale: str,
    options: Any,
    folder: Path,
) -> dict[str, Any]:
    world = world_size(machine)
    if world < 1:
        raise RecordError(f"{spec.name}: no GPU to run a rank on")
    log_path = folder / "torchrun.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            command(spec, variant, machine, scale, options, folder),
            env=child_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            rc = proc.wait(timeout=options.ddp_timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise RecordError(
                f"{spec.name}/{variant}: torchrun did not finish in {options.ddp_timeout_s:.0f} s"
                f"; last output: {_tail(log_path)}"
            ) from None
        except BaseException:  # Ctrl-C: take the ranks down with us
            _stop(proc)
            raise
    results = [folder / f"_rank{r}.json" for r in range(world)]
    missing = [p.name for p in results if not p.exists()]
    if rc != 0 and missing:
        raise RecordError(
            f"{spec.name}/{variant}: torchrun exited with {rc}; last output: {_tail(log_path)}"
        )
    if missing:
        raise RecordError(f"{spec.name}/{variant}: no result from {', '.join(missing)}")
    ranks = [json.loads(p.read_text()) for p in results]
    for p in results:
        p.unlink()
    first = ranks[0]
    used = [x["device"] for x in ranks]
    notes = []
    if rc != 0:  # every rank finished and wrote its results, then the teardown failed
        notes.append(f"torchrun exited with {rc} after every rank had written its results.")
    if machine.kind == "cpu":
        notes.append(
            f"no GPU: ran {world} ranks on the CPU with gloo (CPU fallback; the "
            "traces have no GPU activity)."
        )
    elif world < len(spec.wants):
        notes.append(f"wanted {len(spec.wants)} GPUs, found {world}: ran {world} rank(s).")
    elif world > len(spec.wants):
        notes.append(f"ran {world} ranks, one per GPU.")
    return {
        "devices_wanted": list(spec.wants),
        "devices_used": used,
        "fallback": machine.kind == "cpu",
        "notes": notes,
        "sizes": first["sizes"],
        "correct": all(x["correct"] for x in ranks),
        "correct_detail": first["correct_detail"],
        "facts": {
            **first["facts"],
            "launcher": "torch.distributed.run --standalone",
            "torchrun_exit": rc,
        },
        "profiler": first["profiler"],
        "timing": first["timing"],  # rank 0's; every rank's is under "ranks"
        "ranks": ranks,
        "worker_ranks": {x["worker"]: x["rank"] for x in ranks},
    }


def _tail(path: Path, lines: int = 8) -> str:
    text = path.read_text(errors="replace").strip().splitlines()
    return " | ".join(text[-lines:]) or "(none)"
