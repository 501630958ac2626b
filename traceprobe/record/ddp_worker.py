"""One rank of a distributed workload; started by torchrun (see :mod:`.launch`).

    python -m torch.distributed.run --standalone --nproc_per_node 2 \\
        -m traceprobe.record.ddp_worker --workload ddp --variant train --out DIR --device cpu

Each rank: init the process group (NCCL on ``cuda``, gloo on ``cpu``), prepare the
workload with its rank, :func:`traceprobe.record.runner.measure` it (trace
``<host>_<R>.<id>.pt.trace.json.gz`` in ``--out``), run its check, and write
``_rank<R>.json`` for the parent to merge.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="traceprobe.record.ddp_worker")
    p.add_argument("--workload", required=True)
    p.add_argument("--variant", required=True)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--device", choices=("cpu", "cuda"), required=True)
    p.add_argument("--scale", choices=("small", "full"), required=True)
    defaults = {"wait": 0, "warmup": 1, "active": 1, "repeat": 1, "plain-steps": 3}
    for name, default in defaults.items():
        p.add_argument("--" + name, type=int, default=default)
    for flag in ("record-shapes", "profile-memory", "with-stack"):
        p.add_argument("--" + flag, action="store_true")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    import torch
    import torch.distributed as dist

    from traceprobe.record import devices, registry, runner, workloads
    from traceprobe.record.registry import Schedule

    spec = registry.get(args.workload)
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if args.device == "cuda":
        dev = torch.device("cuda", local_rank)
        torch.cuda.set_device(dev)
        dist.init_process_group("nccl")
    else:
        dev = torch.device("cpu")
        dist.init_process_group("gloo")
    try:
        rank, world = dist.get_rank(), dist.get_world_size()
        plan = devices.Plan([f"cuda:{rank}"], [dev])
        sizes = workloads.sizes_for(spec, args.scale)
        prepared = workloads.load(spec).prepare(
            workloads.Context(args.variant, plan, sizes, rank=rank, world=world)
        )
        schedule = Schedule(args.wait, args.warmup, args.active, args.repeat)
        options = runner.Options(
            device=args.device,
            scale=args.scale,
            schedule=schedule,
            record_shapes=args.record_shapes,
            profile_memory=args.profile_memory,
            with_stack=args.with_stack,
            plain_steps=args.plain_steps,
        )
        dist.barrier(device_ids=[local_rank]) if dev.type == "cuda" else dist.barrier()
        worker = runner.worker_name(rank)
        timing = runner.measure(prepared.step, plan.cuda, schedule, options, args.out, worker)
        correct, detail = prepared.check() if prepared.check else (None, None)
        result = {
            "rank": rank,
            "world_size": world,
            "worker": worker,
            "device": str(dev),
            "pid": os.getpid(),
            "sizes": asdict(sizes),
            "correct": correct,
            "correct_detail": detail,
            "facts": prepared.facts,
            "profiler": runner.profiler_info(schedule, spec, options, bool(plan.cuda)),
            "timing": timing,
        }
        tmp = args.out / f"._rank{rank}.json.tmp"
        tmp.write_text(json.dumps(result, indent=2, default=str))
        os.replace(tmp, args.out / f"_rank{rank}.json")
        print(f"rank {rank}: results written", file=sys.stderr, flush=True)
    finally:
        dist.destroy_process_group()
    print(f"rank {rank}: process group destroyed", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    code = main()
    # Leave without interpreter teardown: with gloo and the profiler, a C++ thread still
    # joinable at exit sometimes aborts the process ("terminate called without an active
    # exception", SIGABRT) after everything was written. Nothing is left to clean up.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
