"""The ranks' waits at collectives are bounded by what the ranks spent there.

GIVEN a hand-made 2-rank job whose matched calls would imply a wait longer than a call lasted
(rank 0's call ends before rank 1 arrives: a clock or matching error), and the committed DDP
ranks (CPU gloo and H200 NCCL), WHEN reduced, THEN each participant's wait is
min(last start − own start, own call time), a rank's waits never exceed its collective time,
``transfer_us`` is the rest, and the ``waited for`` figures are bounded by the others' call time.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from traceprobe.ranks import reduce_ranks, summarise

DDP = [Path("sample_traces/cpu/ddp/train"), Path("sample_traces/h200x2/ddp/train")]


def _rank(rank: int, calls: list[tuple[float, float]]) -> dict[str, Any]:
    evs: list[dict[str, Any]] = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,
         "ts": 0, "dur": 2000, "args": {}}]
    for k, (start, end) in enumerate(calls):
        comm = {"Collective name": "allreduce", "In msg nelems": 1000, "Out msg nelems": 1000,
                "dtype": "Float", "Group size": 2, "Process Group Name": "0"}
        evs.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1,
                    "tid": 1, "ts": start - 5, "dur": 2, "args": {"External id": 10 + k, **comm}})
        evs.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0,
                    "tid": 9, "ts": start, "dur": end - start,
                    "args": {"device": rank, "stream": 9, "correlation": 20 + k,
                             "External id": 10 + k, **comm}})
    return {"traceEvents": evs, "host_name": "h",
            "distributedInfo": {"rank": rank, "world_size": 2, "backend": "nccl"}}


def test_a_wait_is_never_longer_than_the_call(tmp_path: Path) -> None:
    # call 0: rank 0 at 100..150 (50 µs), rank 1 arrives at 400 and runs to 450: the
    # arrival gap (300 µs) is longer than rank 0's whole call; call 1: an ordinary wait
    times = {0: [(100, 150), (1000, 1100)], 1: [(400, 450), (1040, 1100)]}
    files = []
    for r, calls in times.items():
        p = tmp_path / f"r{r}.pt.trace.json.gz"
        with gzip.open(p, "wt") as f:
            json.dump(_rank(r, calls), f)
        files.append(str(p))
    out = reduce_ranks([summarise(f) for f in files])
    assert out["clock"]["mode"] == "shared"
    c0, c1 = out["collectives"]
    assert c0["wait_us"] == pytest.approx(50)  # min(300, 50): all of rank 0's call, no more
    assert c0["late_us"] == pytest.approx(300)  # lateness itself is not bounded by a call
    assert c1["wait_us"] == pytest.approx(40)
    rows = {x["rank"]: x for x in out["table"]}
    assert rows[0]["collective_us"] == pytest.approx(50 + 100)
    assert rows[0]["wait_us"] == pytest.approx(50 + 40)
    assert rows[0]["transfer_us"] == pytest.approx(150 - 90)
    assert (rows[1]["wait_us"], rows[1]["transfer_us"]) == pytest.approx((0, 50 + 60))
    assert out["stragglers"]["by_rank"][0]["waited_for_us"] == pytest.approx(90)


@pytest.mark.parametrize("folder", DDP, ids=lambda p: p.parts[1])
def test_waits_on_the_ddp_ranks_are_bounded(folder: Path) -> None:
    files = sorted(str(p) for p in folder.glob("*.pt.trace.json.gz"))
    summaries = [summarise(f) for f in files]
    out = reduce_ranks(summaries)
    assert out["collectives"], "the DDP ranks share collectives"
    for row in out["table"]:
        assert row["wait_us"] is not None
        assert 0 <= row["wait_us"] <= row["collective_us"] + 1e-9
        assert row["transfer_us"] == pytest.approx(row["collective_us"] - row["wait_us"])
        assert row["wait_us"] <= row["span_us"]
    total_calls = sum(r["collective_us"] for r in out["table"])
    for c in out["collectives"]:
        assert c["wait_us"] <= total_calls
    for s in out["stragglers"]["by_rank"]:
        others = sum(r["collective_us"] for r in out["table"] if r["rank"] != s["rank"])
        assert s["waited_for_us"] <= others + 1e-9
    # the headline's "ranks waited ... in total" is that bounded figure
    [line] = [h for h in out["headlines"] if "waited" in h]
    top = out["stragglers"]["by_rank"][0]
    assert f"ranks waited {top['waited_for_us']:.0f} µs for it in total" in line


@pytest.mark.parametrize("folder", DDP, ids=lambda p: p.parts[1])
def test_plain_analyze_of_a_rank_folder_gives_the_cross_rank_headline(folder: Path) -> None:
    from click.testing import CliRunner

    from traceprobe.cli import cli

    res = CliRunner().invoke(cli, ["analyze", str(folder)])
    assert res.exit_code == 0, res.output
    out = reduce_ranks([summarise(str(p)) for p in sorted(folder.glob("*.pt.trace.json.gz"))])
    text = res.stdout
    assert f"Ranks of one job: the 2 traces in {folder}" in text
    for h in out["headlines"]:
        assert f"  * {h}" in text
    for row in out["table"]:  # each rank's collective time split: waiting + transfer
        assert f"  * Rank {row['rank']}: " in text
        assert row["wait_us"] + row["transfer_us"] == pytest.approx(row["collective_us"])
    assert f"traceprobe analyze --ranks {folder}" in text
    # JSON keeps its contract; one rank alone is no job
    assert "Ranks of one job" not in CliRunner().invoke(cli, ["analyze", str(folder),
                                                              "-f", "json"]).stdout
    single = Path("sample_traces/h200/profile/ddp_train")
    assert "Ranks of one job" not in CliRunner().invoke(cli, ["analyze", str(single)]).stdout
