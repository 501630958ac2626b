"""Generated 16- and 32-rank jobs through the local engine: the straggler, the clocks and
the collectives' bandwidth against the generator's truth and the raw events."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import CPU_DDP, GPU_DDP, traces
from traceprobe.engines.job import analyze_ranks
from traceprobe.render import render


@pytest.fixture(scope="module")
def reports(local16: dict[str, Any], local32: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {16: local16, 32: local32}


@pytest.mark.parametrize("n", [16, 32])
def test_injected_straggler_found_with_its_delay(
    n: int, reports: dict, job16: tuple, job32: tuple
) -> None:
    truth = (job16 if n == 16 else job32)[1]
    r = reports[n]["ranks"]
    top = r["stragglers"]["by_rank"][0]
    assert top["rank"] == truth["straggler"]
    assert top["last_at"] == truth["collectives"] == len(r["collectives"])
    assert top["late_mean_us"] == pytest.approx(truth["delay_us"], rel=0.05)
    assert {s["rank"] for s in r["stragglers"]["by_step"]} == {truth["straggler"]}


@pytest.mark.parametrize("n", [16, 32])
def test_clocks_aligned_to_the_generators_offsets(
    n: int, reports: dict, job16: tuple, job32: tuple
) -> None:
    truth = (job16 if n == 16 else job32)[1]
    clock = reports[n]["ranks"]["clock"]
    assert clock["mode"] == "aligned"  # several hosts
    host_off = truth["host_offsets_us"]
    per = truth["ranks_per_host"]
    for rank, off in clock["offsets_us"].items():
        want = host_off[int(rank) // per] - host_off[0]
        assert off == pytest.approx(want, abs=25.0)  # within the jitter


def _raw_collectives(files: list[str]) -> list[list[dict[str, Any]]]:
    """Per rank, its NCCL kernels in time order, read with the standard json module."""
    out = []
    for f in files:
        with gzip.open(f, "rt") as fh:
            evs = json.load(fh)["traceEvents"]
        ks = [e for e in evs if e.get("cat") == "kernel" and "Collective name" in e["args"]]
        out.append(sorted(ks, key=lambda e: e["ts"]))
    return out


@pytest.mark.parametrize("n", [16, 32])
def test_bus_bandwidth_equals_a_computation_from_the_raw_events(
    n: int, reports: dict, job16: tuple, job32: tuple
) -> None:
    job = (job16 if n == 16 else job32)[0]
    raw = _raw_collectives(traces(job))
    got = sorted(reports[n]["ranks"]["collectives"], key=lambda c: (c["step"], c["index"]))
    assert len(got) == len(raw[0])
    for k, c in enumerate(got):
        calls = [rank[k] for rank in raw]
        a = calls[0]["args"]
        size = max(a["In msg nelems"], a["Out msg nelems"]) * 4  # Float
        t_us = min(e["dur"] for e in calls)
        ranks = len(calls)
        busbw = size / (t_us * 1000) * 2 * (ranks - 1) / ranks  # all-reduce: 2(n-1)/n
        assert c["name"] == "allreduce" and c["ranks"] == ranks == n
        assert c["bytes"] == size
        assert c["busbw_gbps"] == pytest.approx(busbw, rel=1e-6)


def test_seq_numbers_give_the_same_collectives_as_order(tmp_path: Path) -> None:
    from conftest import make_job

    a, _ = make_job(tmp_path / "order", n=8, straggler=3, delay_us=1000.0, seed=4)
    b, _ = make_job(tmp_path / "seq", n=8, straggler=3, delay_us=1000.0, seed=4, seq=True)
    ra, rb = analyze_ranks(traces(a), jobs=1)["ranks"], analyze_ranks(traces(b), jobs=1)["ranks"]
    assert (ra["matching"], rb["matching"]) == ("order", "seq")
    drop = ("seq", "step", "index")
    assert [{k: v for k, v in c.items() if k not in drop} for c in ra["collectives"]] == [
        {k: v for k, v in c.items() if k not in drop} for c in rb["collectives"]]


def test_text_report_does_not_grow_with_the_ranks(reports: dict) -> None:
    small = render(reports[16], "text").splitlines()
    big = render(reports[32], "text").splitlines()
    assert len(big) < 100 and len(small) < 100
    assert any("the 10 ranks with the longest median step of 32" in line for line in big)
    md = render(reports[32], "markdown")
    assert "Stragglers" in md and md.count("\n") < 150


@pytest.mark.parametrize("job,backend", [(GPU_DDP, "record_param_comms"), (CPU_DDP, "gloo")])
def test_two_rank_ddp_samples(job: Path, backend: str) -> None:
    r = analyze_ranks(traces(job), jobs=1)["ranks"]
    assert [x["rank"] for x in r["table"]] == [0, 1]
    assert len(r["collectives"]) >= 1 and r["collectives"][0]["ranks"] == 2
    if backend == "gloo":  # CPU: gloo annotations, no size recorded, one host
        assert r["clock"]["mode"] == "shared"
        assert r["collectives"][0]["bytes"] is None
        assert r["table"][0]["busy_us"] is None
    else:
        assert r["collectives"][0]["bytes"] == 4195328 * 4  # Input Dims of the gradient bucket
        assert r["collectives"][0]["busbw_gbps"] > 0
