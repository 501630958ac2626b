"""The cross-rank reduce: rank summaries in, the report's ``"ranks"`` section out.

    section = reduce_ranks(summaries)          # -> dict (times in µs), JSON-ready

Reads only :class:`~traceprobe.ranks.summary.RankSummary` objects (never a trace), so the
same code runs after the local engine and after a Dask cluster. Definitions of every
figure: docs/FIGURES.md, "Ranks". In short:

* **matching**: a call's key is (process group, ``Seq``) where the trace records a sequence
  number, else (process group, ProfilerStep it starts in, its index among that group's
  calls in that step) — the fallback by order, which assumes every rank's trace holds the
  same steps' calls. A key found on two ranks or more with one collective name is one
  collective; keys whose names disagree are counted as ``mismatched`` and left out.
* per collective: ``duration`` = the shortest participant's call (the one that waited least;
  on an aligned clock, the last to arrive), bandwidth from it (see
  :mod:`traceprobe.ranks.comms`); on one clock (:mod:`traceprobe.ranks.clock`) also the
  arrival ``skew`` (last − first start), the ``last_rank``, its ``late`` time (its start −
  the median start of the other participants) and ``wait`` (Σ over participants of each
  one's wait: last start − own start, but never more than its own call lasted — a call
  cannot wait longer than it ran, so a wait past that is a clock or matching error, not
  time spent; the waits of a rank therefore sum to at most its collective time, and the rest
  of its call time is ``transfer``).
"""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Sequence
from typing import Any

from traceprobe.ranks.clock import Clock, align
from traceprobe.ranks.comms import Call, bus_factor
from traceprobe.ranks.summary import RankSummary

