"""Train a small MLP on the CPU from a DataLoader: an ordinary, unmodified training script.

    python examples/mlp_cpu.py --steps 40
    traceprobe profile -- examples/mlp_cpu.py --steps 40
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--workers", type=int, default=0)
    args = p.parse_args()

    torch.manual_seed(0)
    x = torch.randn(4096, 128)
    y = (x[:, :8].sum(dim=1) > 0).long()
    loader = DataLoader(
        TensorDataset(x, y), batch_size=args.batch, shuffle=True, num_workers=args.workers
    )
    model = nn.Sequential(nn.Linear(128, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = nn.CrossEntropyLoss()

    step = 0
    while step < args.steps:
        for xb, yb in loader:
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            step += 1
            if step % 10 == 0:
                print(f"step {step} loss {loss.item():.4f}")
            if step == args.steps:
                break


if __name__ == "__main__":
    main()
