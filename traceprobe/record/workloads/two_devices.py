"""run(x) on two GPUs, with and without a synchronize between them (D2L §12.3.1).

``sequential`` waits for GPU 0 before issuing GPU 1's work (the notes' two timings);
``parallel`` issues both and lets the runner synchronize at the end. The claim holds
when the trace shows both devices busy at the same time in ``parallel`` and not in
``sequential``.
"""

from __future__ import annotations

import torch

from traceprobe.record.workloads import Context, MatmulSizes, Prepared, run, seeded_rand

Sizes = MatmulSizes


def prepare(ctx: Context) -> Prepared:
    d0, d1 = ctx.plan.devices
    s: Sizes = ctx.sizes
    x0, x1 = seeded_rand(s.n, d0, d1)

    def sequential() -> None:
        run(x0, s.reps)
        if d0.type == "cuda":
            torch.cuda.synchronize(d0)
        run(x1, s.reps)

    def parallel() -> None:
        run(x0, s.reps)
        run(x1, s.reps)

    step = {"sequential": sequential, "parallel": parallel}[ctx.variant]
    notes = []
    if d0 == d1:
        notes.append(f"Both halves ran on {d0}, so the variants cannot differ in overlap.")
    return Prepared(step, notes=notes)
