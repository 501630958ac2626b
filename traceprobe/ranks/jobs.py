"""Ranks of one job among traces analysed one by one: the cross-rank headline, per-rank
communication split into waiting and transfer, and the ``--ranks`` hint.

    lines = job_lines(files, timelines, reports)   # [] unless some traces are ranks of one job

Plain ``traceprobe analyze`` of a folder of ranks reports each trace on its own, where a
rank's communication kernels look "hidden" or "exposed" though most of their time may be
waiting for a slower rank. These lines say so: the cross-rank reduce
(:func:`traceprobe.ranks.reduce_ranks`) run on the traces already loaded and analysed (only
their collective calls are read again), in a few sentences.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from traceprobe.metrics.runs import runs
from traceprobe.ranks.reduce import reduce_ranks
from traceprobe.ranks.summary import summary_of

if TYPE_CHECKING:
    from traceprobe.report.model import Report
    from traceprobe.timeline import Timeline


def job_lines(files: Sequence[str | os.PathLike[str]], timelines: Sequence[Timeline],
              reports: Sequence[Report]) -> list[str]:
    """For each job among the traces (metrics/runs.py: distributedInfo ranks in one folder),
    a heading, the cross-rank headlines, each rank's collective time as waiting + transfer,
    and the command that gives the whole many-rank summary."""
    out: list[str] = []
    for run in runs([t.meta for t in timelines]):
        if not run.job:
            continue
        section = reduce_ranks([summary_of(files[i], timelines[i], reports[i])
                                for i in run.traces])
        out.append(f"Ranks of one job: the {len(run.traces)} traces in {run.folder} "
                   f"(distributedInfo, world size {run.world_size})")
        out += [f"  * {h}" for h in section["headlines"]]
        for row in section["table"]:
            if row["wait_us"] is None or not row["collective_us"]:
                continue
            share = row["wait_us"] / row["collective_us"]
            out.append(f"  * Rank {row['rank']}: {_us(row['collective_us'])} in collectives, "
                       f"{_us(row['wait_us'])} of it ({share:.0%}) waiting for other ranks, "
                       f"{_us(row['transfer_us'])} transfer")
        out.append(f"  for the rank table, stragglers and collectives: traceprobe analyze "
                   f"--ranks {run.folder}")
    return out


def _us(us: float) -> str:
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.0f} µs"
