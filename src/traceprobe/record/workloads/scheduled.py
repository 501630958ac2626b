"""Exercise 4: the notes' profiler run, with its own schedule.

``schedule(wait=1, warmup=1, active=3)`` over 5 steps (fixed by the registry, whatever
the command line says); each step runs run(x) on both devices, then the runner
synchronizes and calls ``prof.step()``. The three active steps are in the trace as
``ProfilerStep#2..4``; per-step figures come from the analyzer (``--step all``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from traceprobe.record.workloads import Context, Prepared, run


@dataclass(frozen=True)
class Sizes:
    n: int
    reps: int

    @classmethod
    def full(cls) -> Sizes:
        return cls(n=4000, reps=50)

    @classmethod
    def small(cls) -> Sizes:
        return cls(n=256, reps=10)


def prepare(ctx: Context) -> Prepared:
    d0, d1 = ctx.plan.devices
    s: Sizes = ctx.sizes
    torch.manual_seed(0)
    x0 = torch.rand(s.n, s.n, device=d0)
    x1 = torch.rand(s.n, s.n, device=d1)

    def step() -> None:
        run(x0, s.reps)
        run(x1, s.reps)

    return Prepared(step)