TOP = 10
QUANTILES = (("min", 0.0), ("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))
TABLE_QUANTILES = (
    "step_median_us", "step_max_us", "busy_us", "utilization", "comm_us", "hidden_fraction",
    "idle_us", "collective_us", "wait_us", "transfer_us",
)

Key = tuple[str, Any, int]


def reduce_ranks(summaries: Sequence[RankSummary]) -> dict[str, Any]:
    ss = list(summaries)
    ranks, rank_note = _rank_ids(ss)
    keyed = [_keys(s) for s in ss]
    coll, mismatched = _match(keyed)
    ends = [[(i, c.end_ns) for i, c in parts] for parts in coll.values()]
    clock = align([s.host for s in ss], ranks, ends)
    colls = [_collective(k, parts, ranks, clock) for k, parts in coll.items()]
    per_rank = _per_rank(len(ss), coll, colls, clock.mode != "none")
    table = [_row(s, ranks[i], per_rank[i]) for i, s in enumerate(ss)]
    table.sort(key=lambda r: r["rank"])
    seqs = {c.seq is not None for s in ss for c in s.calls}
    notes = [rank_note]
    if mismatched:
        notes.append(f"{mismatched} call keys named different collectives on different ranks: "
                     "left out (the traces may hold different steps)")
    notes += _step_notes(ss, ranks)
    notes += [f"rank {ranks[i]} ({s.trace}): {n}" for i, s in enumerate(ss) for n in s.notices]
    out: dict[str, Any] = {
        "count": len(ss),
        "clock": {
            "mode": clock.mode,
            "how": clock.how,
            "offsets_us": {str(ranks[i]): o / 1000 for i, o in enumerate(clock.offsets_ns)},
            "residual_us": None if clock.residual_ns is None else clock.residual_ns / 1000,
        },
        "matching": {frozenset(): "none", frozenset({True}): "seq",
                     frozenset({False}): "order"}.get(frozenset(seqs), "seq+order"),
        "notes": notes,
        "table": table,
        "quantiles": {c: _quantiles([r[c] for r in table]) for c in TABLE_QUANTILES},
        "stragglers": _stragglers(table, colls) if clock.mode != "none" else None,
        "collectives": colls,
        "slowest": _top(colls, "duration_us"),
        "most_skewed": _top(colls, "skew_us") if clock.mode != "none" else [],
    }
    out["headlines"] = _headlines(out)
    return out


# ----------------------------------------------------------------------------- ranks


def _step_notes(ss: list[RankSummary], ranks: list[int]) -> list[str]:
    """Collectives without sequence numbers are paired by ProfilerStep number: say so when
    the ranks' step annotations differ (the pairing, stragglers and waits may then be off)."""
    if all(c.seq is not None for s in ss for c in s.calls):
        return []
    numbers = [tuple(n for n, _, _ in s.steps) for s in ss]
    if len(set(numbers)) <= 1 and all(len(set(n)) == len(n) for n in numbers):
        return []
    odd = [ranks[i] for i, n in enumerate(numbers) if n != numbers[0] or len(set(n)) != len(n)]
    return [f"the ranks' ProfilerStep annotations differ (ranks {_few(odd)} differ from rank "
            f"{ranks[0]}, or repeat a step number): collectives are paired by step number, so "
            "the pairing, the stragglers and the waits may be wrong; profile every rank with "
            "the same schedule"]


def _few(xs: list[int]) -> str:
    return ", ".join(map(str, xs[:8])) + (", ..." if len(xs) > 8 else "")


def _rank_ids(ss: list[RankSummary]) -> tuple[list[int], str]:
    hs = [s.rank for s in ss]
    if all(h is not None for h in hs) and len(set(hs)) == len(hs):
        return [int(h) for h in hs if h is not None], "ranks from each trace's distributedInfo"
    return list(range(len(ss))), "ranks numbered by file order (the traces name no distinct ranks)"


def _keys(s: RankSummary) -> list[tuple[Key, Call]]:
    starts = [st for _, st, _ in s.steps]
    seen: dict[tuple[str, Any], int] = {}
    out = []
    for c in s.calls:
        if c.seq is not None:
            base: tuple[str, Any] = (c.group, ("seq", c.seq))
        else:
            j = bisect.bisect_right(starts, c.start_ns) - 1
            inside = j >= 0 and c.start_ns < s.steps[j][2]
            base = (c.group, ("step", s.steps[j][0]) if inside else ("step", None))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.append(((base[0], base[1], n), c))
    return out


def _match(keyed: list[list[tuple[Key, Call]]]) -> tuple[dict[Key, list[tuple[int, Call]]], int]:
    found: dict[Key, list[tuple[int, Call]]] = {}
    for i, calls in enumerate(keyed):
        for k, c in calls:
            found.setdefault(k, []).append((i, c))
    out, bad = {}, 0
    for k, parts in found.items():
        if len(parts) < 2:
            continue
        if len({c.name for _, c in parts}) > 1:
            bad += 1
            continue
        out[k] = parts
    return out, bad


# ----------------------------------------------------------------------------- collectives


def _collective(
    key: Key, parts: list[tuple[int, Call]], ranks: list[int], clock: Clock
) -> dict[str, Any]:
    group, tag, n = key
    first = parts[0][1]
    sizes = {c.nbytes for _, c in parts}
    nbytes = sizes.pop() if len(sizes) == 1 else None
    gsize = first.group_size or len(parts)
    dur = min(c.end_ns - c.start_ns for _, c in parts)
    algbw = nbytes / dur if nbytes is not None and dur > 0 else None  # bytes/ns = GB/s
    factor = bus_factor(first.name, gsize)
    row: dict[str, Any] = {
        "name": first.name,
        "group": group,
        "seq": tag[1] if tag[0] == "seq" else None,
        "step": tag[1] if tag[0] == "step" else None,
        "index": n,
        "ranks": len(parts),
        "group_size": gsize,
        "bytes": nbytes,
        "duration_us": dur / 1000,
        "algbw_gbps": algbw,
        "busbw_gbps": None if algbw is None or factor is None else algbw * factor,
        "skew_us": None, "last_rank": None, "late_us": None, "wait_us": None,
    }
    if clock.mode != "none":
        arr = sorted(((c.start_ns - clock.offsets_ns[i], ranks[i], i) for i, c in parts))
        last, last_rank, last_i = arr[-1]
        late = last - statistics.median([a for a, _, _ in arr[:-1]])
        own = {i: c.end_ns - c.start_ns for i, c in parts}
        waits = [(i, max(0, min(last - a, own[i]))) for a, _, i in arr]  # within its call
        row["skew_us"] = (last - arr[0][0]) / 1000
        row["last_rank"] = last_rank
        row["late_us"] = late / 1000
        row["wait_us"] = sum(w for _, w in waits) / 1000
        row["_waits"] = (last_i, late, waits)
    return row


def _per_rank(n: int, coll: dict[Key, list[tuple[int, Call]]], colls: list[dict[str, Any]],
              clocked: bool) -> list[dict[str, Any]]:
    """Per summary: its collective calls, and (on one clock) its waits and lateness."""
    out: list[dict[str, Any]] = [
        {"collectives": 0, "collective_ns": 0, "wait_ns": 0 if clocked else None, "last_at": 0,
         "late_ns": 0, "waited_for_ns": 0}
        for _ in range(n)
    ]
    for parts, row in zip(coll.values(), colls, strict=True):
        for i, c in parts:
            out[i]["collectives"] += 1
            out[i]["collective_ns"] += c.end_ns - c.start_ns
        extra = row.pop("_waits", None)
        if extra is None:
            continue
        last_i, late, waits = extra
        for i, w in waits:
            out[i]["wait_ns"] += w
        out[last_i]["last_at"] += 1
        out[last_i]["late_ns"] += late
        out[last_i]["waited_for_ns"] += sum(w for _, w in waits)
    return out


def _row(s: RankSummary, rank: int, w: dict[str, Any]) -> dict[str, Any]:
    durs = sorted(e - b for _, b, e in s.steps)
    util = None
    if s.busy_ns is not None and s.span_ns > 0 and s.devices:
        util = s.busy_ns / (s.span_ns * s.devices)
    hidden = None
    if s.comm_ns and s.hidden_ns is not None:
        hidden = s.hidden_ns / s.comm_ns
    return {
        "rank": rank,
        "trace": s.trace,
        "host": s.host,
        "steps": len(durs),
        "step_median_us": statistics.median(durs) / 1000 if durs else None,
        "step_max_us": durs[-1] / 1000 if durs else None,
        "span_us": s.span_ns / 1000,
        "devices": s.devices,
        "busy_us": _us(s.busy_ns),
        "utilization": util,
        "comm_us": _us(s.comm_ns),
        "hidden_fraction": hidden,
        "idle_us": _us(s.idle_ns),
        "collectives": w["collectives"],
        "collective_us": w["collective_ns"] / 1000,
        "wait_us": _us(w["wait_ns"]),
        "transfer_us": (None if w["wait_ns"] is None
                        else (w["collective_ns"] - w["wait_ns"]) / 1000),
        "last_at": w["last_at"],
        "late_mean_us": w["late_ns"] / w["last_at"] / 1000 if w["last_at"] else None,
        "waited_for_us": w["waited_for_ns"] / 1000,
    }


def _us(ns: int | None) -> float | None:
    return None if ns is None else ns / 1000


# ----------------------------------------------------------------------------- summaries


def _stragglers(table: list[dict[str, Any]], colls: list[dict[str, Any]]) -> dict[str, Any]:
    """Ranks by how long the others waited for them; per step, the rank last most often."""
    by_rank = sorted(
        (r for r in table if r["last_at"]), key=lambda r: (-r["waited_for_us"], r["rank"])
    )
    steps: dict[Any, dict[int, list[float]]] = {}
    counts: dict[Any, int] = {}
    for c in colls:
        if c["step"] is None or c["last_rank"] is None:
            continue
        counts[c["step"]] = counts.get(c["step"], 0) + 1
        steps.setdefault(c["step"], {}).setdefault(c["last_rank"], []).append(c["late_us"])
    per_step = []
    for step in sorted(steps):
        rank, lates = max(steps[step].items(), key=lambda kv: (len(kv[1]), sum(kv[1]), -kv[0]))
        per_step.append({"step": step, "rank": rank, "last_at": len(lates),
                         "collectives": counts[step], "late_mean_us": sum(lates) / len(lates)})
    return {
        "by_rank": [
            {k: r[k] for k in ("rank", "last_at", "late_mean_us", "waited_for_us")}
            for r in by_rank
        ],
        "by_step": per_step,
    }


def _top(colls: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    have = [c for c in colls if c.get(key) is not None]
    return sorted(have, key=lambda c: -c[key])[:TOP]


def _quantiles(values: list[Any]) -> dict[str, float] | None:
    """Linear-interpolation quantiles (numpy's default) of the defined values."""
    xs = sorted(v for v in values if v is not None)
    if not xs:
        return None
    out = {}
    for name, q in QUANTILES:
        pos = q * (len(xs) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(xs) - 1)
        out[name] = xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
    return out


def _headlines(r: dict[str, Any]) -> list[str]:
    out = []
    q = r["quantiles"].get("step_median_us")
    if q is not None and r["count"] > 1:
        slow = max((x for x in r["table"] if x["step_median_us"] is not None),
                   key=lambda x: (x["step_median_us"], -x["rank"]))
        out.append(f"Step time (median per rank): {q['p50']:.0f} µs across ranks; slowest "
                   f"rank {slow['rank']} at {slow['step_median_us']:.0f} µs")
    st = r["stragglers"]
    if st and st["by_rank"]:
        top = st["by_rank"][0]
        n = max(x["collectives"] for x in r["table"])
        out.append(f"Rank {top['rank']} arrived last at {top['last_at']} of {n} collectives, "
                   f"{top['late_mean_us']:.0f} µs behind the others' median arrival on average;"
                   f" ranks waited {top['waited_for_us']:.0f} µs for it in total")
    bw = [c for c in r["collectives"] if c["busbw_gbps"] is not None]
    if bw:
        med = statistics.median(c["busbw_gbps"] for c in bw)
        out.append(f"Collective bus bandwidth: median {med:.2f} GB/s over {len(bw)} collectives")
    if r["clock"]["mode"] == "none":
        out.append("Ranks are not on one clock: no skew, waits or stragglers (see clock)")
    return out
