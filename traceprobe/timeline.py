"""The timeline model: what one trace file holds, as pandas frames.

A :class:`Timeline` is a plain value object built by :mod:`traceprobe.load`
from one Chrome-trace file. Everything downstream (metrics, reports) reads it
and never the JSON. All times are **int64 nanoseconds** on the trace's own
clock (the file's ``ts`` converted exactly, fractions of a microsecond kept).

``gpu`` — one row per GPU activity (kernels, memory copies, memsets)
    kind          str   "kernel" | "memcpy" | "memset"
    name          str   kernel or copy name as in the trace
    device        int64 GPU index (args.device, else pid); -1 if unknown
    stream        int64 stream id (args.stream, else the number in tid "stream 7")
    start, end    int64 ns, end >= start
    correlation   int64 links to the runtime call that launched it; -1 if none
    external_id   int64 links to the CPU op; -1 if none
    bytes         int64 bytes moved/set; -1 if unknown
    copy_kind     str   "HtoD" | "DtoH" | "DtoD" | "PtoP" | "HtoH" | "" (non-copies)
    src_kind      str   "Pageable" | "Pinned" | "Device" | "Host" (ROCm) | "" (memory kinds)
    dst_kind      str   same, for the destination
    peer          int64 the other device of a PtoP copy; -1 otherwise
    comm          bool  a communication kernel (NCCL/RCCL collectives and p2p)
    dur_ns        int64 end - start (every frame has it)
  and, for kernels, what the trace records of the launch (others: unknown):
    grid, block   str   compact JSON as in the trace ("[128,1,1]"); "" if unknown
    registers_per_thread, shared_memory   int64 (bytes); -1 if unknown
    blocks_per_sm, warps_per_sm           float64; NaN if unknown
    occupancy     float64 est. achieved occupancy in %; NaN if unknown

``cpu`` — one row per host-side duration event
    kind          str   "cpu_op" | "cuda_runtime" | "cuda_driver" | "cuda_sync" |
                        "user_annotation" | "python_function" | other category names
    name          str
    pid, tid      int64 process and thread (tid strings are hashed to stable ints)
    start, end    int64 ns
    correlation   int64 -1 if none
    external_id   int64 -1 if none
    dur_ns        int64 end - start
    input_dims    str   the op's "Input Dims" as compact JSON ("[[8,3],[]]"), "" if not recorded
    input_types   str   its "Input type" as compact JSON ('["float","Scalar"]'), "" if not recorded
    concrete_inputs str its "Concrete Inputs" (scalars and int lists: strides, flags) as compact
                        JSON ('["","","[1, 1]","False"]'), "" if not recorded

``steps`` — one row per ``ProfilerStep#N`` window (host side), sorted by start
    step          int64 N
    start, end    int64 ns
    dur_ns        int64 end - start

``meta`` — :class:`TraceMeta`.

Devices that appear only in ``deviceProperties`` (no events) are listed in
``meta.device_properties`` but get no rows; reports still show them with zero
busy time when asked for with ``--device``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pandas is imported when a frame is built, so `import traceprobe` stays light
    import pandas as pd

GPU_COLUMNS: dict[str, str] = {
    "kind": "object",
    "name": "object",
    "device": "int64",
    "stream": "int64",
    "start": "int64",
    "end": "int64",
    "correlation": "int64",
    "external_id": "int64",
    "bytes": "int64",
    "copy_kind": "object",
    "src_kind": "object",
    "dst_kind": "object",
    "peer": "int64",
    "comm": "bool",
}

CPU_COLUMNS: dict[str, str] = {
    "kind": "object",
    "name": "object",
    "pid": "int64",
    "tid": "int64",
    "start": "int64",
    "end": "int64",
    "correlation": "int64",
    "external_id": "int64",
}

STEP_COLUMNS: dict[str, str] = {"step": "int64", "start": "int64", "end": "int64"}

# Columns the loader always adds; frames built by hand may leave them out (check() validates
# them where present).
OPTIONAL_GPU_COLUMNS: dict[str, str] = {
    "dur_ns": "int64",
    "grid": "object",
    "block": "object",
    "registers_per_thread": "int64",
    "shared_memory": "int64",
    "blocks_per_sm": "float64",
    "warps_per_sm": "float64",
    "occupancy": "float64",
}
OPTIONAL_CPU_COLUMNS: dict[str, str] = {
    "dur_ns": "int64",
    "input_dims": "object",
    "input_types": "object",
    "concrete_inputs": "object",
}
OPTIONAL_STEP_COLUMNS: dict[str, str] = {"dur_ns": "int64"}

GPU_KINDS = ("kernel", "memcpy", "memset")
COPY_KINDS = ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH")


def empty_frame(columns: dict[str, str], optional: dict[str, str] | None = None) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in {**columns, **(optional or {})}.items()})


@dataclass(frozen=True)
class TraceMeta:
    """Everything about a trace that is not an event."""

    source: str
    format: str = "kineto"  # "kineto" | "kineto-2021" | "rocm" | "cpu-only"
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    device_properties: tuple[dict[str, Any], ...] = ()
    base_time_ns: int | None = None
    schema_version: int | None = None
    trace_name: str | None = None
    event_count: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def device_name(self, device: int) -> str | None:
        for p in self.device_properties:
            if p.get("id") == device:
                name = p.get("name")
                return str(name) if name is not None else None
        return None


@dataclass(frozen=True)
class Timeline:
    """One trace file's activities as frames; see the module docstring for columns."""

    gpu: pd.DataFrame
    cpu: pd.DataFrame
    steps: pd.DataFrame
    meta: TraceMeta

    @property
    def source(self) -> str:
        return self.meta.source

    @property
    def devices(self) -> list[int]:
        """GPU devices with at least one activity, ascending."""
        if self.gpu.empty:
            return []
        return sorted(int(d) for d in self.gpu["device"].unique())

    @property
    def kernels(self) -> pd.DataFrame:
        return self.gpu[self.gpu["kind"] == "kernel"]

    @property
    def copies(self) -> pd.DataFrame:
        return self.gpu[self.gpu["kind"] == "memcpy"]

    @property
    def memsets(self) -> pd.DataFrame:
        return self.gpu[self.gpu["kind"] == "memset"]

    @property
    def span(self) -> tuple[int, int] | None:
        """[first start, last end) over GPU activities and CPU events, or None if empty."""
        lo, hi = [], []
        for df in (self.gpu, self.cpu):
            if not df.empty:
                lo.append(int(df["start"].min()))
                hi.append(int(df["end"].max()))
        if not lo:
            return None
        return min(lo), max(hi)

    @property
    def gpu_span(self) -> tuple[int, int] | None:
        """[first GPU start, last GPU end), or None without GPU activity."""
        if self.gpu.empty:
            return None
        return int(self.gpu["start"].min()), int(self.gpu["end"].max())

    def window(self, lo: int, hi: int) -> Timeline:
        """The part of the timeline inside ``[lo, hi)``.

        Events that straddle a boundary are kept and clipped to it, so time is
        never counted in two disjoint windows. Zero-length events exactly at
        ``lo`` are kept; events entirely outside are dropped.
        """
        return replace(
            self,
            gpu=_clip_frame(self.gpu, lo, hi),
            cpu=_clip_frame(self.cpu, lo, hi),
            steps=_clip_frame(self.steps, lo, hi),
        )

    def cut(self, bounds: Sequence[tuple[int, int]]) -> Timeline:
        """Every window of ``bounds`` at once: each frame holds, for each window, exactly the
        rows :meth:`window` would keep for it, clipped to it, with the window's index in a
        ``win`` column (int64), ordered by window and then as in the frame. An event that
        straddles a boundary appears once per window it falls in. The metrics take such
        frames and give one result per window (:mod:`traceprobe.metrics.grouping`).

        Sorted, disjoint windows (steps) cost one pass over each frame; others are cut one
        window at a time."""
        return replace(self, **{name: _cut_frame(getattr(self, name), bounds)
                                for name in ("gpu", "cpu", "steps")})

    def only_devices(self, devices: list[int]) -> Timeline:
        keep = self.gpu["device"].isin(devices)
        return replace(self, gpu=self.gpu[keep])

    def __repr__(self) -> str:
        """Counts and span, not the frames (two lines)."""
        return f"Timeline of {self.source} ({self.meta.format})\n  {self._summary()}"

    def _repr_html_(self) -> str:
        """A small table for notebooks: the counts and span, then the frames' names."""
        from html import escape

        rows = "".join(f"<tr><th style='text-align:left'>{escape(k)}</th><td>{escape(v)}</td></tr>"
                       for k, v in self._facts())
        return (f"<div><b>Timeline</b> <code>{escape(self.source)}</code>"
                f"<table>{rows}</table>"
                "<small>frames: .gpu .kernels .copies .memsets .cpu .steps; .meta</small></div>")

    def _facts(self) -> list[tuple[str, str]]:
        kinds = self.gpu["kind"].value_counts() if not self.gpu.empty else {}
        span = self.span
        return [
            ("format", self.meta.format),
            ("GPUs", ", ".join(map(str, self.devices)) or "none"),
            ("GPU activities", ", ".join(_n(int(kinds.get(k, 0)), k) for k in GPU_KINDS)),
            ("CPU events", str(len(self.cpu))),
            ("steps", str(len(self.steps))),
            ("span", "empty" if span is None else f"{(span[1] - span[0]) / 1e6:.3f} ms"),
        ]

    def _summary(self) -> str:
        facts = dict(self._facts())
        gpus = f"GPU{'s' if len(self.devices) > 1 else ''} {facts['GPUs']}"
        return (f"{facts['GPU activities']} on {gpus}; {_n(len(self.cpu), 'CPU event')};"
                f" steps {facts['steps']}; span {facts['span']}")

    def check(self) -> None:
        """Assert the model's invariants; raises AssertionError with what broke."""
        for name, df, cols in (
            ("gpu", self.gpu, GPU_COLUMNS),
            ("cpu", self.cpu, CPU_COLUMNS),
            ("steps", self.steps, STEP_COLUMNS),
        ):
            missing = [c for c in cols if c not in df.columns]
            assert not missing, f"{name} frame lacks columns {missing}"
            optional = {"gpu": OPTIONAL_GPU_COLUMNS, "cpu": OPTIONAL_CPU_COLUMNS,
                        "steps": OPTIONAL_STEP_COLUMNS}[name]
            for c, t in {**cols, **{k: v for k, v in optional.items() if k in df.columns}}.items():
                if t in ("int64", "bool", "float64"):
                    assert str(df[c].dtype) == t, f"{name}.{c} is {df[c].dtype}, want {t}"
            if not df.empty:
                bad = int((df["end"] < df["start"]).sum())
                assert bad == 0, f"{name}: {bad} rows end before they start"
                if "dur_ns" in df.columns:
                    assert (df["dur_ns"] == df["end"] - df["start"]).all(), f"{name}: dur_ns"
        if not self.gpu.empty:
            kinds = set(self.gpu["kind"].unique())
            assert kinds <= set(GPU_KINDS), f"gpu kinds {kinds - set(GPU_KINDS)}"
            ck = set(self.gpu["copy_kind"].unique()) - {""}
            assert ck <= set(COPY_KINDS), f"copy kinds {ck - set(COPY_KINDS)}"
        if len(self.steps) > 1:
            s = self.steps.sort_values("start")
            assert (s["start"].to_numpy()[1:] >= s["end"].to_numpy()[:-1]).all(), "steps overlap"


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _clip_frame(df: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame:
    if df.empty:
        return df
    s = df["start"].to_numpy()
    e = df["end"].to_numpy()
    keep = ((s < hi) & (e > lo)) | ((s == e) & (s >= lo) & (s < hi))
    return _clipped(df[keep], lo, hi)


class _Clipper:
    """:func:`_clip_frame` of one frame for many windows. Rows sorted by start, with the
    running maximum of their ends: a row before the first whose running end reaches
    ``lo`` ends before ``lo`` (so starts before it); a row from the first starting at
    ``hi`` on starts at or after ``hi``; only the rows between are tested."""

    def __init__(self, df: pd.DataFrame) -> None:
        import numpy as np

        self.df = df
        if df.empty:
            return
        self.s = df["start"].to_numpy()
        self.e = df["end"].to_numpy()
        self.order = np.argsort(self.s, kind="stable")
        self.starts = self.s[self.order]
        self.reach = np.maximum.accumulate(self.e[self.order])

    def clip(self, lo: int, hi: int) -> pd.DataFrame:
        import numpy as np

        if self.df.empty:
            return self.df
        j = int(np.searchsorted(self.reach, lo, side="left"))
        k = int(np.searchsorted(self.starts, hi, side="left"))
        rows = self.order[j:k] if j < k else self.order[:0]
        s, e = self.s[rows], self.e[rows]
        keep = ((s < hi) & (e > lo)) | ((s == e) & (s >= lo) & (s < hi))
        return _clipped(self.df.iloc[np.sort(rows[keep])], lo, hi)


def _clipped(out: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame:
    """``out`` (a new frame of selected rows) with start/end clipped to ``[lo, hi)``."""
    import numpy as np

    out = _own(out)

    out["start"] = np.clip(out["start"].to_numpy(), lo, hi)
    out["end"] = np.clip(out["end"].to_numpy(), lo, hi)
    if "dur_ns" in out.columns:
        out["dur_ns"] = out["end"].to_numpy() - out["start"].to_numpy()
    return out


def _cut_frame(df: pd.DataFrame, bounds: Sequence[tuple[int, int]]) -> pd.DataFrame:
    """:meth:`Timeline.cut` of one frame."""
    import numpy as np
    import pandas as pd

    lo = np.asarray([b[0] for b in bounds], dtype=np.int64)
    hi = np.asarray([b[1] for b in bounds], dtype=np.int64)
    if df.empty or not len(lo):
        return df.iloc[:0].assign(win=np.empty(0, np.int64))
    if not (np.all(lo[1:] >= hi[:-1]) and np.all(hi >= lo)):  # unsorted or overlapping
        clip = _Clipper(df)
        parts = [clip.clip(int(a), int(b)).assign(win=i) for i, (a, b) in enumerate(bounds)]
        out = pd.concat(parts) if parts else df.iloc[:0]
        out["win"] = out["win"].astype(np.int64)
        return out.reset_index(drop=True)
    s = df["start"].to_numpy(dtype=np.int64)
    e = df["end"].to_numpy(dtype=np.int64)
    # windows j with lo[j] < e and hi[j] > s (a zero-length event: lo[j] <= s < hi[j])
    first = np.searchsorted(hi, s, side="right")
    last = np.searchsorted(lo, e, side="left")  # one past the last window starting before e
    point = s == e
    inside = first < len(lo)
    last = np.where(point, first + (inside & (lo[np.minimum(first, len(lo) - 1)] <= s)), last)
    count = np.maximum(last - first, 0)
    rows = np.repeat(np.arange(len(df)), count)
    offset = np.arange(len(rows)) - np.repeat(np.cumsum(count) - count, count)
    win = np.repeat(first, count) + offset
    order = np.lexsort((rows, win))
    rows, win = rows[order], win[order]
    out = _own(df.iloc[rows])
    out["start"] = np.clip(s[rows], lo[win], hi[win])
    out["end"] = np.clip(e[rows], lo[win], hi[win])
    if "dur_ns" in out.columns:
        out["dur_ns"] = out["end"].to_numpy() - out["start"].to_numpy()
    out["win"] = win.astype(np.int64)
    return out.reset_index(drop=True)


def _own(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (a selection) made safe to assign columns to: as is under pandas 3's
    copy-on-write, a copy before it (where assigning to a selection warns)."""
    import pandas as pd

    return rows if int(pd.__version__.split(".")[0]) >= 3 else rows.copy()
