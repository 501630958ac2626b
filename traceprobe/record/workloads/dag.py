"""Exercise 5: a DAG of dependent tasks, on one stream and on two.

    A = x @ x.T
    B = A * sum(A)          D = mean(A**2)        (B and D depend only on A)
    C = cos(B) + sin(B)     E = norm of B's rows   (both depend on B)
    F = softmax(E)

* ``serial``: everything in order on the current stream.
* ``two-streams``: A on the current stream; B, C, E, F on stream 1 and D on stream 2,
  each waiting for A through ``wait_stream`` (an event), and the current stream waiting
  for both at the end. The notes used a device-wide ``torch.cuda.synchronize()``
  between levels instead, which is correct but serialises everything it should overlap.

Both variants compare their last results with a serial run made before profiling
(``torch.allclose``, rtol 1e-4, atol 1e-6) -> ``correct`` in the metadata. ``x`` is
``randn / n`` so that B stays O(1): with the notes' unscaled ``randn``, B is ~1e9,
where float32 cos/sin are noise and allclose only tests bit-identity.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from traceprobe.record.workloads import Context, Prepared, has_streams

Outputs = tuple[torch.Tensor, torch.Tensor, torch.Tensor]


@dataclass(frozen=True)
class Sizes:
    n: int
    reps: int  # DAGs per step

    @classmethod
    def full(cls) -> Sizes:
        return cls(n=4000, reps=4)

    @classmethod
    def small(cls) -> Sizes:
        return cls(n=256, reps=4)


def branches_b(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    b = a * a.sum()
    c = b.cos() + b.sin()
    f = b.norm(dim=1).softmax(dim=0)
    return c, f


def branch_d(a: torch.Tensor) -> torch.Tensor:
    return a.pow(2).mean()


def serial(x: torch.Tensor) -> Outputs:
    a = x @ x.T
    c, f = branches_b(a)
    d = branch_d(a)
    return c, d, f


def two_streams(x: torch.Tensor, s1: torch.cuda.Stream, s2: torch.cuda.Stream) -> Outputs:
    current = torch.cuda.current_stream(x.device)
    a = x @ x.T
    s1.wait_stream(current)
    s2.wait_stream(current)
    with torch.cuda.stream(s1):
        a.record_stream(s1)
        c, f = branches_b(a)
    with torch.cuda.stream(s2):
        a.record_stream(s2)
        d = branch_d(a)
    current.wait_stream(s1)
    current.wait_stream(s2)
    return c, d, f


def prepare(ctx: Context) -> Prepared:
    (dev,) = ctx.plan.devices
    s: Sizes = ctx.sizes
    torch.manual_seed(0)
    x = torch.randn(s.n, s.n, device=dev) / s.n
    reference = serial(x)
    last: list[Outputs] = []
    notes: list[str] = []
    streams = None
    if ctx.variant == "two-streams":
        if has_streams(dev):
            streams = (torch.cuda.Stream(dev), torch.cuda.Stream(dev))
        else:
            notes.append("No CUDA streams on the CPU: the two-streams variant ran in order.")

    def step() -> None:
        out = reference
        for _ in range(s.reps):
            out = two_streams(x, *streams) if streams else serial(x)
        last[:] = [out]

    def check() -> tuple[bool, str]:
        names = ("C", "D", "F")
        bad = [
            n
            for n, got, want in zip(names, last[0], reference, strict=True)
            if not torch.allclose(got, want, rtol=1e-4, atol=1e-6)
        ]
        if bad:
            return False, f"{', '.join(bad)} differ from the serial results"
        return True, "C, D and F match the serial results (allclose rtol=1e-4, atol=1e-6)"

    return Prepared(step, check=check, notes=notes, facts={"streams": 2 if streams else 1})
