"""Columns to a Timeline: the last stage of loading, where pandas comes in.

``timeline(columns) -> Timeline`` assembles the frames of
:mod:`traceprobe.timeline` from the arrays :func:`traceprobe.kineto.collect`
gathered, and works out what is derived rather than read:

* copies: direction and memory kinds from the name
  (``"Memcpy HtoD (Pageable -> Device)"``), else ``args.kind`` (ROCm); a copy
  whose ``fromDevice`` and ``toDevice`` differ is ``"PtoP"`` with ``peer`` the
  other device. ROCm copies that lack ``bytes`` take ``size`` from the
  hipMemcpy* call with the same correlation.
* ``comm`` marks kernels whose name contains ``nccl`` or ``rccl`` (any case).
  Names are parsed once per distinct name, not once per row.
* ``steps`` come from ``ProfilerStep#N`` events (``user_annotation``, or
  ``cpu_op`` in older traces) of the thread that has the most of them; a
  repeated N keeps its first window, and a window is cut at the next one's start.
* ``meta``: the format (``kineto``, ``kineto-2021``, ``rocm``, ``cpu-only``) and
  the top-level fields.

String columns are ``object`` dtype, as the Timeline contract says, and every
row shares the one ``str`` object of its value, so they are compact and
``.astype("category")`` is cheap.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from typing import Any

import msgspec
import numpy as np
import pandas as pd

from traceprobe.errors import TraceError
from traceprobe.intervals import sorted_unique
from traceprobe.load.files import REEXPORT
from traceprobe.load.schema import GPU_CATEGORIES, RENAMED_2021, Columns
from traceprobe.timeline import (
    COPY_KINDS,
    CPU_COLUMNS,
    GPU_COLUMNS,
    OPTIONAL_CPU_COLUMNS,
    OPTIONAL_GPU_COLUMNS,
    OPTIONAL_STEP_COLUMNS,
    STEP_COLUMNS,
    Timeline,
    TraceMeta,
    empty_frame,
)

STEP_KINDS = frozenset({"user_annotation", "cpu_op"})
STEP_PREFIX = "ProfilerStep#"
AMD_MARKS = ("AMD", "Radeon", "Instinct")

_COPY_NAME = re.compile(r"Memcpy\s+([A-Za-z])to([A-Za-z])\b(?:\s*\(\s*(\w+)\s*->\s*(\w+)\s*\))?")
_COMM = re.compile(r"nccl|rccl", re.IGNORECASE)


def timeline(cols: Columns) -> Timeline:
    """The Timeline of one trace's collected columns."""
    _check_span(cols)
    # interned, so that comparisons with the literals in metrics hit the identity shortcut
    kind_u = np.array(
        [sys.intern(GPU_CATEGORIES.get(c) or RENAMED_2021.get(c, c)) for c in cols.cats] or [""],
        object,
    )
    names_u = np.empty(len(cols.names), object)
    names_u[:] = cols.names
    cpu_df = _cpu_frame(cols.cpu, kind_u, names_u, cols.texts)
    gpu_df = _gpu_frame(cols.gpu, kind_u, names_u, cols.sizes, cols.texts)
    steps, thread, step_issues = _steps(cols.cpu, kind_u, names_u)
    extra: dict[str, Any] = {"complete_events": cols.complete, "skipped": dict(cols.skipped)}
    if cols.span:
        extra["profiler_span_ns"] = cols.span
    if cols.clamped:
        extra["clamped_durations"] = cols.clamped
    if thread:
        extra["steps_thread"] = thread
    if step_issues:
        extra["steps_extent_ns"] = step_issues.pop("extent")
    if cols.header.displayTimeUnit is not None:
        extra["display_time_unit"] = cols.header.displayTimeUnit
    if cols.salvaged is not None:
        extra["salvaged"] = dict(cols.salvaged)
    unprofiled = _unprofiled(cols.header.traceprobeUnprofiled)
    if unprofiled:
        extra["unprofiled"] = unprofiled
    extra.update({k: v for k, v in cols.notes.items() if k != "lenient"})
    warnings = _warnings(cols, gpu_df) + _step_warnings(step_issues)
    if warnings:
        extra["warnings"] = warnings
    meta = _meta(cols, kind_u, names_u, gpu_df.empty, extra)
    return Timeline(gpu=gpu_df, cpu=cpu_df, steps=steps, meta=meta)


