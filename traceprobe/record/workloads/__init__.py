"""One module per experiment, all behind one small interface.

Each module ``traceprobe.record.workloads.<name>`` defines::

    @dataclass(frozen=True)
    class Sizes: ...                     # with classmethods small() (CPU) and full() (GPU)

    def prepare(ctx: Context) -> Prepared: ...

``prepare`` allocates inputs and returns ``Prepared.step``: a function that *issues* one
step of the variant (one profiler step). It does not need to synchronize at the end:
the runner records CUDA events, then synchronizes every GPU the plan uses, after each
call. Side streams must be joined back into each device's current stream before
``step`` returns, so that the events and the synchronize cover them.
``Prepared.check``, when there is one, runs after the profiled steps and says whether
the results are right; it becomes ``correct`` in the metadata.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from traceprobe.record.devices import Plan
from traceprobe.record.registry import WorkloadSpec


@dataclass
class Context:
    variant: str
    plan: Plan
    sizes: Any
    rank: int = 0
    world: int = 1


@dataclass
class Prepared:
    step: Callable[[], None]
    # () -> (correct, detail); None when the variant has nothing to check.
    check: Callable[[], tuple[bool, str]] | None = None
    # Said on stdout and stored in the metadata note, beside the device plan's.
    notes: list[str] = field(default_factory=list)
    # Extra facts for the metadata (e.g. whether a copy's destination was pinned).
    facts: dict[str, Any] = field(default_factory=dict)
    # The devices the variant actually uses, when fewer than the plan's (else None).
    devices: list[torch.device] | None = None


def load(spec: WorkloadSpec) -> Any:
    return importlib.import_module(spec.module)


def sizes_for(spec: WorkloadSpec, scale: str) -> Any:
    sizes = load(spec).Sizes
    return sizes.full() if scale == "full" else sizes.small()


@dataclass(frozen=True)
class MatmulSizes:
    """The notes' sizes: ``x`` is n x n float32, ``reps`` matmuls per device per step."""

    n: int
    reps: int

    @classmethod
    def full(cls) -> MatmulSizes:
        return cls(n=4000, reps=50)

    @classmethod
    def small(cls) -> MatmulSizes:
        return cls(n=256, reps=10)


def seeded_rand(n: int, *devices: torch.device) -> list[torch.Tensor]:
    """Seed torch with 0, then one ``torch.rand(n, n)`` per device, in order."""
    torch.manual_seed(0)
    return [torch.rand(n, n, device=d) for d in devices]


def run(x: torch.Tensor, reps: int) -> list[torch.Tensor]:
    """The notes' ``run``: ``reps`` independent ``x.mm(x)`` (50 in the book)."""
    return [x.mm(x) for _ in range(reps)]


def has_streams(device: torch.device) -> bool:
    return device.type == "cuda"
