"""The cross-rank figures on a 3-rank job small enough to work out by hand."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from traceprobe.ranks import reduce_ranks, summarise
from traceprobe.ranks.comms import bus_factor

# per rank: (arrival µs, end µs) of collective 0 (allreduce, 1000 floats) and
# collective 1 (allgather, 250 floats in, 750 out)
TIMES = {0: [(100, 500), (600, 700)], 1: [(130, 500), (610, 700)], 2: [(400, 500), (620, 700)]}
SIZES = [("allreduce", 1000, 1000), ("allgather", 250, 750)]


def _trace(rank: int, host: str, shift_us: float = 0.0) -> dict[str, Any]:
    evs: list[dict[str, Any]] = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 0 + shift_us, "dur": 1000, "args": {}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10 + shift_us,
         "dur": 50, "args": {"device": rank, "stream": 7, "correlation": 99}},
    ]
    for k, ((start, end), (name, n_in, n_out)) in enumerate(zip(TIMES[rank], SIZES, strict=True)):
        comm = {"Collective name": name, "In msg nelems": n_in, "Out msg nelems": n_out,
                "dtype": "Float", "Group size": 3, "Process Group Name": "0"}
        evs.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1,
                    "tid": 1, "ts": start - 50 + shift_us, "dur": 5,
                    "args": {"External id": 10 + k, "Rank": rank, **comm}})
        evs.append({"ph": "X", "cat": "kernel", "name": f"ncclDevKernel_{name}", "pid": 0,
                    "tid": 9, "ts": start + shift_us, "dur": end - start,
                    "args": {"device": rank, "stream": 9, "correlation": 20 + k,
                             "External id": 10 + k, **comm}})
    return {"traceEvents": evs, "host_name": host,
            "distributedInfo": {"rank": rank, "world_size": 3, "backend": "nccl"}}


def _job(tmp: Path, hosts: list[str], shifts: list[float]) -> list[str]:
    out = []
    for r in range(3):
        p = tmp / f"r{r}.pt.trace.json.gz"
        with gzip.open(p, "wt") as f:
            json.dump(_trace(r, hosts[r], shifts[r]), f)
        out.append(str(p))
    return out


def test_bus_factors_are_ncclS() -> None:
    assert bus_factor("allreduce", 8) == pytest.approx(2 * 7 / 8)
    assert bus_factor("all_gather", 8) == pytest.approx(7 / 8)
    assert bus_factor("_reduce_scatter_base", 4) == pytest.approx(3 / 4)
    assert bus_factor("broadcast", 8) == 1.0
    assert bus_factor("barrier", 8) is None


@pytest.mark.parametrize("hosts,shifts,mode", [
    (["h", "h", "h"], [0.0, 0.0, 0.0], "shared"),
    (["a", "b", "c"], [0.0, 1e6, -3.5e5], "aligned"),  # different hosts, clocks far apart
])
def test_collectives_skew_wait_and_bandwidth_by_hand(
    tmp_path: Path, hosts: list[str], shifts: list[float], mode: str
) -> None:
    r = reduce_ranks([summarise(f) for f in _job(tmp_path, hosts, shifts)])
    assert r["clock"]["mode"] == mode
    assert r["matching"] == "order"
    c0, c1 = r["collectives"]
    # collective 0: arrivals 100, 130, 400; all leave at 500
    assert (c0["name"], c0["ranks"], c0["bytes"]) == ("allreduce", 3, 4000)
    assert c0["skew_us"] == pytest.approx(300)
    assert c0["last_rank"] == 2
    assert c0["late_us"] == pytest.approx(400 - (100 + 130) / 2)
    assert c0["wait_us"] == pytest.approx(300 + 270)
    assert c0["duration_us"] == pytest.approx(100)  # rank 2's own call: it waited for nobody
    assert c0["algbw_gbps"] == pytest.approx(4000 / 100e3)  # bytes per ns = GB/s
    assert c0["busbw_gbps"] == pytest.approx(4000 / 100e3 * 2 * 2 / 3)
    # collective 1: S is the larger (output) buffer, 750 floats
    assert c1["bytes"] == 3000
    assert c1["duration_us"] == pytest.approx(80)
    assert c1["busbw_gbps"] == pytest.approx(3000 / 80e3 * 2 / 3)
    assert c1["late_us"] == pytest.approx(620 - 605)
    rows = {x["rank"]: x for x in r["table"]}
    assert rows[0]["wait_us"] == pytest.approx(300 + 20)
    assert rows[2]["wait_us"] == pytest.approx(0)
    assert rows[2]["last_at"] == 2
    assert rows[2]["late_mean_us"] == pytest.approx((285 + 15) / 2)
    assert rows[1]["step_median_us"] == pytest.approx(1000)
    top = r["stragglers"]["by_rank"][0]
    assert top["rank"] == 2 and top["waited_for_us"] == pytest.approx(570 + 30)
    if mode == "aligned":
        offs = r["clock"]["offsets_us"]
        assert offs["1"] == pytest.approx(1e6) and offs["2"] == pytest.approx(-3.5e5)
        assert r["clock"]["residual_us"] == pytest.approx(0)


def test_no_clock_no_stragglers(tmp_path: Path) -> None:
    """Different hosts and no collective to align on: per-rank figures only."""
    files = _job(tmp_path, ["a", "b", "c"], [0.0, 0.0, 0.0])
    for i, f in enumerate(files):  # rename the process group per rank: nothing matches
        doc = json.loads(gzip.open(f, "rt").read())
        for e in doc["traceEvents"]:
            if "Process Group Name" in e.get("args", {}):
                e["args"]["Process Group Name"] = f"pg{i}"
        with gzip.open(f, "wt") as g:
            json.dump(doc, g)
    r = reduce_ranks([summarise(f) for f in files])
    assert r["clock"]["mode"] == "none"
    assert r["collectives"] == [] and r["stragglers"] is None
    assert all(x["wait_us"] is None for x in r["table"])


def test_seq_numbers_match_across_steps(tmp_path: Path) -> None:
    """With Seq, calls match by sequence number even when the ranks' steps differ."""
    files = _job(tmp_path, ["h", "h", "h"], [0.0, 0.0, 0.0])
    for i, f in enumerate(files):
        doc = json.loads(gzip.open(f, "rt").read())
        for e in doc["traceEvents"]:
            a = e.get("args", {})
            if "Collective name" in a:
                a["Seq"] = a["External id"] - 10
            if e["name"] == "ProfilerStep#1":
                e["name"] = f"ProfilerStep#{1 + i}"  # order within a step would match nothing
        with gzip.open(f, "wt") as g:
            json.dump(doc, g)
    r = reduce_ranks([summarise(f) for f in files])
    assert r["matching"] == "seq"
    assert [c["seq"] for c in r["collectives"]] == [0, 1]
    assert r["collectives"][0]["late_us"] == pytest.approx(285)


@pytest.mark.parametrize("piece", [5, 333, 4096, 1 << 20])
def test_scanner_finds_every_collective_event_across_chunk_cuts(piece: int) -> None:
    """The streaming pre-filter against the standard json module, cut anywhere."""
    from conftest import CPU_DDP, GPU_DDP
    from traceprobe.ranks import comms

    for job in (GPU_DDP, CPU_DDP):
        for f in sorted(job.glob("*.pt.trace.json.gz")):
            text = gzip.open(f).read()
            doc = json.loads(text)
            want = [
                (e["name"], e["ts"]) for e in doc["traceEvents"]
                if e.get("name") == "record_param_comms" or "Collective name" in e.get("args", {})
                or e.get("name", "").startswith(("nccl:", "gloo:"))
            ]
            events, host = comms.scan(text[i:i + piece] for i in range(0, len(text), piece))
            assert [(e.name, float(bytes(e.ts))) for e in events] == want
            assert host == doc.get("host_name")
