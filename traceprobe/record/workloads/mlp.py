"""The section's figure: a two-layer MLP trained on a CPU and two GPUs, by hand.

* ``single``: the whole batch on GPU 0; forward, backward, SGD update.
* ``data-parallel``: the batch (pinned on the host) is split in two, each half copied to
  its GPU; forward and backward on each replica; gradients gathered onto GPU 0 and summed;
  the update on GPU 0; the new parameters broadcast back to GPU 1. The per-replica loss is
  scaled by its share of the batch, so the summed gradient is the full batch's.

``data-parallel`` checks itself after profiling: from one initial state, one hand-made
data-parallel step and one single-device step on the whole batch must give the same
parameters (allclose, rtol 1e-4, atol 1e-6).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from traceprobe.record.workloads import Context, Prepared


@dataclass(frozen=True)
class Sizes:
    batch: int
    d_in: int
    hidden: int
    classes: int
    lr: float = 0.1

    @classmethod
    def full(cls) -> Sizes:
        return cls(batch=8192, d_in=2048, hidden=4096, classes=1024)

    @classmethod
    def small(cls) -> Sizes:
        return cls(batch=256, d_in=128, hidden=256, classes=10)


def make_model(s: Sizes) -> nn.Module:
    return nn.Sequential(nn.Linear(s.d_in, s.hidden), nn.ReLU(), nn.Linear(s.hidden, s.classes))


def make_batch(s: Sizes, batch: int, pin: bool) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(batch, s.d_in)
    y = torch.randint(0, s.classes, (batch,))
    return (x.pin_memory(), y.pin_memory()) if pin else (x, y)


def sgd_step(model: nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float) -> None:
    model.zero_grad(set_to_none=True)
    F.cross_entropy(model(x), y).backward()
    with torch.no_grad():
        for p in model.parameters():
            assert p.grad is not None
            p.add_(p.grad, alpha=-lr)


def data_parallel_step(
    replicas: list[nn.Module], x: torch.Tensor, y: torch.Tensor, lr: float
) -> None:
    devs = [next(m.parameters()).device for m in replicas]
    total = x.shape[0]
    for m, d, xs, ys in zip(
        replicas, devs, x.chunk(len(replicas)), y.chunk(len(replicas)), strict=True
    ):
        m.zero_grad(set_to_none=True)
        out = m(xs.to(d, non_blocking=True))
        loss = F.cross_entropy(out, ys.to(d, non_blocking=True)) * (xs.shape[0] / total)
        loss.backward()  # returns once issued; the next replica's work overlaps on its GPU
    with torch.no_grad():
        params = [list(m.parameters()) for m in replicas]
        for group in zip(*params, strict=True):
            grad = group[0].grad
            for p in group[1:]:  # gather onto the main device and sum
                grad = grad + p.grad.to(devs[0], non_blocking=True)
            group[0].add_(grad, alpha=-lr)
            for p in group[1:]:  # broadcast the updated parameter
                p.copy_(group[0], non_blocking=True)


def prepare(ctx: Context) -> Prepared:
    host, d0, d1 = ctx.plan.devices
    s: Sizes = ctx.sizes
    torch.manual_seed(0)
    x, y = make_batch(s, s.batch, pin=d0.type == "cuda")
    model = make_model(s).to(d0)
    initial = copy.deepcopy(model.state_dict())

    if ctx.variant == "single":

        def single() -> None:
            sgd_step(model, x.to(d0, non_blocking=True), y.to(d0, non_blocking=True), s.lr)

        return Prepared(single, facts={"replicas": 1}, devices=[host, d0])

    replicas = [model, copy.deepcopy(model).to(d1)]

    def step() -> None:
        data_parallel_step(replicas, x, y, s.lr)

    def check() -> tuple[bool, str]:
        for m in replicas:
            m.load_state_dict(initial)
        reference = make_model(s).to(d0)
        reference.load_state_dict(initial)
        data_parallel_step(replicas, x, y, s.lr)
        sgd_step(reference, x.to(d0), y.to(d0), s.lr)
        for m in replicas:
            for p, q in zip(m.parameters(), reference.parameters(), strict=True):
                if not torch.allclose(p.to(d0), q, rtol=1e-4, atol=1e-6):
                    return False, f"replica on {p.device} differs from a single-device step"
        return True, "one data-parallel step equals one single-device step on the whole batch"

    return Prepared(step, check=check, facts={"replicas": 2})
