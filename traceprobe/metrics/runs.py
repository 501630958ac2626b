"""Runs and ranks: which traces are ranks of one job, which are separate runs.

Several traces are **ranks of one job** only when the traces say so: each carries
``distributedInfo`` with a ``rank`` and a ``world_size`` above 1, they agree on the world
size, their ranks differ, and their files lie in one folder (as ``tensorboard_trace_handler``
writes one job's ranks into one run folder). Every other trace is a **separate run**.
Runs are grouped by folder, as TensorBoard groups them (one run per folder). Device overlap
across traces (``cross_trace``) is computed between ranks of one job only: separate runs
were not recorded at the same time, so their overlap means nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from traceprobe.timeline import TraceMeta
from traceprobe.urls import is_url


@dataclass(frozen=True)
class Run:
    folder: str
    traces: tuple[int, ...]  # indices into the report's traces
    job: bool  # ranks of one distributed job (distributedInfo), else separate run(s)
    world_size: int | None = None


def folder_of(source: str) -> str:
    """The folder of a trace's path; a URL's prefix (``s3://b/job/r0.json`` -> ``s3://b/job``)."""
    return source.rsplit("/", 1)[0] if is_url(source) else str(Path(source).parent)


def runs(metas: Sequence[TraceMeta]) -> tuple[Run, ...]:
    """The traces grouped into jobs and separate runs, by folder (see the module docstring)."""
    by_folder: dict[str, list[int]] = {}
    for i, m in enumerate(metas):
        by_folder.setdefault(folder_of(m.source), []).append(i)
    out = []
    for folder, idx in by_folder.items():
        ranked = [i for i in idx if metas[i].rank is not None and (metas[i].world_size or 0) > 1]
        sizes = {metas[i].world_size for i in ranked}
        ranks = [metas[i].rank for i in ranked]
        job = ranked if len(ranked) >= 2 and len(sizes) == 1 and len(set(ranks)) == len(ranks) \
            else []
        if job:
            out.append(Run(folder, tuple(job), True, metas[job[0]].world_size))
        rest = tuple(i for i in idx if i not in job)
        if rest:
            out.append(Run(folder, rest, False))
    return tuple(out)
