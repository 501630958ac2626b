"""Exercise 1: do the 50 independent matmuls of run(x) run concurrently on one stream?

``one-stream`` is run(x); ``single`` is one matmul, the notes' baseline. The notes
compared one matmul with fifty and read "less than 50x" as concurrency; the trace
answers directly: kernels of one stream never overlap (stream self-overlap 0), and
the per-kernel time is the same in both variants. ``many-streams`` spreads the same
matmuls over four side streams (the measured answer to ``traceprobe whatif
--scenario spread:gemm=4`` on ``one-stream``).
"""

from __future__ import annotations

import torch

from traceprobe.record.workloads import (
    Context,
    MatmulSizes,
    Prepared,
    has_streams,
    run,
    seeded_rand,
)

Sizes = MatmulSizes  # reps: matmuls in one-stream (single always issues 1)


STREAMS = 4  # the many-streams variant's side streams


def _many_streams(x: torch.Tensor, reps: int) -> Prepared:
    """run(x)'s matmuls round-robin over STREAMS side streams that fork from and join back
    into the current stream. Each 4000x4000 matmul fills the GPU, so little is expected."""
    if not has_streams(x.device):
        def in_order() -> None:
            run(x, reps)

        return Prepared(in_order, facts={"matmuls_per_step": reps, "streams": 1},
                        notes=["No CUDA streams on the CPU: the many-streams variant ran in "
                               "order on one device."])
    current = torch.cuda.current_stream(x.device)
    streams = [torch.cuda.Stream(x.device) for _ in range(STREAMS)]

    def step() -> None:
        for st in streams:
            st.wait_stream(current)
        out = []
        for i in range(reps):
            st = streams[i % STREAMS]
            with torch.cuda.stream(st):
                out.append(x.mm(x))
        for st in streams:
            current.wait_stream(st)
        # each output was allocated on the stream that computed it and is freed there
        del out

    return Prepared(step, facts={"matmuls_per_step": reps, "streams": STREAMS})


def prepare(ctx: Context) -> Prepared:
    (dev,) = ctx.plan.devices
    s: Sizes = ctx.sizes
    (x,) = seeded_rand(s.n, dev)
    if ctx.variant == "many-streams":
        return _many_streams(x, s.reps)
    reps = s.reps if ctx.variant == "one-stream" else 1

    def step() -> None:
        run(x, reps)

    return Prepared(step, facts={"matmuls_per_step": reps})
