"""Compute on a GPU, then copy every result to the host (D2L §12.3.2).

* ``blocking``: ``y.to('cpu')`` for each result; each call waits for the GPU.
* ``nonblocking-same-stream``: the notes' ``y.to('cpu', non_blocking=True)``. The copies
  go on the same stream as the matmuls, queued behind all 50 of them, so they cannot
  overlap that compute whatever the flag does; the flag only frees the host. (PyTorch's
  ``_to_copy`` gives a non-blocking device->CPU copy a pinned destination; the
  metadata's ``dest_pinned`` records what this run actually got.)
* ``side-stream``: after each matmul an event is recorded on the compute stream; a copy
  stream waits on it and copies the result into a preallocated pinned buffer with
  ``non_blocking=True``, so copy i can run while matmul i+1 computes.

On the CPU (fallback) there are no streams: every variant copies synchronously.
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

Sizes = MatmulSizes  # reps: results computed and copied per step


def compute_and_copy(
    x: torch.Tensor, bufs: list[torch.Tensor], copy_stream: torch.cuda.Stream | None
) -> list[torch.Tensor]:
    """One ``x.mm(x)`` per buffer, each copied into its buffer as soon as it is computed.

    On a GPU the copy of result i goes on ``copy_stream``, which waits on an event
    recorded after matmul i, so it can run while matmul i+1 computes; the current stream
    waits for the copy stream at the end. Without a copy stream (CPU) it copies inline.
    """
    ys = []
    if copy_stream is None:
        for buf in bufs:
            ys.append(x.mm(x))
            buf.copy_(ys[-1])
        return ys
    compute = torch.cuda.current_stream(x.device)
    for buf in bufs:
        y = x.mm(x)
        ys.append(y)
        done = torch.cuda.Event()
        done.record(compute)
        copy_stream.wait_event(done)
        with torch.cuda.stream(copy_stream):
            y.record_stream(copy_stream)  # the allocator must not reuse y before the copy
            buf.copy_(y, non_blocking=True)
    compute.wait_stream(copy_stream)  # join: the runner's end event then covers the copies
    return ys


def prepare(ctx: Context) -> Prepared:
    dev, _host = ctx.plan.devices
    s: Sizes = ctx.sizes
    (x,) = seeded_rand(s.n, dev)
    streams = has_streams(dev)
    last: dict[str, torch.Tensor] = {}
    facts: dict[str, object] = {}
    notes: list[str] = []

    def blocking() -> None:
        ys = run(x, s.reps)
        host = [y.to("cpu", copy=True) for y in ys]
        last.update(dev=ys[-1], host=host[-1])

    def nonblocking_same_stream() -> None:
        ys = run(x, s.reps)
        host = [y.to("cpu", non_blocking=True, copy=True) for y in ys]
        last.update(dev=ys[-1], host=host[-1])

    bufs: list[torch.Tensor] = []
    if ctx.variant == "side-stream":
        bufs = [torch.empty(s.n, s.n, pin_memory=streams) for _ in range(s.reps)]
        if not streams:
            notes.append("No CUDA streams on the CPU: the side-stream copies ran inline.")
    copy_stream = torch.cuda.Stream(dev) if streams and ctx.variant == "side-stream" else None

    def side_stream() -> None:
        ys = compute_and_copy(x, bufs, copy_stream)
        last.update(dev=ys[-1], host=bufs[-1])

    def check() -> tuple[bool, str]:
        host = last["host"]
        facts["dest_pinned"] = bool(streams and host.is_pinned())
        ok = torch.equal(host, last["dev"].cpu())
        return ok, "last host copy equals its device result" if ok else "host copy differs"

    step = {
        "blocking": blocking,
        "nonblocking-same-stream": nonblocking_same_stream,
        "side-stream": side_stream,
    }[ctx.variant]
    facts["copy_stream"] = copy_stream is not None
    return Prepared(step, check=check, notes=notes, facts=facts)
