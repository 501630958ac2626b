"""A tiny model trained for many steps on the GPU (the CPU when there is none): the smallest
real training loop, so that a recording of hundreds of steps stays small
(scripts/gpu/many_steps.sh profiles it for ``traceprobe analyze --step all``).

    python scripts/gpu/tiny_train.py --steps 300
"""

import argparse

import torch
from torch import nn


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    args = p.parse_args()
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    x = torch.randn(256, 64, device=device)
    y = (x[:, :4].sum(dim=1) > 0).long()
    model = nn.Sequential(nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    for step in range(args.steps):
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        if step % 100 == 99:
            print(f"step {step + 1}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
