"""The timeline frames and the per-device/per-stream figures as CSV files in a directory.

    write_csv(timelines, "out/", reports=reports, force=False)   # reports: Reports

writes, for one trace or several (a ``trace`` column, first, tells them apart):

``gpu.csv``      one row per kernel, copy, memset (timeline ``gpu`` frame)
``cpu.csv``      one row per host event (timeline ``cpu`` frame)
``steps.csv``    one row per ProfilerStep window
``devices.csv``  the report's ``devices`` rows
``streams.csv``  the report's ``streams`` rows
``copies.csv``   the report's ``copies`` rows (bandwidth per direction and memory kind)
``step_breakdown.csv``  one row per (step, device, part or region): ``what`` is "part" or "region"
``idle_causes.csv``     one row per (device, cause), then its children (``parent`` set)
``efficiency.csv``      the report's ``efficiency.rows`` (one per op shape: FLOPs, bytes,
                        achieved TFLOP/s and GB/s, roof fraction)
``efficiency_categories.csv``  the report's ``efficiency.categories``

Frame times stay exact integer nanoseconds (``start_ns``, ``end_ns``, ``dur_ns``);
report figures keep the report's units (µs, fractions). The ``step`` column of the
summaries is empty for the analysed window and the step number for each row of
``--step all``. Undefined figures are empty cells, never ``NaN``. All files are
written or none (see :func:`traceprobe.output.atomic_directory`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from traceprobe.output import atomic_directory, spreadsheet_safe
from traceprobe.render import as_report
from traceprobe.render.units import us
from traceprobe.report.model import plain
from traceprobe.timeline import Timeline

if TYPE_CHECKING:
    from traceprobe.report.model import Report

FILES = ("gpu.csv", "cpu.csv", "steps.csv", "devices.csv", "streams.csv", "copies.csv",
         "step_breakdown.csv", "idle_causes.csv", "efficiency.csv", "efficiency_categories.csv")


def write_csv(
    timelines: Timeline | Sequence[Timeline],
    directory: str | os.PathLike[str],
    *,
    reports: Sequence[Report | Mapping[str, Any]] | None = None,
    force: bool = False,
) -> list[Path]:
    """Write the CSV files for ``timelines`` into ``directory``; returns their paths.

    ``reports`` are the Reports of the same timelines, in order; without them
    each timeline is analysed here (whole trace, all devices).
    """
    tls = [timelines] if isinstance(timelines, Timeline) else list(timelines)
    if reports is None:
        from traceprobe.report import analyze

        reports = [analyze(tl) for tl in tls]
    reps: list[Report] = [as_report(r) for r in reports]  # a saved report dict is read back
    if len(reps) != len(tls):
        raise ValueError(f"{len(tls)} timelines but {len(reports)} reports")
    frames = {
        "gpu.csv": pd.concat([_frame(tl.gpu, tl.source) for tl in tls], ignore_index=True),
        "cpu.csv": pd.concat([_frame(tl.cpu, tl.source) for tl in tls], ignore_index=True),
        "steps.csv": pd.concat([_frame(tl.steps, tl.source) for tl in tls], ignore_index=True),
        "devices.csv": _summary(reps, "devices"),
        "streams.csv": _summary(reps, "streams"),
        "copies.csv": _summary(reps, "copies"),
        "step_breakdown.csv": _breakdown(reps),
        "idle_causes.csv": _causes(reps),
        "efficiency.csv": _efficiency(reps, "rows"),
        "efficiency_categories.csv": _efficiency(reps, "categories"),
    }
    with atomic_directory(directory, list(FILES), force=force) as scratch:
        for name in FILES:
            _safe_cells(frames[name]).to_csv(scratch / name, index=False, na_rep="")
    return [Path(directory) / name for name in FILES]


def _safe_cells(df: pd.DataFrame) -> pd.DataFrame:
    """Text cells as :func:`traceprobe.output.spreadsheet_safe` (each distinct value once)."""
    out = df
    for col in df.columns:
        s = df[col]
        if s.dtype != object:
            continue
        values = pd.unique(s)
        fixed = {v: spreadsheet_safe(v) for v in values if isinstance(v, str)}
        changed = {v: f for v, f in fixed.items() if f != v}
        if changed:
            if out is df:
                out = df.copy()
            out[col] = s.map(lambda v, c=changed: c.get(v, v) if isinstance(v, str) else v)
    return out


def _frame(df: pd.DataFrame, source: str) -> pd.DataFrame:
    out = df.rename(columns={"start": "start_ns", "end": "end_ns"}).reset_index(drop=True)
    dur = out.pop("dur_ns") if "dur_ns" in out.columns else out["end_ns"] - out["start_ns"]
    out.insert(list(out.columns).index("end_ns") + 1, "dur_ns", dur)
    out.insert(0, "trace", pd.Series([source] * len(out), dtype="object"))
    return out


def _summary(reports: Sequence[Report], key: str) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for r in reports:
        steps = [(s.window.step, s) for s in r.steps or ()]
        for step, w in [(None, r), *steps]:
            for row in getattr(w, key) or ():
                # the report's rows in the JSON's units (µs): the schema's columns
                rows.append({"trace": r.trace, "step": step, "span_us": us(w.span_ns),
                             **plain(row)})
    columns = ["trace", "step", "span_us"]
    for row in rows:  # union of the keys, in the order first seen (schema order)
        columns += [k for k in row if k not in columns]
    df = pd.DataFrame(rows, columns=columns)
    if not df.empty:
        df["step"] = df["step"].astype("Int64")
    return df


def _breakdown(reports: Sequence[Report]) -> pd.DataFrame:
    rows = [
        {"trace": r.trace, "step": b.step, "device": b.device,
         "start_us": us(b.start_ns), "end_us": us(b.end_ns), "what": what,
         "name": p.name, "us": us(p.ns), "share": p.share}
        for r in reports
        for b in r.step_breakdown or ()
        for what, parts in (("part", b.parts), ("region", b.regions))
        for p in parts or ()
    ]
    cols = ["trace", "step", "device", "start_us", "end_us", "what", "name", "us", "share"]
    df = pd.DataFrame(rows, columns=cols)
    if not df.empty:
        df["device"] = df["device"].astype("Int64")
    return df


def _causes(reports: Sequence[Report]) -> pd.DataFrame:
    rows = []
    for r in reports:
        for h in (r.host.devices if r.host is not None else None) or ():
            for c in h.causes or ():
                base = {"trace": r.trace, "device": h.device, "idle_us": us(h.idle_ns)}
                rows.append({**base, "parent": "", "name": c.name, "kind": c.kind,
                             "us": us(c.ns), "share": c.share, "calls": c.calls})
                rows += [{**base, "parent": c.name, "name": k.name, "kind": "",
                          "us": us(k.ns), "share": k.share, "calls": None}
                         for k in c.children or ()]
    cols = ["trace", "device", "idle_us", "parent", "name", "kind", "us", "share", "calls"]
    df = pd.DataFrame(rows, columns=cols)
    if not df.empty:
        df["calls"] = df["calls"].astype("Int64")
    return df


def _efficiency(reports: Sequence[Report], key: str) -> pd.DataFrame:
    rows = [{"trace": r.trace, "device": (r.efficiency or {}).get("device"), **x}
            for r in reports for x in (r.efficiency or {}).get(key) or []]
    columns = ["trace", "device"]
    for row in rows:
        columns += [k for k in row if k not in columns]
    return pd.DataFrame(rows, columns=columns)
