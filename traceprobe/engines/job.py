"""A many-rank job analysed on an engine: summaries there, the reduce here.

    doc = analyze_ranks(files, cluster=None, scheduler=None, jobs=None, rank=None,
                        storage_options=None)
    # -> {"schema": ..., "ranks": {...}, "rank_report": None | one rank's full Report}

The client (this process) receives one :class:`~traceprobe.ranks.summary.RankSummary`
per file and keeps nothing else; ``rank=R`` asks the engine for rank R's full report
too (one trace, analysed where it is). Files may be fsspec URLs: each worker opens its own
(with ``storage_options``, sent with the task; each worker's environment adds its own
credentials), so no trace passes through the client. The first file that fails raises its
:class:`~traceprobe.errors.TraceError` once all have been tried, as the local path does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from traceprobe.engines import choose
from traceprobe.errors import UsageError
from traceprobe.ranks import Failure, full_report, reduce_ranks, summarise

SCHEMA = "traceprobe.ranks/1"  # the many-rank summary: its own shape, its own name


def analyze_ranks(
    files: Sequence[str | Path],
    *,
    cluster: str | None = None,
    scheduler: str | None = None,
    jobs: int | None = None,
    rank: int | None = None,
    progress: bool = False,
    storage_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    paths = [str(f) for f in files]
    if jobs is not None:
        jobs = max(1, min(jobs, len(paths)))  # no more workers than traces, on any engine
    each: Callable[[str], Any] = summarise
    whole: Callable[[str], Any] = full_report
    if storage_options:
        each = partial(summarise, storage_options=dict(storage_options))
        whole = partial(full_report, storage_options=dict(storage_options))
    with choose(cluster=cluster, scheduler=scheduler, jobs=jobs) as engine:
        results = engine.map(each, paths, progress=progress)
        failed = [r for r in results if isinstance(r, Failure)]
        if failed:
            raise failed[0].error()
        section = reduce_ranks(results)
        del results
        full = None
        if rank is not None:
            row = next((r for r in section["table"] if r["rank"] == rank), None)
            if row is None:
                have = [r["rank"] for r in section["table"]]
                raise UsageError(f"--rank {rank}: the job has ranks {min(have)}-{max(have)} "
                                 f"({len(have)} traces); pick one of them")
            full = engine.map(whole, [row["trace"]])[0]
            if isinstance(full, Failure):
                raise full.error()
    return {"schema": SCHEMA, "ranks": section, "rank_report": full}
