"""The MLP of :mod:`.mlp` under DistributedDataParallel, one process per GPU.

Not run in-process: the runner launches ``torchrun`` (see :mod:`traceprobe.record.launch`)
and each rank runs :mod:`traceprobe.record.ddp_worker`, which calls :func:`prepare` with
its rank. NCCL on GPUs, gloo on the CPU. A small ``bucket_cap_mb`` splits the gradients
into several buckets, so the all-reduce of the last layer's gradients can overlap the
backward pass of the first. After profiling, ranks compare parameters (all-reduce of
max and min): DDP's invariant is that every rank holds the same ones -> ``correct``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from traceprobe.record.workloads import Context, Prepared, mlp


@dataclass(frozen=True)
class Sizes(mlp.Sizes):
    bucket_cap_mb: float = 4.0  # per-rank batch is batch / world size

    @classmethod
    def full(cls) -> Sizes:
        return cls(batch=8192, d_in=2048, hidden=4096, classes=1024, bucket_cap_mb=4.0)

    @classmethod
    def small(cls) -> Sizes:
        return cls(batch=256, d_in=128, hidden=256, classes=10, bucket_cap_mb=0.05)


def prepare(ctx: Context) -> Prepared:
    (dev,) = ctx.plan.devices
    s: Sizes = ctx.sizes
    torch.manual_seed(0)  # same initial model on every rank (DDP broadcasts rank 0's anyway)
    model = mlp.make_model(s).to(dev)
    ddp = DistributedDataParallel(
        model,
        device_ids=[dev.index] if dev.type == "cuda" else None,
        bucket_cap_mb=s.bucket_cap_mb,
    )
    opt = torch.optim.SGD(ddp.parameters(), lr=s.lr)
    torch.manual_seed(1 + ctx.rank)  # each rank its own shard
    x, y = (t.to(dev) for t in mlp.make_batch(s, s.batch // ctx.world, pin=False))

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(ddp(x), y).backward()
        opt.step()

    def check() -> tuple[bool, str]:
        flat = torch.cat([p.detach().flatten() for p in model.parameters()])
        hi, lo = flat.clone(), flat.clone()
        dist.all_reduce(hi, op=dist.ReduceOp.MAX)
        dist.all_reduce(lo, op=dist.ReduceOp.MIN)
        if torch.equal(hi, lo):
            return True, f"all {ctx.world} ranks hold identical parameters"
        return False, "ranks' parameters differ"

    facts = {"backend": dist.get_backend(), "world_size": ctx.world}
    return Prepared(step, check=check, facts=facts)
