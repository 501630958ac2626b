"""Make an N-rank job from real traces: for tests and benchmarks of the many-rank path.

    python scripts/make_ranks.py sample_traces/h200x2/ddp/train --ranks 64 --out /tmp/job \
        [--straggler 5 --delay-us 2000] [--jitter-us 20] [--repeat 1] [--ranks-per-host 8] \
        [--clock-shift-us 5e6] [--seq] [--seed 0]

Rank r copies template ``r % T`` (the T source traces, in file order) and then:

* **collectives** (a source trace's timing events, in order: NCCL kernels with a
  ``Collective name`` argument, else ``record_param_comms`` ops, else ``nccl:``/``gloo:``
  annotations): in "true time" every rank arrives at collective k at ``A_k + d(r, k)``,
  where ``A_k`` is the latest template's own arrival and ``d(r, k)`` is the rank's
  jitter (uniform in [0, jitter]) plus ``--delay-us`` for the ``--straggler`` rank; every
  rank leaves at its template's end plus ``M_k = max_r d(r, k)``; everything after the
  collective moves on by ``M_k`` (so the whole job is slowed by the straggler);
* **clocks**: ranks ``--ranks-per-host`` at a time share a host (``host_name``) and one
  random clock offset in ``±--clock-shift-us``;
* **ranks** renumbered: ``distributedInfo`` (rank, world size, process group of all
  ranks) and the collectives' ``Rank``/``Group size``/``Process Group Ranks`` arguments;
  ``--seq`` also writes a sequence number ``Seq`` on each collective (kineto writes none
  in the sample traces; without it traceprobe matches collectives by order);
* ``--repeat K`` (size multiplier) lays K copies of the template end to end, steps and
  External ids / correlations renumbered, so each file is about K times larger.

The truth the generator used (arrival delays per rank and collective) is written to
``OUT/truth.jsonc`` for tests (not ``.json``: every ``*.json`` in a folder is read as a
trace). Files: ``OUT/rank<r>.pt.trace.json.gz`` (gzip level 1).
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import random
import re
import sys
from pathlib import Path

ID_STRIDE = 10_000_000  # External id / correlation offset per repeat copy
_BACKEND = re.compile(r"^(nccl|gloo|rccl):[a-z_]+$")


def _load(path: Path) -> dict:
    with gzip.open(path, "rt") if path.suffix == ".gz" else path.open() as f:
        doc = json.load(f)
    return doc if isinstance(doc, dict) else {"traceEvents": doc}


def _is_timing(events: list[dict]):  # type: ignore[no-untyped-def]
    xs = [e for e in events if e.get("ph") == "X"]
    if any(e.get("cat") == "kernel" and "Collective name" in (e.get("args") or {}) for e in xs):
        return lambda e: e.get("cat") == "kernel" and "Collective name" in (e.get("args") or {})
    if any(e.get("name") == "record_param_comms" for e in xs):
        return lambda e: e.get("name") == "record_param_comms"
    return lambda e: e.get("cat") == "user_annotation" and bool(_BACKEND.match(e.get("name", "")))


def _span(doc: dict) -> float:
    timed = [e for e in doc["traceEvents"] if "ts" in e]
    lo = min(float(e["ts"]) for e in timed)
    return max(float(e["ts"]) + float(e.get("dur", 0)) for e in timed) - lo


def _repeat(doc: dict, k: int, period: float) -> dict:
    """K copies of the events ``period`` µs apart; step numbers, ids, correlations renumbered."""
    evs = doc["traceEvents"]
    names = (re.match(r"ProfilerStep#(\d+)$", str(e.get("name", ""))) for e in evs)
    steps = [int(m.group(1)) for m in names if m]
    nsteps = (max(steps) - min(steps) + 1) if steps else 0
    out = []
    for j in range(k):
        for e in evs:
            if j and "ts" not in e:
                continue  # metadata events once
            e = copy.deepcopy(e) if j else e
            if j:
                e["ts"] = float(e["ts"]) + j * period
                a = e.get("args")
                if isinstance(a, dict):
                    for key in ("External id", "correlation"):
                        if isinstance(a.get(key), int) and a[key] >= 0:
                            a[key] += j * ID_STRIDE
                if "id" in e and isinstance(e["id"], int):
                    e["id"] += j * ID_STRIDE
                m = re.match(r"ProfilerStep#(\d+)$", str(e.get("name", "")))
                if m:
                    e["name"] = f"ProfilerStep#{int(m.group(1)) + j * nsteps}"
            out.append(e)
    return {**doc, "traceEvents": out}


def make(sources: list[Path], n: int, out: Path, *, straggler: int | None = None,
         delay_us: float = 0.0, jitter_us: float = 20.0, repeat: int = 1,
         ranks_per_host: int = 8, clock_shift_us: float = 5e6, seq: bool = False,
         seed: int = 0) -> dict:
    rng = random.Random(seed)
    docs = [_load(p) for p in sources]
    period = max(_span(d) for d in docs) + 100.0  # one period for all: copies stay aligned
    templates = [_repeat(d, repeat, period) for d in docs]
    timing = []  # per template: its collectives' timing events, in start order
    for t in templates:
        is_t = _is_timing(t["traceEvents"])
        timing.append(sorted((e for e in t["traceEvents"] if e.get("ph") == "X" and is_t(e)),
                             key=lambda e: float(e["ts"])))
    ncoll = min(len(x) for x in timing)
    arrive = [max(float(x[k]["ts"]) for x in timing) for k in range(ncoll)]  # A_k
    delays = [[rng.uniform(0, jitter_us) + (delay_us if r == straggler else 0.0)
               for k in range(ncoll)] for r in range(n)]
    m = [max(delays[r][k] for r in range(n)) for k in range(ncoll)]
    hosts = (n + ranks_per_host - 1) // ranks_per_host
    offsets = [rng.uniform(-clock_shift_us, clock_shift_us) for _ in range(hosts)]
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for r in range(n):
        ti = r % len(templates)
        doc = copy.deepcopy(templates[ti])
        ends = [float(e["ts"]) + float(e.get("dur", 0)) for e in timing[ti][:ncoll]]
        is_t = _is_timing(doc["traceEvents"])
        mine = sorted((e for e in doc["traceEvents"] if e.get("ph") == "X" and is_t(e)),
                      key=lambda e: float(e["ts"]))
        ids = {id(e): k for k, e in enumerate(mine)}
        seq_of = {(e.get("args") or {}).get("External id"): k for k, e in enumerate(mine)}
        cum = [0.0]
        for k in range(ncoll):
            cum.append(cum[-1] + m[k])

        def shift(t: float, ends: list[float] = ends, cum: list[float] = cum) -> float:
            j = 0
            while j < ncoll and ends[j] <= t:
                j += 1
            return cum[j]

        off = offsets[r // ranks_per_host]
        for e in doc["traceEvents"]:
            if "ts" not in e:
                continue
            ts = float(e["ts"])
            k = ids.get(id(e))
            if k is not None and k < ncoll:
                start = arrive[k] + cum[k] + delays[r][k]
                end = ends[k] + cum[k + 1]
                e["ts"], e["dur"] = round(start + off, 3), round(max(end - start, 1.0), 3)
                a = e.setdefault("args", {})
                if seq:
                    a["Seq"] = k
            else:
                if "dur" in e:
                    end = ts + float(e["dur"])
                    e["dur"] = round(max(0.0, end + shift(end) - ts - shift(ts)), 3)
                e["ts"] = round(ts + shift(ts) + off, 3)
            a = e.get("args")
            comm = isinstance(a, dict) and "Collective name" in a
            if isinstance(a, dict) and (comm or e.get("name") == "record_param_comms"):
                a["Rank"] = r
                a["Group size"] = n
                a["Process Group Ranks"] = str(list(range(n)))
                if seq and a.get("External id") in seq_of:
                    a["Seq"] = seq_of[a["External id"]]  # the CPU op of a GPU-timed collective
        info = dict(doc.get("distributedInfo") or {})
        info.update(rank=r, world_size=n)
        info["pg_config"] = [{**(info.get("pg_config") or [{}])[0], "pg_size": n,
                              "ranks": list(range(n))}]
        doc["distributedInfo"] = info
        doc["host_name"] = f"gen-host-{r // ranks_per_host}"
        path = out / f"rank{r}.pt.trace.json.gz"
        with gzip.open(path, "wt", compresslevel=1) as f:
            json.dump(doc, f, separators=(",", ":"))
        files.append(path)
    truth = {"ranks": n, "straggler": straggler, "delay_us": delay_us, "jitter_us": jitter_us,
             "collectives": ncoll, "delays_us": delays, "host_offsets_us": offsets,
             "ranks_per_host": ranks_per_host, "sources": [str(p) for p in sources]}
    (out / "truth.jsonc").write_text(json.dumps(truth))
    return truth


def sources_of(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(q for q in p.rglob("*.json*") if ".pt.trace.json" in q.name)
        else:
            files.append(p)
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sources", nargs="+", help="template traces or folders of them")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--straggler", type=int, default=None)
    ap.add_argument("--delay-us", type=float, default=0.0)
    ap.add_argument("--jitter-us", type=float, default=20.0)
    ap.add_argument("--repeat", type=int, default=1, help="size multiplier (copies of the trace)")
    ap.add_argument("--ranks-per-host", type=int, default=8)
    ap.add_argument("--clock-shift-us", type=float, default=5e6)
    ap.add_argument("--seq", action="store_true", help="write Seq numbers on the collectives")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    src = sources_of(a.sources)
    if not src:
        print("make_ranks: no *.pt.trace.json[.gz] among the sources", file=sys.stderr)
        return 2
    make(src, a.ranks, a.out, straggler=a.straggler, delay_us=a.delay_us,
         jitter_us=a.jitter_us, repeat=a.repeat, ranks_per_host=a.ranks_per_host,
         clock_shift_us=a.clock_shift_us, seq=a.seq, seed=a.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