def _unprofiled(value: Any) -> dict[str, float]:
    """The recorder's unprofiled timing (top-level ``traceprobeUnprofiled``: ``host_ms``, the
    host's time for one step begun on an idle GPU, and ``step_ms``, the loop's ms per step),
    its positive finite numbers only; {} when absent or of another shape."""
    if not isinstance(value, dict):
        return {}
    out = {}
    for key in ("host_ms", "step_ms"):
        v = value.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and 0 < v < float("inf"):
            out[key] = float(v)
    return out


def _warnings(cols: Columns, gpu: pd.DataFrame) -> list[str]:
    """What was read by a lenient rule, one sentence each (the report shows them)."""
    out = list(cols.warnings)
    lenient = cols.notes.get("lenient", {})
    if lenient.get("no_dur"):
        out.append(
            f"{lenient['no_dur']:,} complete ('X') event(s) have no dur (absent or null) "
            "and count as zero-length"
        )
    if cols.clamped:
        out.append(f"{cols.clamped:,} event(s) have a negative dur, counted as zero-length")
    if lenient.get("begin_end"):
        out.append(
            f"{lenient['begin_end']:,} begin/end ('B'/'E') event(s) are not analysed "
            "(only complete 'X' events are); work written that way is missing from the figures"
        )
    odd = {k[3:]: n for k, n in sorted(lenient.items()) if k.startswith("ph:")}
    if odd:
        named = ", ".join(f"{ph!r} {n:,}" if ph else f"none {n:,}" for ph, n in odd.items())
        out.append(
            f"{sum(odd.values()):,} event(s) have no ph or one the trace format does not "
            f"define ({named}): not analysed (only complete 'X' events are)"
        )
    if lenient.get("no_cat"):
        out.append(
            f"{lenient['no_cat']:,} complete ('X') event(s) have no cat: read as host events "
            "of no kind, so none of them counts as GPU work"
        )
    if not gpu.empty:
        work = gpu["kind"].to_numpy() != "kernel"
        unsized = int((work & (gpu["bytes"].to_numpy() < 0)).sum())
        if unsized:
            out.append(
                f"{unsized:,} cop{'y or memset has' if unsized == 1 else 'ies or memsets have'} "
                "no usable args.bytes (absent, negative, not a whole number, or beyond int64): "
                "counted as 0 bytes"
            )
        inferred = int(gpu.attrs.pop("sizes_inferred", 0))
        if inferred:
            out.append(
                f"{inferred:,} cop{'y takes its' if inferred == 1 else 'ies take their'} size "
                "from the args.size of the hipMemcpy* call of the same correlation (no "
                "args.bytes)"
            )
        lost = int((gpu["device"] < 0).sum())
        if lost:
            out.append(
                f"{lost:,} GPU activit{'y has' if lost == 1 else 'ies have'} no device "
                "(args.device is not a whole number, or it is absent and pid holds no "
                "number): shown as GPU -1"
            )
    return out


def _check_span(cols: Columns) -> None:
    """Refuse events so far apart that their span (an int64 of ns) would overflow: every
    window, idle time and utilization would come out negative (about 292 years)."""
    ends = [(int(d["start"].min()), int(d["end"].max())) for d in (cols.cpu, cols.gpu)
            if d and len(d["start"])]
    if not ends:
        return
    lo, hi = min(a for a, _ in ends), max(b for _, b in ends)
    if hi - lo > np.iinfo(np.int64).max:
        raise TraceError(
            cols.source,
            f"the events span {(hi - lo) / 1e3:.3g} µs (from ts {lo / 1e3:.6g} to "
            f"{hi / 1e3:.6g} µs), more than int64 nanoseconds hold (about 292 years)",
            f"the timestamps are damaged; {REEXPORT}",
        )


def _step_warnings(issues: dict[str, Any]) -> list[str]:
    out = []
    if issues.get("repeated"):
        out.append(
            f"{issues['repeated']:,} ProfilerStep event(s) repeat a step number (e.g. "
            f"ProfilerStep#{issues['example']}): each number keeps its first window; the "
            "whole-trace window still runs from the first step's start to the last one's end"
        )
    if issues.get("nested"):
        out.append(
            f"{issues['nested']:,} ProfilerStep event(s) start inside another step: each "
            "step's window ends where the next one starts; the whole-trace window still runs "
            "from the first step's start to the last one's end"
        )
    return out


