"""Exercise 1: do the 50 independent matmuls of run(x) run concurrently on one stream?

``one-stream`` is run(x); ``single`` is one matmul, the notes' baseline. The notes
compared one matmul with fifty and read "less than 50x" as concurrency; the trace
answers directly: kernels of one stream never overlap (stream self-overlap 0), and
the per-kernel time is the same in both variants.
"""

from __future__ import annotations

from traceprobe.record.workloads import Context, MatmulSizes, Prepared, run, seeded_rand

Sizes = MatmulSizes  # reps: matmuls in one-stream (single always issues 1)


def prepare(ctx: Context) -> Prepared:
    (dev,) = ctx.plan.devices
    s: Sizes = ctx.sizes
    (x,) = seeded_rand(s.n, dev)
    reps = s.reps if ctx.variant == "one-stream" else 1

    def step() -> None:
        run(x, reps)

    return Prepared(step, facts={"matmuls_per_step": reps})
