"""Record a large, realistic training trace for the benchmark (needs a CUDA GPU).

A 12-layer nn.TransformerEncoder (width 512, 8 heads), batch 16x256, AdamW,
24 profiled steps with record_shapes=True, exported through on_trace_ready
(tensorboard_trace_handler, gzipped). The raw JSON is ~90-100 MB, gzipped ~6 MB.

    python3 scripts/record_transformer.py OUTDIR [--steps 24]
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()
    dev = torch.device("cuda:0")
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
    model = nn.TransformerEncoder(layer, args.layers).to(dev)
    head = nn.Linear(512, 512).to(dev)
    opt = torch.optim.AdamW(list(model.parameters()) + list(head.parameters()), lr=1e-4)
    x = torch.randn(16, 256, 512, device=dev)
    y = torch.randn(16, 256, 512, device=dev)

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.mse_loss(head(model(x)), y)
        loss.backward()
        opt.step()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=1, warmup=2, active=args.steps),
        on_trace_ready=tensorboard_trace_handler(
            args.out, worker_name="transformer", use_gzip=True
        ),
        record_shapes=True,
    ) as prof:
        for _ in range(args.steps + 3):
            step()
            prof.step()
    torch.cuda.synchronize()
    print(f"recorded {args.steps} steps in {time.perf_counter() - t0:.2f} s into {args.out}")


if __name__ == "__main__":
    main()
