"""Train a small conv-net on one GPU (the CPU when there is none): an unmodified script.

Batches come from a DataLoader of pinned CPU tensors and are copied with
``non_blocking=True``, as most image-training scripts do.

    python examples/convnet_gpu.py --steps 30
    traceprobe profile -- examples/convnet_gpu.py --steps 30
"""

import argparse

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def model_for(channels: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
        nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(channels, 2 * channels, 3, padding=1), nn.BatchNorm2d(2 * channels), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2 * channels, 10),
    )


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--batch", type=int, default=None, help="default: 128 on a GPU, 16 on the CPU")
    p.add_argument("--size", type=int, default=None, help="image side; 64 on a GPU, 16 on the CPU")
    args = p.parse_args()

    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    batch = args.batch or (128 if cuda else 16)
    size = args.size or (64 if cuda else 16)
    channels = 64 if cuda else 8
    torch.manual_seed(0)
    images = torch.randn(batch * 8, 3, size, size)
    labels = torch.randint(0, 10, (batch * 8,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=batch, shuffle=True,
                        pin_memory=cuda, drop_last=True)
    model = model_for(channels).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    print(f"training on {device}, batch {batch}, {size}x{size} images")

    step = 0
    while step < args.steps:
        for xb, yb in loader:
            xb = xb.to(device, non_blocking=True)
            yb = yb.to(device, non_blocking=True)
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
