"""One rank's compact summary, computed where the trace file is.

    s = summarise("rank3.pt.trace.json.gz")     # -> RankSummary (a few KB), or Failure

The summary keeps what the cross-rank reduce needs and nothing that grows with the
trace's size but its collective calls and step windows: per-rank figures from the
ordinary report (:func:`traceprobe.report.analyze`) and the calls of
:func:`traceprobe.ranks.comms.read_calls`. It is plain data (pickles, compares equal),
so that the local and the Dask engines hand the reduce exactly the same objects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from traceprobe.errors import TraceError, TraceprobeError
from traceprobe.ranks.comms import Call, read_calls

if TYPE_CHECKING:
    from traceprobe.report.model import Report
    from traceprobe.timeline import Timeline


@dataclass(frozen=True)
class RankSummary:
    """One trace, reduced to what the rank table, stragglers and collectives read."""

    trace: str
    rank: int | None  # distributedInfo.rank
    world_size: int | None
    host: str | None  # kineto's top-level host_name
    span_ns: int
    devices: int  # GPUs with activity
    busy_ns: int | None  # summed over the rank's GPUs (None: no GPU)
    idle_ns: int | None
    comm_ns: int | None  # communication-kernel time (GPU traces)
    hidden_ns: int | None  # of it, overlapped by compute on the same GPU
    steps: tuple[tuple[int, int, int], ...]  # (ProfilerStep number, start ns, end ns)
    calls: tuple[Call, ...]
    # what the loader salvaged ("notice: ...") or read leniently ("warning: ..."), one line each
    notices: tuple[str, ...] = ()


@dataclass(frozen=True)
class Failure:
    """A file that could not be summarised: the fields of the TraceError to raise."""

    trace: str
    problem: str
    fix: str

    def error(self) -> TraceError:
        return TraceError(self.trace, self.problem, self.fix)


def summarise(
    path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> RankSummary | Failure:
    """Summarise one trace file (or fsspec URL, opened here with ``storage_options``); a
    file that cannot be read gives a :class:`Failure`."""
    from traceprobe.load import load
    from traceprobe.report import analyze

    try:
        tl = load(path, storage_options)
        rep = analyze(tl)
    except TraceError as e:
        return Failure(e.path, e.problem, e.fix)
    except TraceprobeError as e:
        return Failure(str(path), e.message, "")
    try:
        return summary_of(path, tl, rep, storage_options)
    except TraceError as e:  # the object changed or the network failed between the reads
        return Failure(e.path, e.problem, e.fix)


def summary_of(
    path: str | os.PathLike[str], tl: Timeline, rep: Report,
    storage_options: Mapping[str, Any] | None = None,
) -> RankSummary:
    """The summary of a trace already loaded (``tl``) and analysed (``rep``, its default
    window): only its collective calls are read from ``path`` again."""
    calls, header = read_calls(path, storage_options)
    meta = tl.meta
    has_gpu = bool(rep.devices)
    comm = rep.overlap.comm_compute
    st = tl.steps.sort_values("start", kind="stable")
    steps = tuple(
        (int(n), int(s), int(e))
        for n, s, e in zip(st["step"].tolist(), st["start"].tolist(), st["end"].tolist(),
                           strict=True)
    )
    return RankSummary(
        trace=str(path),
        rank=meta.rank,
        world_size=meta.world_size,
        host=header.host,
        span_ns=int(rep.span_ns),
        devices=len(rep.devices),
        busy_ns=sum(int(d.busy_ns) for d in rep.devices) if has_gpu else None,
        idle_ns=sum(int(d.idle_ns) for d in rep.devices) if has_gpu else None,
        comm_ns=sum(int(c.comm_ns) for c in comm) if has_gpu else None,
        hidden_ns=sum(int(c.hidden_ns) for c in comm) if has_gpu else None,
        steps=steps,
        calls=tuple(calls),
        notices=input_notices(rep),
    )


def input_notices(rep: Any) -> tuple[str, ...]:
    """The report's salvage and lenient-reading lines, as the CLI prints them."""
    out = []
    if rep.salvaged is not None:
        out.append(f"notice: {rep.salvaged['reason']}; analysing the "
                   f"{rep.salvaged['events_kept']:,} complete events before the cut")
    out += [f"warning: {w}" for w in rep.warnings]
    return tuple(out)


def full_report(
    path: str | os.PathLike[str], storage_options: Mapping[str, Any] | None = None
) -> Any:
    """The ordinary full report of one trace (for ``--rank R``): its
    :class:`~traceprobe.report.model.Report` (the renderers take it; the JSON renderer
    writes its ``to_dict``), or a :class:`Failure`."""
    from traceprobe.load import load
    from traceprobe.report import analyze

    try:
        return analyze(load(path, storage_options))
    except TraceError as e:
        return Failure(e.path, e.problem, e.fix)
