"""Build tiny Timelines directly from rows, for metric tests (no JSON, no loader).

Times are integer nanoseconds. Each helper returns one row (a dict); ``timeline``
fills every other column with its "unknown" value and returns a checked Timeline::

    tl = timeline(
        gpu=[kernel(0, 10, stream=7), copy(5, 15, "DtoH", stream=20)],
        cpu=[runtime(-5, -2, "cudaLaunchKernel", correlation=1)],
        steps=[(1, 0, 20)],                      # (N, start, end) of ProfilerStep#N
    )
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from traceprobe.timeline import (
    CPU_COLUMNS,
    GPU_COLUMNS,
    STEP_COLUMNS,
    Timeline,
    TraceMeta,
    empty_frame,
)

HOST_PID = 100

GPU_DEFAULTS: dict[str, Any] = {
    "name": "k",
    "device": 0,
    "stream": 7,
    "correlation": -1,
    "external_id": -1,
    "bytes": -1,
    "copy_kind": "",
    "src_kind": "",
    "dst_kind": "",
    "peer": -1,
    "comm": False,
}
CPU_DEFAULTS: dict[str, Any] = {
    "pid": HOST_PID,
    "tid": 1,
    "correlation": -1,
    "external_id": -1,
}


def kernel(start: int, end: int, name: str = "k", **kw: Any) -> dict[str, Any]:
    return {"kind": "kernel", "name": name, "start": start, "end": end, **kw}


def comm(start: int, end: int, name: str = "ncclKernel_AllReduce", **kw: Any) -> dict[str, Any]:
    return kernel(start, end, name, comm=True, **kw)


_MEM = {"H": "Pinned", "D": "Device", "P": "Device"}


def copy(start: int, end: int, direction: str = "HtoD", **kw: Any) -> dict[str, Any]:
    row = {
        "kind": "memcpy",
        "name": f"Memcpy {direction}",
        "start": start,
        "end": end,
        "copy_kind": direction,
        "src_kind": _MEM[direction[0]],
        "dst_kind": _MEM[direction[-1]],
        "bytes": 1024,
    }
    row.update(kw)
    return row


def memset(start: int, end: int, **kw: Any) -> dict[str, Any]:
    return {
        "kind": "memset",
        "name": "Memset (Device)",
        "start": start,
        "end": end,
        "bytes": 512,
        **kw,
    }


def op(start: int, end: int, name: str = "aten::op", **kw: Any) -> dict[str, Any]:
    return {"kind": "cpu_op", "name": name, "start": start, "end": end, **kw}


def runtime(start: int, end: int, name: str = "cudaLaunchKernel", **kw: Any) -> dict[str, Any]:
    return {"kind": "cuda_runtime", "name": name, "start": start, "end": end, **kw}


def driver(start: int, end: int, name: str = "cuLaunchKernel", **kw: Any) -> dict[str, Any]:
    return {"kind": "cuda_driver", "name": name, "start": start, "end": end, **kw}


def annotation(start: int, end: int, name: str = "my_region", **kw: Any) -> dict[str, Any]:
    return {"kind": "user_annotation", "name": name, "start": start, "end": end, **kw}


def _frame(
    rows: list[dict[str, Any]], columns: dict[str, str], defaults: dict[str, Any]
) -> pd.DataFrame:
    if not rows:
        return empty_frame(columns)
    full = [{**defaults, **r} for r in rows]
    df = pd.DataFrame(full, columns=list(columns))
    return df.astype({c: t for c, t in columns.items() if t in ("int64", "bool")})


def timeline(
    gpu: list[dict[str, Any]] = (),  # type: ignore[assignment]
    cpu: list[dict[str, Any]] = (),  # type: ignore[assignment]
    steps: list[tuple[int, int, int]] = (),  # type: ignore[assignment]
    *,
    source: str = "test.json",
    fmt: str = "kineto",
    rank: int | None = None,
    world_size: int | None = None,
    names: dict[int, str] | None = None,
) -> Timeline:
    step_rows = [{"step": n, "start": s, "end": e} for n, s, e in steps]
    # As in a real trace, each ProfilerStep window is also a host annotation event.
    cpu = [*cpu, *(annotation(s, e, f"ProfilerStep#{n}") for n, s, e in steps)]
    props = tuple({"id": d, "name": n} for d, n in (names or {}).items())
    tl = Timeline(
        gpu=_frame(list(gpu), GPU_COLUMNS, GPU_DEFAULTS),
        cpu=_frame(list(cpu), CPU_COLUMNS, CPU_DEFAULTS),
        steps=_frame(step_rows, STEP_COLUMNS, {}),
        meta=TraceMeta(
            source=source, format=fmt, rank=rank, world_size=world_size, device_properties=props
        ),
    )
    tl.check()
    return tl
