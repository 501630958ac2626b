"""Real traces from other machines: device, copy and stream figures against an independent reading.

For every trace in ``../shared/corpus/hta`` the test reads the raw JSON itself
(json + gzip, timestamps converted from their decimal text), computes busy time
with a plain sort-merge and overlaps with a sweep in pure Python, and compares
with what ``load`` + ``analyze`` report, in exact nanoseconds. It shares no code
with traceprobe's loader or interval module. Skips where the corpus is absent.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter, defaultdict
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from traceprobe.report import check

CORPUS = Path(__file__).parents[3] / "shared" / "corpus" / "hta"
REPO = Path(__file__).parents[2]
# Third-party traces (where ../shared/corpus exists) and our own, recorded on 1 and 2 H200s:
# the committed samples and the 98 MB single-GPU training trace of the benchmark.
# tests/data holds a small hand-built trace with pageable copies both ways (its script beside it)
OWN = sorted((REPO / "sample_traces").rglob("*.pt.trace.json.gz")) + sorted(
    (REPO / "bench").glob("*.pt.trace.json.gz")) + sorted(
    (REPO / "tests" / "data").glob("*.pt.trace.json.gz"))
TRACES = (sorted(CORPUS.glob("*.json.gz")) if CORPUS.is_dir() else []) + OWN
pytestmark = [pytest.mark.slow]

GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
NOT_EVENTS = {"gpu_user_annotation", "Trace"}  # labels the loader leaves out
COPY_NAME = re.compile(r"Memcpy\s+(\w)to(\w)\b(?:\s*\(\s*(\w+)\s*->\s*(\w+)\s*\))?")


def ns(value) -> int:
    """µs as written in the file (int, or decimal text) -> ns, beyond-ns digits rounded half up."""
    if isinstance(value, int):
        return value * 1000
    return int((Decimal(value) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def default_window(events: list[dict]) -> tuple[int, int]:
    """The documented default window (docs/REPORT_SCHEMA.md), from the raw events: the
    ProfilerSteps' [first start, last end) (of the thread with the most of them); else the
    profiler's ``Trace`` span tightened to the events (start-up overhead left out); else
    first event start to last event end."""
    xs = [e for e in events if e.get("ph") == "X"]

    def interval(e: dict) -> tuple[int, int]:
        start = ns(e["ts"])
        return start, start + max(ns(e.get("dur", 0)), 0)

    steps = [
        e for e in xs
        if e.get("cat") in ("user_annotation", "cpu_op")
        and re.fullmatch(r"ProfilerStep#\d{1,18}", str(e.get("name")))
    ]
    if steps:
        threads = Counter((e["pid"], e["tid"]) for e in steps)
        top = max(threads.values())
        best = min(t for t, c in threads.items() if c == top)
        mine = [interval(e) for e in steps if (e["pid"], e["tid"]) == best]
        return min(a for a, _ in mine), max(b for _, b in mine)
    real = [
        interval(e) for e in xs
        if e.get("cat") not in NOT_EVENTS and e.get("cat") != "overhead"
        and e.get("name") != "Activity Buffer Request"
    ]
    if not real:
        return 0, 0
    lo, hi = min(a for a, _ in real), max(b for _, b in real)
    trace = [interval(e) for e in xs if e.get("cat") == "Trace"]
    if trace:
        plo, phi = max(lo, min(a for a, _ in trace)), min(hi, max(b for _, b in trace))
        if plo < phi:
            return plo, phi
    return lo, hi


def read_raw(path: Path) -> tuple[list[dict], tuple[int, int]]:
    """GPU activities as dicts, clipped to the default window, and that window."""
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=str)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    lo, hi = default_window(events)
    gpu = []
    for e in events:
        if e.get("ph") != "X" or e.get("cat") in NOT_EVENTS:
            continue
        start = ns(e["ts"])
        end = start + max(ns(e.get("dur", 0)), 0)
        if not (start < hi and end > lo) and not (start == end and lo <= start < hi):
            continue  # outside the window (Timeline.window's rule)
        start, end = min(max(start, lo), hi), min(max(end, lo), hi)
        kind = GPU_CATS.get(e.get("cat"))
        if kind is None:
            continue
        args = e.get("args", {})
        row = {
            "kind": kind,
            "name": e["name"],
            "device": int(args.get("device", e["pid"])),
            "stream": int(args.get("stream", e["tid"])),
            "start": start,
            "end": end,
            "bytes": int(args.get("bytes", -1)),
            "correlation": args.get("correlation"),
            "direction": "",
            "pageable": False,
            "comm": kind == "kernel"
            and ("nccl" in e["name"].lower() or "rccl" in e["name"].lower()),
        }
        m = COPY_NAME.search(e["name"]) if kind == "memcpy" else None
        if m:
            a, b = m.group(1).upper(), m.group(2).upper()
            row["direction"] = {
                "HD": "HtoD",
                "DH": "DtoH",
                "DD": "DtoD",
                "PP": "PtoP",
                "HH": "HtoH",
            }.get(a + b, "")
            row["pageable"] = "Pageable" in (m.group(3), m.group(4))
        gpu.append(row)
    # ROCm copies carry no bytes; the hipMemcpy* call with the same correlation has the size
    size = {
        e["args"]["correlation"]: e["args"]["size"]
        for e in events
        if e.get("ph") == "X" and "size" in e.get("args", {}) and "correlation" in e["args"]
    }
    for row in gpu:
        if row["kind"] == "memcpy" and row["bytes"] < 0 and row["correlation"] in size:
            row["bytes"] = int(size[row["correlation"]])
    return gpu, (lo, hi)


# -- pure-Python interval maths (deliberately not traceprobe.intervals) ----------------------


def merge(pairs) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for s, e in sorted(p for p in pairs if p[1] > p[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e) for s, e in out]


def length(merged) -> int:
    return sum(e - s for s, e in merged)


def both(a, b) -> int:
    """|a ∩ b| of two merged lists, by walking them together."""
    i = j = total = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            total += hi - lo
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def depth_profile(pairs) -> tuple[int, int]:
    """(time with >= 2 intervals active, most active at once) by a sweep over start/end marks."""
    marks: dict[int, int] = defaultdict(int)
    for s, e in pairs:
        if e > s:
            marks[s] += 1
            marks[e] -= 1
    depth, most, at_least_two, prev = 0, 0, 0, None
    for t in sorted(marks):
        if prev is not None and depth >= 2:
            at_least_two += t - prev
        depth += marks[t]
        most = max(most, depth)
        prev = t
    return at_least_two, most


def pairs_of(rows):
    return [(r["start"], r["end"]) for r in rows]


# -- the test ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def loaded():
    from traceprobe.load.pipeline import load

    return {str(p): (load(p), *read_raw(p)) for p in TRACES}


IDS = [str(p.relative_to(p.parents[2]))[:60] for p in TRACES]


def test_the_third_party_corpus_is_checked_where_present() -> None:
    """Says so (a skip line) when ../shared/corpus/hta is absent: only our own traces ran."""
    if not CORPUS.is_dir():
        pytest.skip(f"third-party corpus not found at {CORPUS}: checked our {len(OWN)} own "
                    "traces only")
    assert [p for p in TRACES if CORPUS in p.parents], f"no *.json.gz traces in {CORPUS}"


def test_own_traces_hold_pageable_copies_both_ways() -> None:
    """Without the corpus, pageable sources and destinations are still checked above."""
    seen = set()
    for path in OWN:
        if path.parent.name == "data" or "copy" in path.parts:
            for name in {g["name"] for g in read_raw(path)[0] if g["kind"] == "memcpy"}:
                m = COPY_NAME.search(name)
                if m and m.group(3) == "Pageable":
                    seen.add("source")
                if m and m.group(4) == "Pageable":
                    seen.add("destination")
    assert seen == {"source", "destination"}


@pytest.mark.parametrize("path", TRACES, ids=IDS)
def test_device_copy_and_stream_figures_match_raw_json(path: Path, loaded) -> None:
    from traceprobe.report import analyze

    tl, gpu, (lo, hi) = loaded[str(path)]
    r = analyze(tl, step="all")
    check(r)
    assert (r.window.start_ns, r.window.end_ns, r.span_ns) == (lo, hi, hi - lo)
    devices = sorted({g["device"] for g in gpu})
    assert [d.device for d in r.devices] == devices
    assert r.gpu_span_ns == (
        (max(g["end"] for g in gpu) - min(g["start"] for g in gpu)) if gpu else 0
    )
    busy_of, stream_total = {}, 0
    for d in r.devices:
        rows = [g for g in gpu if g["device"] == d.device]
        busy = merge(pairs_of(rows))
        busy_of[d.device] = busy
        kind = {
            k: merge(pairs_of(g for g in rows if g["kind"] == k))
            for k in ("kernel", "memcpy", "memset")
        }
        assert (d.busy_ns, d.kernel_ns, d.memcpy_ns, d.memset_ns) == (
            length(busy),
            length(kind["kernel"]),
            length(kind["memcpy"]),
            length(kind["memset"]),
        )
        assert (d.idle_ns, d.utilization) == (r.span_ns - length(busy), length(busy) / r.span_ns)
        assert d.active_span_ns == max(g["end"] for g in rows) - min(g["start"] for g in rows)
        assert (d.kernels, d.memcpys, d.memsets) == tuple(
            sum(g["kind"] == k for g in rows) for k in ("kernel", "memcpy", "memset")
        )
        streams = sorted({g["stream"] for g in rows})
        assert d.streams == len(streams)

        # copies hidden under kernels, all directions and each one
        copies = [g for g in rows if g["kind"] == "memcpy"]
        directions = ["all"] + [
            c
            for c in ("HtoD", "DtoH", "DtoD", "PtoP", "HtoH")
            if any(g["direction"] == c for g in copies)
        ]
        got = [c for c in r.overlap.copy_compute if c.device == d.device]
        assert [c.direction for c in got] == directions
        for c in got:
            sub = [g for g in copies if c.direction in ("all", g["direction"])]
            merged = merge(pairs_of(sub))
            hidden = both(merged, kind["kernel"])
            assert (c.memcpy_ns, c.hidden_ns, c.exposed_ns) == (
                length(merged),
                hidden,
                length(merged) - hidden,
            )
            assert (c.copies, c.bytes, c.pageable) == (
                len(sub),
                sum(max(g["bytes"], 0) for g in sub),
                sum(g["pageable"] for g in sub),
            )

        # communication kernels under the other kernels
        comm = merge(pairs_of(g for g in rows if g["comm"]))
        other = merge(pairs_of(g for g in rows if g["kind"] == "kernel" and not g["comm"]))
        got_comm = [c for c in r.overlap.comm_compute if c.device == d.device]
        if any(g["comm"] for g in rows):
            (c,) = got_comm
            assert (c.comm_ns, c.hidden_ns) == (length(comm), both(comm, other))
        else:
            assert got_comm == []

        # streams: busy, counts, self overlap; then their concurrency
        sbusy = {}
        for row in (s for s in r.streams if s.device == d.device):
            srows = [g for g in rows if g["stream"] == row.stream]
            sbusy[row.stream] = merge(pairs_of(srows))
            assert row.busy_ns == length(sbusy[row.stream])
            assert (row.kernels, row.memcpys, row.memsets) == tuple(
                sum(g["kind"] == k for g in srows) for k in ("kernel", "memcpy", "memset")
            )
            assert row.kernel_ns == length(
                merge(pairs_of(g for g in srows if g["kind"] == "kernel"))
            )
            assert row.memcpy_ns == length(
                merge(pairs_of(g for g in srows if g["kind"] == "memcpy"))
            )
            assert row.self_overlap_ns == depth_profile(pairs_of(srows))[0]
        assert sorted(sbusy) == streams
        stream_total += sum(length(b) for b in sbusy.values())
        (conc,) = [c for c in r.overlap.streams if c.device == d.device]
        concurrent, most = depth_profile([p for b in sbusy.values() for p in b])
        assert (conc.concurrent_ns, conc.max_concurrent) == (concurrent, most)
        assert {p.streams: p.overlap_ns for p in conc.pairs} == {
            (a, b): both(sbusy[a], sbusy[b])
            for i, a in enumerate(streams)
            for b in streams[i + 1 :]
        }

    assert r.serial.serial_ns == stream_total
    union = merge(p for b in busy_of.values() for p in b)
    assert r.serial.busy_union_ns == length(union)
    for p in r.overlap.cross_device:
        assert p.overlap_ns == both(busy_of[p.devices[0]], busy_of[p.devices[1]])


RANK_PAIRS = {
    "corpus": lambda p: p.name.startswith("trace_filter_sampled_rank-"),
    "h200x2-ddp": lambda p: "ddp" in p.parts and "h200x2" in p.parts,
}


@pytest.mark.parametrize("group", sorted(RANK_PAIRS))
def test_two_ranks_cross_trace_matches_raw_json(loaded, group) -> None:
    from traceprobe.report import analyze_many

    names = [str(p) for p in TRACES if RANK_PAIRS[group](p)]
    if len(names) < 2:
        pytest.skip(f"the two-rank traces of {group} are not here")
    m = analyze_many([loaded[n][0] for n in names])
    check(m)
    (ra, rb) = [read_raw(Path(n)) for n in names]
    windows_meet = max(ra[1][0], rb[1][0]) < min(ra[1][1], rb[1][1])
    assert bool(m.cross_trace.pairs) == windows_meet
    for p in m.cross_trace.pairs:
        a = merge(pairs_of(g for g in ra[0] if g["device"] == p.a.device))
        b = merge(pairs_of(g for g in rb[0] if g["device"] == p.b.device))
        assert (p.overlap_ns, p.either_ns) == (both(a, b), length(a) + length(b) - both(a, b))
