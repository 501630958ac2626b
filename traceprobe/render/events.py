"""Every event of a report's window, packed for the HTML timeline's hover, links and search.

    detail = event_detail(timeline, (lo, hi), devices=[0, 1])
    detail.payload()          # JSON-able dict: rows, name tables, one gzip+base64 blob

One row per GPU stream (kernels, copies, memsets) and one per host thread (ops with
their nesting depth, runtime calls, user annotations, the DataLoader's ``__next__``).
Events are those overlapping ``[lo, hi)``, with their **true** start and end (not
clipped), in int ns relative to ``lo``.

Columns travel as little-endian typed arrays, concatenated (each padded to 8 bytes),
gzip-compressed and base64-encoded: the 98 MB transformer trace (216k events) costs
about 1.5 MB of page. ``timeline.js`` inflates the blob with the browser's own
``DecompressionStream``. Column layout (``payload()["gpu_cols"]``/``["cpu_cols"]``
name them with their dtype, one of ``u8 u16 i32 f64``):

    row     index into payload()["gpu"] / ["host"]
    start   delta-coded: each event's start minus the previous event's start in the
            table (rows are contiguous, sorted by start), the first from ``lo``
    dur     end - start
    name    index into payload()["names"]
    kind    index into payload()["kinds"]
    info    index into payload()["infos"] ("" at 0): the INFO_COLUMNS the frames
            carry (a kernel's grid, block, registers, occupancy; an op's input dims)
    corr    correlation id (-1: none); GPU: ``bytes`` (-1: unknown) and ``ext``;
    host:   ``depth`` (nesting, 0 outermost), ``parent`` (index of the enclosing
            event in the host table, -1: none), ``ext`` (external id)

Launch links (kernel -> runtime call -> enclosing ops) are found in the browser from
``corr`` and ``parent``. A window with more than ``max_events`` events keeps the
longest ones (those at least ``shorter_than_ns`` long, ties included) and says how many
it left out (``dropped``); the overlap picture of :mod:`traceprobe.render.lanes` still
counts every event, and the page then draws GPU lanes from it.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from traceprobe.metrics.nesting import enclosing
from traceprobe.metrics.regions import classify
from traceprobe.timeline import Timeline

MAX_EVENTS = 600_000
# Event kinds as the page colours them (CSS variables --tp-<kind>, set from lanes.COLORS).
GPU_EVENT_KINDS = ("kernel", "comm", "memcpy", "memset")
HOST_EVENT_KINDS = ("cpu_op", "runtime", "sync", "annotation", "dataloader", "python", "other")
EVENT_KINDS = GPU_EVENT_KINDS + HOST_EVENT_KINDS
_HOST_KIND = {
    "cpu_op": "cpu_op",
    "cuda_runtime": "runtime",
    "cuda_driver": "runtime",
    "cuda_sync": "sync",
    "user_annotation": "annotation",
    "gpu_user_annotation": "annotation",
    "python_function": "python",
}
_CLASS_KIND = {"dataloader": "dataloader", "optimizer": "annotation", "region": "annotation",
               "sync": "sync", "runtime": "runtime", "cpu_op": "cpu_op"}
# Optional frame columns shown on hover when the loaded frames have them: (label, unit).
INFO_COLUMNS = {
    "grid": ("grid", ""),
    "block": ("block", ""),
    "registers_per_thread": ("registers/thread", ""),
    "shared_memory": ("shared memory", " B"),
    "blocks_per_sm": ("blocks/SM", ""),
    "warps_per_sm": ("warps/SM", ""),
    "occupancy": ("est. occupancy", "%"),
    "input_dims": ("input dims", ""),
    "input_shapes": ("input shapes", ""),
    "input_types": ("input types", ""),
}


@dataclass(frozen=True)
class EventDetail:
    """The packed events of one window; see the module docstring."""

    lo: int
    hi: int
    gpu_rows: list[dict[str, Any]]
    host_rows: list[dict[str, Any]]
    names: list[str]
    infos: list[str]
    gpu_cols: list[tuple[str, str, np.ndarray]] = field(repr=False)
    cpu_cols: list[tuple[str, str, np.ndarray]] = field(repr=False)
    dropped: int = 0
    shorter_than_ns: int = 0

    def kinds_present(self) -> set[str]:
        """The EVENT_KINDS that occur (for the legend)."""
        codes = np.concatenate([a for n, _, a in self.gpu_cols + self.cpu_cols if n == "kind"])
        return {EVENT_KINDS[int(c)] for c in np.unique(codes)}

    @property
    def events(self) -> int:
        return len(self.gpu_cols[0][2]) + len(self.cpu_cols[0][2])

    def payload(self) -> dict[str, Any]:
        raw = b"".join(_padded(a) for _, _, a in self.gpu_cols + self.cpu_cols)
        blob = gzip.compress(raw, compresslevel=6, mtime=0)
        return {
            "kinds": list(EVENT_KINDS),
            "names": self.names,
            "infos": self.infos,
            "gpu": self.gpu_rows,
            "host": self.host_rows,
            "gpu_n": len(self.gpu_cols[0][2]),
            "cpu_n": len(self.cpu_cols[0][2]),
            "gpu_cols": [[n, t] for n, t, _ in self.gpu_cols],
            "cpu_cols": [[n, t] for n, t, _ in self.cpu_cols],
            "dropped": self.dropped,
            "shorter_than_ns": self.shorter_than_ns,
            "blob": base64.b64encode(blob).decode("ascii"),
        }


def event_detail(
    timeline: Timeline,
    window: tuple[int, int] | None,
    *,
    devices: Sequence[int] | None = None,
    max_events: int = MAX_EVENTS,
) -> EventDetail:
    """The events of ``timeline`` overlapping ``window`` (default: the whole trace)."""
    lo, hi = window if window is not None else (timeline.span or (0, 0))
    lo, hi = int(lo), int(hi)
    gpu = _overlapping(timeline.gpu, lo, hi)
    if devices is not None:
        gpu = gpu[gpu["device"].isin(list(devices))]
    cpu = _overlapping(timeline.cpu, lo, hi)

    dropped, cut = 0, 0
    if len(gpu) + len(cpu) > max_events:
        dur = np.concatenate([(gpu["end"] - gpu["start"]).to_numpy(),
                              (cpu["end"] - cpu["start"]).to_numpy()])
        cut = int(np.sort(dur)[::-1][max_events - 1])  # keep events at least this long (ties too)
        dropped = int((dur < cut).sum())
        gpu = gpu[(gpu["end"] - gpu["start"]).to_numpy() >= cut]
        cpu = cpu[(cpu["end"] - cpu["start"]).to_numpy() >= cut]

    names: dict[str, int] = {}
    infos: dict[str, int] = {"": 0}
    gpu_rows, gpu_cols = _gpu_table(gpu, lo, names, infos)
    host_rows, cpu_cols = _host_table(cpu, lo, names, infos)
    return EventDetail(lo, hi, gpu_rows, host_rows, list(names), list(infos), gpu_cols,
                       cpu_cols, dropped, cut)


# ----------------------------------------------------------------------------- tables


def _overlapping(df: pd.DataFrame, lo: int, hi: int) -> pd.DataFrame:
    if df.empty:
        return df
    s, e = df["start"].to_numpy(), df["end"].to_numpy()
    keep = (s < hi) & (e > lo) | ((s == e) & (s >= lo) & (s < hi))
    return df[keep]


def _gpu_table(gpu: pd.DataFrame, lo: int, names: dict[str, int], infos: dict[str, int]):
    gpu = gpu.sort_values(["device", "stream", "start"], kind="stable")
    keys = list(zip(gpu["device"].tolist(), gpu["stream"].tolist(), strict=True))
    rows: list[dict[str, Any]] = []
    row_of: dict[tuple[int, int], int] = {}
    for k in keys:
        if k not in row_of:
            row_of[k] = len(rows)
            rows.append({"device": int(k[0]), "stream": int(k[1]),
                         "label": f"GPU {k[0]} · stream {k[1]}"})
    row = np.array([row_of[k] for k in keys], dtype=np.int64)
    for i, r in enumerate(rows):
        r["n"] = int((row == i).sum())
    kind = gpu["kind"].to_numpy(dtype=object)
    kind = np.where((kind == "kernel") & gpu["comm"].to_numpy(dtype=bool), "comm", kind)
    cols = [
        ("row", _small(row)),
        *_times(gpu, lo),
        ("name", _small(_intern(gpu["name"], names))),
        ("kind", _small(_codes(kind, EVENT_KINDS))),
        ("info", _small(_info(gpu, infos))),
        ("corr", _int(gpu["correlation"])),
        ("ext", _int(gpu["external_id"])),
        ("bytes", ("f64", gpu["bytes"].to_numpy(dtype=np.float64))),
    ]
    return rows, [(n, t, a) for n, (t, a) in cols]


def _host_table(cpu: pd.DataFrame, lo: int, names: dict[str, int], infos: dict[str, int]):
    # Outer events before inner ones that start together: start ascending, end descending.
    cpu = cpu.assign(_neg_end=-cpu["end"]).sort_values(
        ["pid", "tid", "start", "_neg_end"], kind="stable").drop(columns="_neg_end")
    keys = list(zip(cpu["pid"].tolist(), cpu["tid"].tolist(), strict=True))
    pids = {p for p, _ in keys}
    rows: list[dict[str, Any]] = []
    row_of: dict[tuple[int, int], int] = {}
    for k in keys:
        if k not in row_of:
            row_of[k] = len(rows)
            label = f"thread {k[1]}" + (f" (pid {k[0]})" if len(pids) > 1 else "")
            rows.append({"pid": int(k[0]), "tid": int(k[1]), "label": label})
    row = np.array([row_of[k] for k in keys], dtype=np.int64)
    start = cpu["start"].to_numpy(dtype=np.int64)
    end = cpu["end"].to_numpy(dtype=np.int64)
    depth, parent = nesting(row, start, end)
    for i, r in enumerate(rows):
        mine = row == i
        r["n"] = int(mine.sum())
        r["depth"] = int(depth[mine].max()) + 1 if mine.any() else 0
    name = cpu["name"].astype(str)
    kind = host_kinds(cpu)
    cols = [
        ("row", _small(row)),
        *_times(cpu, lo),
        ("name", _small(_intern(name, names))),
        ("kind", _small(_codes(kind, EVENT_KINDS))),
        ("info", _small(_info(cpu, infos))),
        ("corr", _int(cpu["correlation"])),
        ("ext", _int(cpu["external_id"])),
        ("depth", ("u8", np.minimum(depth, 255).astype(np.uint8))),
        ("parent", _int(pd.Series(parent))),
    ]
    return rows, [(n, t, a) for n, (t, a) in cols]


def host_kinds(cpu: pd.DataFrame) -> np.ndarray:
    """The page's kind of each host event: its class in the host account
    (:func:`traceprobe.metrics.regions.classify`, the classification the report's idle causes
    and critical path use; a region or the optimizer draws as an annotation), and for the
    events of no class (Python functions, ``ProfilerStep`` and GPU-side annotations) their
    category."""
    cls = classify(cpu)
    kind = np.array([_CLASS_KIND.get(c, "") for c in cls.tolist()], dtype=object)
    raw = cpu["kind"].to_numpy(dtype=object)
    rest = np.array([_HOST_KIND.get(k, "other") for k in raw], dtype=object)
    return np.where(kind == "", rest, kind)


def nesting(row: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per event (sorted by row, start, -end): its depth on its row and the index of the
    event directly enclosing it (-1: none). An event that starts inside another is its
    child, even if it outlives it; events of one depth never overlap
    (:func:`traceprobe.metrics.nesting.enclosing`)."""
    parent, depth = enclosing(start, end, [row])
    return depth, parent


