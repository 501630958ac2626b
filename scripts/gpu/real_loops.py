"""Real training loops, written as users write them, in pairs that make one change each.

    python scripts/gpu/real_loops.py VARIANT OUTDIR [--quick]

Each variant is a pytorch/examples-style loop (torchvision FakeData, no download). One process
per variant does, in order:

1. **unprofiled timing**: warm-up steps, then ``BLOCKS`` blocks of ``BLOCK`` steps, each block
   timed between two ``torch.cuda.synchronize()`` calls; the figure is the median block's
   ms/step (``timing.json``: every block, the median, the device, torch's version);
2. **the host's unprofiled time per step**: ``HOST_REPS`` times, a ``synchronize()``, one
   step, the time the host took to return from it (its *issue time*: the GPU, idle at the
   start, does not hold the host back unless the step itself waits for it), then another
   ``synchronize()``; the median (``timing.json``'s ``host_ms_per_step_median``, and in the
   trace as the top-level key ``traceprobeUnprofiled``, which ``traceprobe whatif``'s
   ``no-profiler`` calibrates on);
3. **a profiled run** of the same loop under ``torch.profiler`` with a schedule
   (wait 1, warm-up 2, active 3 steps), ``record_shapes=True``, written gzipped by
   ``tensorboard_trace_handler`` into ``OUTDIR/VARIANT/`` (``*-modules`` variants also record
   ``with_stack``/``with_modules`` for the module view);
4. **FLOPs per op** of one training step counted by ``torch.utils.flop_counter.FlopCounterMode``
   (``flops.json``: aten op -> FLOPs of one step), an independent count for traceprobe's
   formulas (issue 21).

The pairs (slow variant -> the variant that makes one change) are in ``PAIRS`` below; the
what-if table (scripts/whatif_table.py) predicts the second from the first's trace alone.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule, tensorboard_trace_handler

WAIT, WARMUP, ACTIVE = 1, 2, 3
WARM_STEPS, BLOCK, BLOCKS = 10, 10, 5
HOST_REPS = 15  # host issue time: one step between two synchronize() calls, this many times
# the trace's top-level key for the unprofiled measurements (traceprobe's no-profiler reads it)
META_KEY = "traceprobeUnprofiled"

# (slow variant, scenario(s) a user would ask about, the variant that makes the change)
PAIRS = (
    ("mnist-workers1", "dataloader:workers=8", "mnist-workers8"),
    ("transformer-fp32", "precision:tf32", "transformer-tf32"),
    ("transformer-fp32", "precision:bf16", "transformer-bf16"),
    ("transformer-tf32-item", "no-host-sync", "transformer-tf32"),
    ("mlp-eager", "cuda-graph", "mlp-graph"),
    ("resnet-fp32", "precision:tf32", "resnet-tf32"),
    ("resnet-fp32", "precision:bf16", "resnet-bf16"),
)


# --- mnist (pytorch/examples/mnist/main.py's Net, Adadelta, its DataLoader arguments) --------
class MnistNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def mnist(workers: int, dev: torch.device, n_steps: int):
    from torchvision import datasets, transforms

    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    data = datasets.FakeData(size=64 * n_steps, image_size=(1, 28, 28), num_classes=10,
                             transform=tf)
    kw = {"batch_size": 64, "num_workers": workers, "pin_memory": True, "shuffle": True}
    loader = torch.utils.data.DataLoader(data, **kw)
    model = MnistNet().to(dev)
    opt = torch.optim.Adadelta(model.parameters(), lr=1.0)
    model.train()
    it = iter(loader)

    def step() -> None:
        x, y = next(it)
        x, y = x.to(dev), y.to(dev)
        opt.zero_grad()
        loss = F.nll_loss(model(x), y)
        loss.backward()
        opt.step()

    def one(x: torch.Tensor, y: torch.Tensor) -> None:
        opt.zero_grad()
        F.nll_loss(model(x), y).backward()
        opt.step()

    x0, y0 = next(iter(torch.utils.data.DataLoader(data, batch_size=64)))
    return step, lambda: one(x0.to(dev), y0.to(dev))


# --- a small language model: embedding, nn.TransformerEncoder (4 layers), AdamW ---------------
class TinyLM(nn.Module):
    def __init__(self, vocab: int = 8192, d: int = 768, layers: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 12, 4 * d, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d, vocab)

    def forward(self, tok: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.emb(tok)))


def transformer(precision: str, item: bool, dev: torch.device, quick: bool):
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    b, s = (4, 64) if quick else (32, 256)
    model = TinyLM(d=192 if quick else 768).to(dev)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator(device="cpu").manual_seed(0)
    batches = [torch.randint(0, 8192, (b, s + 1), generator=g).to(dev) for _ in range(8)]
    k = [0]
    amp = precision == "bf16"

    def step() -> None:
        tok = batches[k[0] % len(batches)]
        k[0] += 1
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            logits = model(tok[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tok[:, 1:].reshape(-1))
        if item and not torch.isfinite(loss).item():  # a user's mid-step check: a host sync
            raise FloatingPointError("loss is not finite")
        loss.backward()
        opt.step()

    return step, step


# --- a launch-bound MLP: 20 small layers, eager or captured whole as one CUDA graph -----------
def mlp(graph: bool, dev: torch.device, quick: bool):
    width, depth, b = (64, 4, 8) if quick else (512, 20, 64)
    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(width, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    data = [(torch.randn(b, width, device=dev), torch.randint(0, 10, (b,), device=dev))
            for _ in range(8)]
    k = [0]
    if not graph or dev.type != "cuda":

        def step() -> None:
            x, y = data[k[0] % len(data)]
            k[0] += 1
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()

        return step, step
    # whole-network capture, as torch.cuda.graphs' documentation shows it
    sx, sy = data[0][0].clone(), data[0][1].clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(sx), sy).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss_fn(model(sx), sy).backward()
        opt.step()

    def replay() -> None:
        x, y = data[k[0] % len(data)]
        k[0] += 1
        sx.copy_(x)
        sy.copy_(y)
        g.replay()

    def eager_once() -> None:
        opt.zero_grad(set_to_none=False)
        loss_fn(model(sx), sy).backward()

    return replay, eager_once


# --- torchvision's resnet18 on 64x64 images, SGD: convolutions (cuDNN) ----------------------
def resnet(precision: str, dev: torch.device, quick: bool):
    import torchvision

    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.allow_tf32 = precision == "tf32"
    torch.backends.cudnn.benchmark = True
    b, hw = (4, 32) if quick else (128, 64)
    model = torchvision.models.resnet18(num_classes=10).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
    x = torch.randn(b, 3, hw, hw, device=dev)
    y = torch.randint(0, 10, (b,), device=dev)
    amp = precision == "bf16"

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    return step, step


def build(variant: str, dev: torch.device, quick: bool, n_steps: int):
    name, _, rest = variant.partition("-")
    if name == "mnist":
        return mnist(int(rest.removeprefix("workers")), dev, n_steps)
    if name == "transformer":
        prec = rest.split("-")[0]
        return transformer(prec, rest.endswith("-item"), dev, quick)
    if name == "mlp":
        return mlp(rest == "graph", dev, quick)
    if name == "resnet":
        return resnet(rest.split("-")[0], dev, quick)
    raise SystemExit(f"real_loops.py: unknown variant {variant!r}")


VARIANTS = (
    "mnist-workers1", "mnist-workers8",
    "transformer-fp32", "transformer-tf32", "transformer-bf16", "transformer-tf32-item",
    "transformer-fp32-modules",
    "mlp-eager", "mlp-graph",
    "resnet-fp32", "resnet-tf32", "resnet-bf16",
)


def sync(dev: torch.device) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("variant", choices=VARIANTS)
    ap.add_argument("out")
    ap.add_argument("--quick", action="store_true", help="tiny sizes (a CPU smoke test)")
    a = ap.parse_args()
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.manual_seed(0)
    modules = a.variant.endswith("-modules")
    variant = a.variant.removesuffix("-modules")
    profiled = WAIT + WARMUP + ACTIVE
    blocks = 2 if a.quick else BLOCKS
    n_steps = WARM_STEPS + BLOCK * blocks + HOST_REPS + profiled + 4
    step, once = build(variant, dev, a.quick, n_steps)
    out = Path(a.out) / a.variant
    out.mkdir(parents=True, exist_ok=True)
    for _ in range(WARM_STEPS):
        step()
    sync(dev)
    per_step: list[float] = []
    if not modules:  # timing of the loop as it runs unprofiled
        for _ in range(blocks):
            sync(dev)
            t0 = time.perf_counter()
            for _ in range(BLOCK):
                step()
            sync(dev)
            per_step.append((time.perf_counter() - t0) * 1e3 / BLOCK)
    host: list[float] = []
    if not modules:  # the host's issue time of one step, the GPU idle at its start
        for _ in range(HOST_REPS if not a.quick else 3):
            sync(dev)
            t0 = time.perf_counter()
            step()
            host.append((time.perf_counter() - t0) * 1e3)
            sync(dev)
    unprofiled = {
        "step_ms": statistics.median(per_step) if per_step else None,
        "host_ms": statistics.median(host) if host else None,
        "how": "step_ms: median of blocks of steps between synchronize(); host_ms: median "
               "time to return from one step begun on an idle GPU (the host's issue time)",
    }
    act = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if dev.type == "cuda" else [])
    with profile(
        activities=act,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        on_trace_ready=tensorboard_trace_handler(str(out), worker_name="vm", use_gzip=True),
        record_shapes=True,
        with_stack=modules,
        with_modules=modules,
    ) as prof:
        for i in range(profiled):
            step()
            if i >= WAIT and unprofiled["host_ms"] is not None:  # a recording cycle is open
                prof.add_metadata_json(META_KEY, json.dumps(unprofiled))
            prof.step()
    sync(dev)
    info = {
        "variant": a.variant,
        "ms_per_step_median": statistics.median(per_step) if per_step else None,
        "ms_per_step_blocks": per_step,
        "block_steps": BLOCK,
        "host_ms_per_step_median": unprofiled["host_ms"],
        "host_ms_per_step": host,
        "timing": "median over blocks of BLOCK steps, each block between two synchronize()",
        "device": torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu",
        "torch": torch.__version__,
        "quick": a.quick,
    }
    (out / "timing.json").write_text(json.dumps(info, indent=1) + "\n")
    if variant.startswith(("transformer", "resnet", "mnist")) and not variant.endswith("-item"):
        from torch.utils.flop_counter import FlopCounterMode

        fc = FlopCounterMode(display=False)
        with fc:
            once()
        sync(dev)
        counts = {str(k): int(v) for k, v in fc.get_flop_counts().get("Global", {}).items()}
        (out / "flops.json").write_text(json.dumps(
            {"what": "FLOPs of one training step, FlopCounterMode, per aten op", "ops": counts},
            indent=1) + "\n")
    print(f"{a.variant}: {info['ms_per_step_median']} ms/step (median); trace in {out}",
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
