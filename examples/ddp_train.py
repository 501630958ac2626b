"""Data-parallel training with DistributedDataParallel: NCCL on GPUs, gloo on the CPU.

An unmodified script: run it with torchrun, or alone (one rank) with plain python.

    torchrun --nproc-per-node 2 examples/ddp_train.py --steps 20
    python examples/ddp_train.py --steps 20
    traceprobe profile --nproc-per-node 2 -- examples/ddp_train.py --steps 20
"""

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--width", type=int, default=None, help="default: 2048 on GPUs, 128 on the CPU")
    args = p.parse_args()

    if "RANK" not in os.environ:  # plain `python ddp_train.py`: a world of one
        os.environ.update(RANK="0", LOCAL_RANK="0", WORLD_SIZE="1",
                          MASTER_ADDR="127.0.0.1", MASTER_PORT="29511")
    cuda = torch.cuda.is_available()
    local_rank = int(os.environ["LOCAL_RANK"])
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    width = args.width or (2048 if cuda else 128)

    torch.manual_seed(0)
    x = torch.randn(64 * 32, width)
    y = x[:, :1].clone()
    data = TensorDataset(x, y)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(data, batch_size=64, sampler=sampler, drop_last=True)
    model = nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(),
                          nn.Linear(width, 1)).to(device)
    ddp = DistributedDataParallel(model, device_ids=[local_rank] if cuda else None)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)

    step, epoch = 0, 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            xb, yb = xb.to(device, non_blocking=True), yb.to(device, non_blocking=True)
            opt.zero_grad(set_to_none=True)
            loss = nn.functional.mse_loss(ddp(xb), yb)
            loss.backward()
            opt.step()
            step += 1
            if rank == 0 and step % 10 == 0:
                print(f"step {step} loss {loss.item():.4f}")
            if step == args.steps:
                break
        epoch += 1
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
