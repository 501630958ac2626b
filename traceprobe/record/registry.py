"""The experiments, as data: name, variants, the devices each wants, the claim it tests.

This module does not import torch, so ``traceprobe record --list`` and argument
checking work without it. The code of workload ``NAME`` lives in
``traceprobe.record.workloads.<NAME with - as _>`` (see :mod:`.workloads` for the
interface each module implements).

Devices are named by *role*: ``"cuda:0"``, ``"cuda:1"`` for the first and second GPU
the experiment wants, ``"cpu"`` for the host. :mod:`.devices` maps roles onto what the
machine has and writes the note when it had to make do.
"""

from __future__ import annotations

from dataclasses import dataclass

from traceprobe.errors import UsageError


@dataclass(frozen=True)
class Schedule:
    """Arguments of ``torch.profiler.schedule``; ``steps`` is how many steps it takes."""

    wait: int = 0
    warmup: int = 1
    active: int = 1
    repeat: int = 1

    @property
    def steps(self) -> int:
        return self.repeat * (self.wait + self.warmup + self.active)

    def check(self) -> None:
        if self.wait < 0 or self.warmup < 0:
            raise UsageError("--wait and --warmup must be 0 or more")
        if self.active < 1 or self.repeat < 1:
            raise UsageError("--active and --repeat must be 1 or more")


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    variants: tuple[str, ...]
    wants: tuple[str, ...]  # device roles, e.g. ("cuda:0", "cuda:1")
    claim: str
    # A schedule the experiment itself prescribes (ignores --wait/--warmup/...).
    schedule: Schedule | None = None
    # Launched through torchrun, one process (and one trace) per rank.
    distributed: bool = False
    # Claims of single variants that test something else than ``claim`` (variant, claim).
    variant_claims: tuple[tuple[str, str], ...] = ()

    def claim_of(self, variant: str) -> str:
        return dict(self.variant_claims).get(variant, self.claim)

    @property
    def module(self) -> str:
        return "traceprobe.record.workloads." + self.name.replace("-", "_")


WORKLOADS: tuple[WorkloadSpec, ...] = (
    WorkloadSpec(
        "two-devices",
        ("sequential", "parallel"),
        ("cuda:0", "cuda:1"),
        "run(x) on GPU 0 and GPU 1 computes on both devices at the same time "
        "when nothing synchronizes between them.",
    ),
    WorkloadSpec(
        "copy",
        ("blocking", "nonblocking-same-stream", "side-stream"),
        ("cuda:0", "cpu"),
        "Copying each result to the host hides under the compute of the next ones.",
    ),
    WorkloadSpec(
        "independent-ops",
        ("one-stream", "single", "many-streams"),
        ("cuda:0",),
        "The 50 independent matmuls of run(x) on one stream run concurrently (exercise 1).",
        variant_claims=(
            ("many-streams", "Spreading the 50 matmuls over 4 streams gains little: each "
             "matmul fills the GPU (what `whatif --scenario spread:gemm=4` predicts)."),
        ),
    ),
    WorkloadSpec(
        "small-ops",
        ("loop", "run", "cuda-graph"),
        ("cpu", "cuda:0"),
        "For 10x10 matmuls run() is faster than a plain loop, so 'auto-parallelism' "
        "helps small work even on one device (exercise 2).",
        variant_claims=(
            ("cuda-graph", "Capturing the loop's GPU part in a CUDA graph removes its launch "
             "overhead: the step is clearly faster than the loop's (what `whatif --scenario "
             "no-launch-overhead` predicts)."),
        ),
    ),
    WorkloadSpec(
        "cpu-gpu",
        ("serial", "overlapped"),
        ("cpu", "cuda:0"),
        "The CPU computes and copies while the GPU computes (exercise 3).",
    ),
    WorkloadSpec(
        "scheduled",
        ("both-devices",),
        ("cuda:0", "cuda:1"),
        "A profiler schedule (wait=1, warmup=1, active=3) shows both devices busy "
        "in every active step (exercise 4).",
        schedule=Schedule(wait=1, warmup=1, active=3, repeat=1),
    ),
    WorkloadSpec(
        "dag",
        ("serial", "two-streams"),
        ("cuda:0",),
        "Independent branches of a DAG on two streams (event waits) overlap and give "
        "the same results as one stream (exercise 5).",
    ),
    WorkloadSpec(
        "mlp",
        ("single", "data-parallel"),
        ("cpu", "cuda:0", "cuda:1"),
        "Hand-made data parallelism of a two-layer MLP (CPU feeds two GPUs) computes "
        "on both GPUs at once and gives the same update as one device.",
    ),
    WorkloadSpec(
        "ddp",
        ("train",),
        ("cuda:0", "cuda:1"),
        "DistributedDataParallel overlaps the gradient all-reduce with the backward pass.",
        distributed=True,
    ),
)

_BY_NAME = {w.name: w for w in WORKLOADS}


def names() -> list[str]:
    return [w.name for w in WORKLOADS]


def get(name: str) -> WorkloadSpec:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise UsageError(unknown_message(name)) from None


def unknown_message(name: str) -> str:
    return f"Unknown workload {name!r}; valid workloads: {', '.join(names())}"


def select(selectors: list[str] | tuple[str, ...]) -> list[tuple[WorkloadSpec, str]]:
    """``["copy", "dag/serial"]`` -> ``[(spec, variant), ...]`` in registry order.

    No selectors means everything. ``NAME/VARIANT`` picks one variant.
    """
    if not selectors:
        return [(w, v) for w in WORKLOADS for v in w.variants]
    wanted: set[tuple[str, str]] = set()
    for sel in selectors:
        name, _, variant = sel.partition("/")
        spec = get(name)
        if variant and variant not in spec.variants:
            raise UsageError(
                f"Workload {name!r} has no variant {variant!r}; "
                f"its variants: {', '.join(spec.variants)}"
            )
        wanted.update((name, v) for v in ([variant] if variant else spec.variants))
    return [(w, v) for w in WORKLOADS for v in w.variants if (w.name, v) in wanted]