def _times(df: pd.DataFrame, lo: int) -> list[tuple[str, tuple[str, np.ndarray]]]:
    start = df["start"].to_numpy(dtype=np.int64) - lo
    prev = np.concatenate([[0], start[:-1]]).astype(np.int64)
    dur = df["end"].to_numpy(dtype=np.int64) - df["start"].to_numpy(dtype=np.int64)
    return [("start", _fit(start - prev)), ("dur", _fit(dur))]


def _intern(values: pd.Series, table: dict[str, int]) -> np.ndarray:
    codes, uniques = pd.factorize(values.astype(str), sort=False)
    remap = np.array([table.setdefault(u, len(table)) for u in uniques], dtype=np.int64)
    return remap[codes] if len(codes) else np.zeros(0, np.int64)


def _codes(values: np.ndarray, kinds: Sequence[str]) -> np.ndarray:
    index = {k: i for i, k in enumerate(kinds)}
    return np.array([index[v] for v in values], dtype=np.int64)


def _info(df: pd.DataFrame, table: dict[str, int]) -> np.ndarray:
    """The INFO_COLUMNS the frame has (grid, block, occupancy, input dims, ...) as one
    interned "label value · label value" string per event; 0 where none is known."""
    extra = [c for c in INFO_COLUMNS if c in df.columns]
    if not extra or df.empty:
        return np.zeros(len(df), np.int64)
    parts = []
    for c in extra:
        col = df[c].tolist()
        parts.append([_shown(c, v) for v in col])
    texts = [" · ".join(p for p in ps if p) for ps in zip(*parts, strict=True)]
    return np.array([table.setdefault(t, len(table)) for t in texts], dtype=np.int64)