def _cpu_frame(
    c: dict[str, np.ndarray], kind_u: np.ndarray, names_u: np.ndarray, texts: list[bytes]
) -> pd.DataFrame:
    if not c:
        return empty_frame(CPU_COLUMNS, OPTIONAL_CPU_COLUMNS)
    return pd.DataFrame(
        {
            "kind": _obj(kind_u[c["cat"]]),
            "name": _obj(names_u[c["name"]]),
            "pid": c["pid"],
            "tid": c["tid"],
            "start": c["start"],
            "end": c["end"],
            "correlation": c["correlation"],
            "external_id": c["external_id"],
            "dur_ns": c["end"] - c["start"],
            "input_dims": _texts(c.get("input_dims"), texts, len(c["start"])),
            "input_types": _texts(c.get("input_types"), texts, len(c["start"])),
            "concrete_inputs": _texts(c.get("concrete_inputs"), texts, len(c["start"])),
        },
        copy=False,
    )


def _gpu_frame(
    g: dict[str, Any], kind_u: np.ndarray, names_u: np.ndarray, sizes: dict[int, int],
    texts: list[bytes],
) -> pd.DataFrame:
    if not g:
        return empty_frame(GPU_COLUMNS, OPTIONAL_GPU_COLUMNS)
    kind = kind_u[g["cat"]]
    codes = g["name"]
    # copy direction, memory kinds and the comm flag: parsed once per distinct name
    per_name = np.full((len(names_u), 4), "", object)
    for c in sorted_unique(codes).tolist():
        name = str(names_u[c])
        per_name[c] = (*map(sys.intern, _copy_info(name)), bool(_COMM.search(name)))
    copy_kind, src_kind, dst_kind = (per_name[codes, j] for j in range(3))
    comm = per_name[codes, 3].astype(bool) & (kind == "kernel")
    not_copy = kind != "memcpy"
    copy_kind[not_copy] = src_kind[not_copy] = dst_kind[not_copy] = ""
    for i in np.flatnonzero(~not_copy & (copy_kind == "")).tolist():
        k = g["kind_arg"][i]  # ROCm and unusual names: the direction is in args.kind
        copy_kind[i] = sys.intern(k) if isinstance(k, str) and k in COPY_KINDS else ""
    f, t, device = g["from"], g["to"], g["device"]
    p2p = (f >= 0) & (t >= 0) & (f != t)  # peer-to-peer copies name both ends
    peer = np.where(p2p, np.where(t != device, t, f), -1)
    copy_kind[p2p & ~not_copy] = "PtoP"
    nbytes = g["bytes"]
    inferred = 0
    for i in np.flatnonzero((kind != "kernel") & (nbytes < 0) & (g["correlation"] >= 0)).tolist():
        nbytes[i] = sizes.get(int(g["correlation"][i]), -1)  # ROCm: from hipMemcpy*
        inferred += nbytes[i] >= 0
    nbytes[(kind != "kernel") & (nbytes < 0)] = -1  # a negative size is no size
    df = pd.DataFrame(
        {
            "kind": _obj(kind),
            "name": _obj(names_u[codes]),
            "device": device,
            "stream": g["stream"],
            "start": g["start"],
            "end": g["end"],
            "correlation": g["correlation"],
            "external_id": g["external_id"],
            "bytes": nbytes,
            "copy_kind": _obj(copy_kind),
            "src_kind": _obj(src_kind),
            "dst_kind": _obj(dst_kind),
            "peer": peer,
            "comm": comm,
            "dur_ns": g["end"] - g["start"],
            "grid": _texts(g.get("grid"), texts, len(codes)),
            "block": _texts(g.get("block"), texts, len(codes)),
            **{k: g.get(k, np.full(len(codes), d)) for k, d in (
                ("registers_per_thread", -1), ("shared_memory", -1),
                ("blocks_per_sm", np.nan), ("warps_per_sm", np.nan), ("occupancy", np.nan))},
        },
        copy=False,
    )
    if inferred:
        df.attrs["sizes_inferred"] = int(inferred)
    return df


def _texts(codes: Any, texts: list[bytes], n: int) -> pd.Series:
    """Raw JSON texts (codes into ``texts``) as str, each distinct text decoded once (""
    where absent)."""
    if codes is None or not len(texts) > 1 or not np.any(codes):
        return _obj(np.full(n, "", object))
    canon = np.array([_canonical(t.decode("utf-8", "replace")) for t in texts], object)
    return _obj(canon[codes])


def _canonical(text: str) -> str:
    """Compact JSON (``[16,64,1]``) whatever the file's spacing; the text itself if not JSON."""
    if not text:
        return ""
    try:
        return sys.intern(msgspec.json.encode(msgspec.json.decode(text)).decode())
    except msgspec.DecodeError:
        return sys.intern(text)


def _obj(values: np.ndarray) -> pd.Series:
    return pd.Series(values, dtype=object, copy=False)


