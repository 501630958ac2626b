"""Putting ranks on one clock, or saying that they cannot be.

Rules (also in docs/FIGURES.md, "Ranks"):

* **shared** — every trace names the same host (kineto's top-level ``host_name``): one
  host clock, offsets 0.
* **aligned** — otherwise, when collectives were matched across ranks: a blocking
  collective ends at (nearly) the same instant on every participant, since no rank can
  leave before the last one has arrived and the data has moved. For each collective k
  let m_k be the median end over its participants; a clock's offset is the median, over
  its collectives, of ``end − m_k``. Ranks that name the same host share one offset (one
  clock); ranks without a host name get one each. Offsets are then given relative to the
  lowest rank's clock. ``residual`` is the median ``|end − offset − m_k|`` afterwards: how
  well the ends agree once aligned (the alignment's own error, roughly).
* **none** — no shared host and no matched collective: per-rank figures only (no skew,
  waits or stragglers).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Clock:
    mode: str  # "shared" | "aligned" | "none"
    how: str
    offsets_ns: tuple[int, ...]  # per summary (file order); subtract from its times
    residual_ns: int | None


def align(
    hosts: Sequence[str | None],
    ranks: Sequence[int],
    ends: Sequence[Sequence[tuple[int, int]]],
) -> Clock:
    """``hosts[i]``, ``ranks[i]``: summary i's host and rank; ``ends[k]``: collective k's
    participants as (summary index, end ns on that summary's own clock)."""
    n = len(hosts)
    if n <= 1 or (hosts[0] is not None and all(h == hosts[0] for h in hosts)):
        where = f"host {hosts[0]}" if n and hosts[0] else "one trace"
        return Clock("shared", f"all traces come from {where}: one clock", (0,) * n, None)
    ends = [e for e in ends if len(e) >= 2]
    if not ends:
        return Clock(
            "none",
            "the traces name different (or no) hosts and no collective was matched across "
            "ranks to align their clocks: per-rank figures only",
            (0,) * n,
            None,
        )
    group = [h if h is not None else f"#{i}" for i, h in enumerate(hosts)]
    devs: dict[str, list[int]] = {}
    for parts in ends:
        m = _median([e for _, e in parts])
        for i, e in parts:
            devs.setdefault(group[i], []).append(e - m)
    off = {g: _median(v) for g, v in devs.items()}
    ref = min(range(n), key=lambda i: ranks[i])
    base = off.get(group[ref], 0)
    offsets = tuple(off.get(group[i], 0) - base for i in range(n))
    resid = []
    for parts in ends:
        al = [e - offsets[i] for i, e in parts]
        m = _median(al)
        resid += [abs(a - m) for a in al]
    return Clock(
        "aligned",
        "clocks aligned on collective ends (every participant leaves a collective at about the "
        "same instant); ranks naming the same host share one offset",
        offsets,
        _median(resid),
    )


def _median(xs: Sequence[int]) -> int:
    return int(round(statistics.median(xs)))
