"""A small training loop whose GPU waits on a single-process DataLoader, profiled by hand.

What a PyTorch user writes, with nothing from traceprobe: a conv net, a map-style dataset whose
``__getitem__`` does real CPU work (the augmentation most loaders do), ``DataLoader(num_workers=0)``
so batches are made on the training thread, ``record_function`` regions around the forward, the
backward and the optimizer step, and ``torch.profiler.profile`` with a schedule writing a gzipped
Chrome trace through ``tensorboard_trace_handler``::

    python examples/dataloader_loop.py OUTDIR [--device cuda|cpu] [--steps N]

Then ``traceprobe analyze OUTDIR`` names the DataLoader as the main cause of GPU idle time and
shows the regions in the step-time breakdown (docs/FIGURES.md, "Step-time breakdown").
The fix it points at: ``DataLoader(num_workers=4, pin_memory=True)``.
"""

from __future__ import annotations

import argparse
import sys

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, Dataset

WAIT, WARMUP, ACTIVE = 1, 1, 3


class Noisy(Dataset[tuple[torch.Tensor, torch.Tensor]]):
    """Random 3x32x32 images with a per-item augmentation done on the CPU (the slow part)."""

    def __init__(self, n: int, work: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 3, 32, 32, generator=g)
        self.y = torch.randint(0, 10, (n,), generator=g)
        self.work = work

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = self.x[i]
        for _ in range(self.work):  # blur-like augmentation: small CPU ops per item
            x = 0.5 * x + 0.25 * (torch.roll(x, 1, dims=1) + torch.roll(x, 1, dims=2))
        return x, self.y[i]


def net() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(64, 10),
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("outdir")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--work", type=int, default=2, help="augmentation passes per item")
    a = p.parse_args(argv)
    torch.manual_seed(0)
    dev = torch.device(a.device)
    steps = WAIT + WARMUP + ACTIVE
    loader = DataLoader(Noisy(a.batch * steps, a.work), batch_size=a.batch, num_workers=0)
    model = net().to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    activities = [ProfilerActivity.CPU]
    if dev.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(
        activities=activities,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE),
        on_trace_ready=torch.profiler.tensorboard_trace_handler(a.outdir, use_gzip=True),
        record_shapes=True,
    ) as prof:
        for x, y in loader:  # the single-process DataLoader runs here, on this thread
            x, y = x.to(dev), y.to(dev)
            with record_function("forward"):
                loss = loss_fn(model(x), y)
            with record_function("backward"):
                loss.backward()
            with record_function("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
            prof.step()
    if dev.type == "cuda":
        torch.cuda.synchronize()
    print(f"loss {loss.item():.4f}; trace in {a.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
