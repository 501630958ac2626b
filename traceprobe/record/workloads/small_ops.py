"""Exercise 2: is 10x10 matmul work launch-bound, and does run() change anything?

Both variants issue the same 50 ``x.mm(x)`` per device, on the CPU and then on the GPU:
``loop`` as a plain for-loop, ``run`` through run(). Both are warmed up (the runner
does a step before timing), which the notes' first measurement was not: their
"0.0518 s vs 0.0005 s" was the first call paying for initialisation.

The notes' loop called ``x.matmul(x)``, which adds an ``aten::matmul`` dispatch layer
over ``aten::mm`` (several microseconds a call on the host): a difference in the op, not
in parallelism. Here both use ``mm`` so that only loop-vs-run differs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from traceprobe.record.workloads import Context, MatmulSizes, Prepared, run


@dataclass(frozen=True)
class Sizes(MatmulSizes):
    @classmethod
    def full(cls) -> Sizes:
        return cls(n=10, reps=50)

    @classmethod
    def small(cls) -> Sizes:
        return cls(n=10, reps=50)


def prepare(ctx: Context) -> Prepared:
    s: Sizes = ctx.sizes
    torch.manual_seed(0)
    xs = [torch.randn(s.n, s.n, device=d) for d in ctx.plan.devices]

    def loop() -> None:
        for x in xs:
            for _ in range(s.reps):
                _ = x.mm(x)

    def run_all() -> None:
        for x in xs:
            run(x, s.reps)

    step = {"loop": loop, "run": run_all}[ctx.variant]
    return Prepared(step, facts={"op": "aten::mm", "ops_per_device": s.reps})
