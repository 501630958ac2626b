"""Build tiny Kineto-style Chrome traces by hand, for tests.

Times are given in microseconds (floats allowed, as Kineto writes them).
Example::

    t = TraceBuilder()
    t.kernel("k1", ts=0, dur=10, device=0, stream=7)
    t.memcpy("Memcpy DtoH (Device -> Pinned)", ts=5, dur=10, device=0, stream=20)
    t.runtime("cudaLaunchKernel", ts=-3, dur=2, correlation=1)
    path = t.write(tmp_path / "t.json")          # or .json.gz
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any


class TraceBuilder:
    def __init__(self, *, pid: int = 1000, tid: int = 1000, **top: Any) -> None:
        self.events: list[dict[str, Any]] = []
        self.top: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [], **top}
        self.pid = pid
        self.tid = tid
        self._corr = 1_000_000

    def _next_corr(self) -> int:
        self._corr += 1
        return self._corr

    def add(self, **ev: Any) -> dict[str, Any]:
        ev.setdefault("ph", "X")
        self.events.append(ev)
        return ev

    def gpu(self, cat: str, name: str, ts: float, dur: float, device: int = 0,
            stream: int = 7, correlation: int | None = None, **args: Any) -> dict[str, Any]:
        a = {"device": device, "stream": stream,
             "correlation": self._next_corr() if correlation is None else correlation, **args}
        return self.add(cat=cat, name=name, pid=device, tid=stream, ts=ts, dur=dur, args=a)

    def kernel(self, name: str, ts: float, dur: float, **kw: Any) -> dict[str, Any]:
        return self.gpu("kernel", name, ts, dur, **kw)

    def memcpy(self, name: str, ts: float, dur: float, bytes: int = 1024,
               **kw: Any) -> dict[str, Any]:
        return self.gpu("gpu_memcpy", name, ts, dur, bytes=bytes, **kw)

    def memset(self, ts: float, dur: float, bytes: int = 1024, **kw: Any) -> dict[str, Any]:
        return self.gpu("gpu_memset", "Memset (Device)", ts, dur, bytes=bytes, **kw)

    def cpu(self, cat: str, name: str, ts: float, dur: float, tid: int | None = None,
            **args: Any) -> dict[str, Any]:
        return self.add(cat=cat, name=name, pid=self.pid, tid=self.tid if tid is None else tid,
                        ts=ts, dur=dur, args=args)

    def op(self, name: str, ts: float, dur: float, **kw: Any) -> dict[str, Any]:
        return self.cpu("cpu_op", name, ts, dur, **kw)

    def runtime(self, name: str, ts: float, dur: float, correlation: int | None = None,
                **kw: Any) -> dict[str, Any]:
        return self.cpu("cuda_runtime", name, ts, dur,
                        correlation=self._next_corr() if correlation is None else correlation, **kw)

    def step(self, n: int, ts: float, dur: float) -> dict[str, Any]:
        return self.cpu("user_annotation", f"ProfilerStep#{n}", ts, dur)

    def launch(self, kernel_name: str, cpu_ts: float, cpu_dur: float, gpu_ts: float,
               gpu_dur: float, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        """A cudaLaunchKernel and the kernel it launched, linked by correlation."""
        c = self._next_corr()
        r = self.runtime("cudaLaunchKernel", cpu_ts, cpu_dur, correlation=c)
        k = self.kernel(kernel_name, gpu_ts, gpu_dur, correlation=c, **kw)
        return r, k

    def device_properties(self, *ids: int, name: str = "NVIDIA H200") -> None:
        self.top["deviceProperties"] = [{"id": i, "name": name} for i in ids]

    def document(self) -> dict[str, Any]:
        return {**self.top, "traceEvents": self.events}

    def write(self, path: Path | str) -> Path:
        path = Path(path)
        data = json.dumps(self.document()).encode()
        if path.suffix == ".gz":
            path.write_bytes(gzip.compress(data))
        else:
            path.write_bytes(data)
        return path
