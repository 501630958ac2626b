"""Tiny hand-made traces for the graph tests: times in µs, one host thread (pid 1, tid 1)."""

from __future__ import annotations

from typing import Any

from traceprobe.load import from_events
from traceprobe.timeline import Timeline

H200 = {"id": 0, "name": "NVIDIA H200", "numSms": 132, "maxThreadsPerMultiprocessor": 2048,
        "regsPerMultiprocessor": 65536, "sharedMemPerMultiprocessor": 233472}


class Trace:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.corr = 100

    def step(self, n: int, ts: float, dur: float) -> Trace:
        self.events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}",
                            "pid": 1, "tid": 1, "ts": ts, "dur": dur})
        return self

    def op(self, name: str, ts: float, dur: float) -> Trace:
        self.events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1,
                            "ts": ts, "dur": dur})
        return self

    def call(self, name: str, ts: float, dur: float) -> Trace:
        self.corr += 1
        self.events.append({"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1,
                            "ts": ts, "dur": dur, "args": {"correlation": self.corr}})
        return self

    def kernel(self, name: str, ts: float, dur: float, *, stream: int = 7, device: int = 0,
               grid: int | None = None) -> Trace:
        """A kernel launched by the last call."""
        args: dict[str, Any] = {"device": device, "stream": stream, "correlation": self.corr}
        if grid is not None:
            args.update(grid=[grid, 1, 1], block=[256, 1, 1], **{"registers per thread": 32,
                                                                  "shared memory": 0})
        self.events.append({"ph": "X", "cat": "kernel", "name": name, "pid": device,
                            "tid": stream, "ts": ts, "dur": dur, "args": args})
        return self

    def copy(self, ts: float, dur: float, *, stream: int = 7) -> Trace:
        name = "Memcpy DtoH (Device -> Pinned)"
        self.events.append({"ph": "X", "cat": "gpu_memcpy", "name": name,
                            "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                            "args": {"device": 0, "stream": stream, "correlation": self.corr,
                                     "bytes": 1000}})
        return self

    def launch(self, name: str, ts: float, start: float, dur: float, **kw: Any) -> Trace:
        """cudaLaunchKernel at ``ts`` (1 µs) and its kernel at ``start``."""
        return self.call("cudaLaunchKernel", ts, 1).kernel(name, start, dur, **kw)

    def timeline(self, props: list[dict[str, Any]] | None = None) -> Timeline:
        top = {"deviceProperties": props} if props else {}
        return from_events(self.events, "tiny.json", **top)


def nested(groups: int) -> Trace:
    """``groups`` times: linear (b+2 .. b+8.5) > addmm (b+4 .. b+8) > cudaLaunchKernel
    (b+6 .. b+7) and its 1 µs kernel, b = 10 µs x group; one step 0 .. 10 x groups - 0.5
    (the profiler-cost tests work out its intervals and host span by hand)."""
    t = Trace().step(1, 0, 10 * groups - 0.5)
    for i in range(groups):
        b = 10 * i
        t.op("aten::linear", b + 2, 6.5).op("aten::addmm", b + 4, 4)
        t.launch("gemm", b + 6, b + 8, 1)
    return t
