"""Which devices an experiment runs on, and what it says when the machine has fewer.

An experiment wants device *roles* (``"cuda:0"``, ``"cuda:1"``, ``"cpu"``; see
:mod:`.registry`). :func:`plan` maps them onto the machine:

* ``cuda:K`` -> ``cuda:K`` when the machine has more than K GPUs, else ``cuda:0``
  when it has one, else ``cpu`` (the CPU plays every GPU);
* ``cpu`` -> ``cpu``.

Whenever a role lands on something else, the plan carries a one-line ``note`` that
the runner prints and stores in the metadata: a workload is never skipped silently,
it runs on what is there and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from traceprobe.errors import RecordError


@dataclass(frozen=True)
class Machine:
    kind: str  # "cuda" or "cpu": where GPU roles go
    gpus: int  # GPUs usable (0 when kind is "cpu")

    @property
    def label(self) -> str:
        if self.kind == "cpu":
            return "no GPU (CPU only)"
        return f"{self.gpus} GPU" if self.gpus == 1 else f"{self.gpus} GPUs"


def resolve(mode: str) -> Machine:
    """``auto|cpu|cuda`` -> the machine to record on."""
    if mode not in ("auto", "cpu", "cuda"):
        raise RecordError(f"--device must be auto, cpu or cuda, not {mode!r}")
    has_cuda = torch.cuda.is_available()
    if mode == "cuda" and not has_cuda:
        raise RecordError(
            "--device cuda was asked for but torch.cuda.is_available() is False "
            f"(torch {torch.__version__}); use --device auto or cpu"
        )
    if mode == "cpu" or not has_cuda:
        return Machine("cpu", 0)
    return Machine("cuda", torch.cuda.device_count())


@dataclass
class Plan:
    wanted: list[str]
    devices: list[torch.device]  # aligned with wanted
    notes: list[str] = field(default_factory=list)

    @property
    def used(self) -> list[str]:
        return [str(d) for d in self.devices]

    @property
    def cuda(self) -> list[torch.device]:
        """The distinct GPUs used, in order."""
        return distinct_gpus(self.devices)

    @property
    def fallback(self) -> bool:
        """True when a GPU role runs on the CPU."""
        pairs = zip(self.wanted, self.devices, strict=True)
        return any(r.startswith("cuda") and d.type == "cpu" for r, d in pairs)

    @property
    def note(self) -> str | None:
        return " ".join(self.notes) if self.notes else None


def plan(wants: tuple[str, ...], machine: Machine) -> Plan:
    devices = [_map(role, machine) for role in wants]
    p = Plan(list(wants), devices)
    if [str(d) for d in devices] != list(wants):
        gpu_roles = [r for r in wants if r.startswith("cuda")]
        ran_on = sorted(
            {str(d) for r, d in zip(wants, devices, strict=True) if r.startswith("cuda")}
        )
        p.notes.append(
            f"wanted {_gpus(len(gpu_roles))} ({', '.join(gpu_roles)}), this run has "
            f"{machine.label}: ran the GPU part(s) on {', '.join(ran_on)}"
            + (" (CPU fallback; the trace has no GPU activity)." if machine.kind == "cpu" else ".")
        )
    return p


def _gpus(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _map(role: str, machine: Machine) -> torch.device:
    if role == "cpu":
        return torch.device("cpu")
    index = int(role.split(":")[1])
    if machine.kind == "cpu" or machine.gpus == 0:
        return torch.device("cpu")
    return torch.device("cuda", index if index < machine.gpus else 0)


def distinct_gpus(devices: list[torch.device]) -> list[torch.device]:
    seen: list[torch.device] = []
    for d in devices:
        if d.type == "cuda" and d not in seen:
            seen.append(d)
    return seen


def synchronize(devices: list[torch.device]) -> None:
    """Wait for all work on every stream of each GPU in ``devices``."""
    for d in devices:
        if d.type == "cuda":
            torch.cuda.synchronize(d)


class EventTimer:
    """CUDA-event time per GPU: events on each device's current stream around a step.

    ``start()`` before issuing the step, ``stop()`` after issuing it (before the host
    synchronizes), ``elapsed_ms()`` once the devices are synchronized. Workloads join
    their side streams back into the current stream, so the end event follows them.
    """

    def __init__(self, gpus: list[torch.device]) -> None:
        self.gpus = gpus
        self._events: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []

    def start(self) -> None:
        self._events = []
        for d in self.gpus:
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record(torch.cuda.current_stream(d))
            self._events.append((a, b))

    def stop(self) -> None:
        for d, (_, b) in zip(self.gpus, self._events, strict=True):
            b.record(torch.cuda.current_stream(d))

    def elapsed_ms(self) -> dict[str, float]:
        return {
            str(d): a.elapsed_time(b) for d, (a, b) in zip(self.gpus, self._events, strict=True)
        }


def gpu_names() -> list[dict[str, object]]:
    if not torch.cuda.is_available():
        return []
    out: list[dict[str, object]] = []
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        out.append(
            {
                "index": i,
                "name": props.name,
                "memory_gib": round(props.total_memory / 2**30, 1),
                "capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count,
            }
        )
    return out