def _shown(col: str, v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float) and np.isnan(v):
        return ""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v < 0:
        return ""
    if isinstance(v, np.ndarray):
        v = v.tolist()
    if isinstance(v, (float, np.floating)):
        text = f"{float(v):.3g}"
    else:
        text = str(v)
    if text in ("", "[]", "()", "nan", "None"):
        return ""
    label, unit = INFO_COLUMNS[col]
    return f"{label} {text}{unit}"


def _fit(a: np.ndarray) -> tuple[str, np.ndarray]:
    if len(a) == 0 or (a.min() >= -(2**31) and a.max() < 2**31):
        return "i32", a.astype("<i4")
    return "f64", a.astype("<f8")


def _int(s: pd.Series) -> tuple[str, np.ndarray]:
    return _fit(s.to_numpy(dtype=np.int64))


def _small(a: np.ndarray) -> tuple[str, np.ndarray]:
    a = np.asarray(a, dtype=np.int64)
    if len(a) == 0 or a.max() < 256:
        return "u8", a.astype(np.uint8)
    if a.max() < 65536:
        return "u16", a.astype("<u2")
    return "i32", a.astype("<i4")


def _padded(a: np.ndarray) -> bytes:
    b = np.ascontiguousarray(a).tobytes()
    return b + b"\0" * (-len(b) % 8)


__all__ = [
    "EVENT_KINDS", "INFO_COLUMNS", "MAX_EVENTS",
    "EventDetail", "event_detail", "host_kinds", "nesting",
]