def _copy_info(name: str) -> tuple[str, str, str]:
    m = _COPY_NAME.search(name)
    if not m:
        return "", "", ""
    kind = f"{m.group(1).upper()}to{m.group(2).upper()}"
    return (kind if kind in COPY_KINDS else ""), (m.group(3) or ""), (m.group(4) or "")


def _step_number(name: Any) -> int:
    if isinstance(name, str) and name.startswith(STEP_PREFIX):
        n = name[len(STEP_PREFIX) :]
        if n.isascii() and n.isdigit() and len(n) <= 18:  # int64; longer: not a step number
            return int(n)
    return -1


def _steps(
    cpu: dict[str, np.ndarray], kind_u: np.ndarray, names_u: np.ndarray
) -> tuple[pd.DataFrame, list[int] | None, dict[str, Any]]:
    """``ProfilerStep#N`` windows of the thread that has the most of them; and, when some
    repeat a number or start inside another step, how many (and all of them's extent)."""
    if not cpu:
        return empty_frame(STEP_COLUMNS, OPTIONAL_STEP_COLUMNS), None, {}
    step_u = np.array([_step_number(n) for n in names_u], np.int64)
    step = step_u[cpu["name"]]
    rows = np.flatnonzero((step >= 0) & np.array([k in STEP_KINDS for k in kind_u])[cpu["cat"]])
    if not len(rows):
        return empty_frame(STEP_COLUMNS, OPTIONAL_STEP_COLUMNS), None, {}
    threads = list(zip(cpu["pid"][rows].tolist(), cpu["tid"][rows].tolist(), strict=True))
    count = Counter(threads)
    best = max(count, key=lambda k: (count[k], -k[0], -k[1]))
    rows = rows[np.array([t == best for t in threads])]
    start, end = cpu["start"], cpu["end"]
    rows = rows[np.lexsort((end[rows], start[rows]))]  # by start, then end
    issues: dict[str, Any] = {}
    nested = int((start[rows][1:] < np.maximum.accumulate(end[rows])[:-1]).sum())
    _, first = np.unique(step[rows], return_index=True)  # each N once: its first window
    if len(first) < len(rows) or nested:
        repeated = np.setdiff1d(np.arange(len(rows)), first)
        issues = {"extent": [int(start[rows].min()), int(end[rows].max())], "nested": nested,
                  "repeated": len(repeated),
                  "example": int(step[rows][repeated[0]]) if len(repeated) else None}
    rows = rows[np.sort(first)]
    s, e = start[rows], end[rows].copy()
    e[:-1] = np.minimum(e[:-1], s[1:])
    frame = pd.DataFrame({"step": step[rows], "start": s, "end": e, "dur_ns": e - s})
    return frame, list(best), issues


def _opt_int(v: Any) -> int | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and re.fullmatch(r"\s*-?\d+\s*", v):
        return int(v)
    return None


def _hip(cols: Columns, kind_u: np.ndarray, names_u: np.ndarray) -> bool:
    """Whether any runtime call is a HIP one (``hip*``): a ROCm trace."""
    if not cols.cpu:
        return False
    runtime = np.flatnonzero(kind_u == "cuda_runtime")
    called = sorted_unique(cols.cpu["name"][np.isin(cols.cpu["cat"], runtime)])
    return any(str(n).startswith("hip") for n in names_u[called])


def _meta(
    cols: Columns, kind_u: np.ndarray, names_u: np.ndarray, no_gpu: bool, extra: dict[str, Any]
) -> TraceMeta:
    doc = cols.header
    dist = doc.distributedInfo if isinstance(doc.distributedInfo, dict) else {}
    dp = doc.deviceProperties
    props = tuple(p for p in dp if isinstance(p, dict)) if isinstance(dp, list) else ()
    amd = any(
        any(m in str(p.get("name", "")) for m in AMD_MARKS) or "gcnArchName" in p for p in props
    )
    if no_gpu:
        fmt = "cpu-only"
    elif amd or _hip(cols, kind_u, names_u):
        fmt = "rocm"
    elif cols.legacy:
        fmt = "kineto-2021"
    else:
        fmt = "kineto"
    backend = dist.get("backend")
    return TraceMeta(
        source=cols.source,
        format=fmt,
        rank=_opt_int(dist.get("rank")),
        world_size=_opt_int(dist.get("world_size")),
        backend=str(backend) if backend is not None else None,
        device_properties=props,
        base_time_ns=_opt_int(doc.baseTimeNanoseconds),
        schema_version=_opt_int(doc.schemaVersion),
        trace_name=str(doc.traceName) if doc.traceName is not None else None,
        event_count=cols.event_count,
        extra=extra,
    )
