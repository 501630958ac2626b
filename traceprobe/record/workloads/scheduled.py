"""Exercise 4: the notes' profiler run, with its own schedule.

``schedule(wait=1, warmup=1, active=3)`` over 5 steps (fixed by the registry, whatever
the command line says); each step runs run(x) on both devices, then the runner
synchronizes and calls ``prof.step()``. The three active steps are in the trace as
``ProfilerStep#2..4``; per-step figures come from the analyzer (``--step all``).
"""

from __future__ import annotations

from traceprobe.record.workloads import Context, MatmulSizes, Prepared, run, seeded_rand

Sizes = MatmulSizes


def prepare(ctx: Context) -> Prepared:
    d0, d1 = ctx.plan.devices
    s: Sizes = ctx.sizes
    x0, x1 = seeded_rand(s.n, d0, d1)

    def step() -> None:
        run(x0, s.reps)
        run(x1, s.reps)

    return Prepared(step)
