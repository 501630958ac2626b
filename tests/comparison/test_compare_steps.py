"""`compare` by step: step statistics, per sample, a row per part and idle cause, the ranking
by step time at stake and the direction judged against the step.

GIVEN the committed DataLoader loop on a CPU and on an H200 (same script, 3 steps each), and
report dicts derived from the H200 one (its DataLoader halved, its launches slowed), WHEN
compared, THEN the step figures equal those computed from the traces' ProfilerStep ranges,
the changes lead with the part that moved most per step, and a worse figure in a faster step
is no regression (the other way round it is).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from traceprobe import report as rp
from traceprobe.cli import cli
from traceprobe.comparison import compare, format_text
from traceprobe.errors import UsageError
from traceprobe.load import load

GPU_LOOP = next(Path("sample_traces/h200/examples/dataloader-loop").glob("*.pt.trace.json.gz"))
CPU_LOOP = next(Path("sample_traces/cpu/examples/dataloader-loop").glob("*.pt.trace.json.gz"))


@pytest.fixture(scope="module")
def loops() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for side, path in (("a", CPU_LOOP), ("b", GPU_LOOP)):
        tl = load(path)
        out[side] = rp.analyze(tl).to_dict()
        out[side + "_steps"] = (tl.steps["end"] - tl.steps["start"]).to_numpy() / 1000
    return out


def test_step_statistics_and_per_sample(loops: dict[str, Any]) -> None:
    result = compare(loops["a"], loops["b"], batch=(64, 256))
    steps = result["steps"]
    for side in ("a", "b"):
        t = loops[side + "_steps"]
        got = steps[side]
        assert got["count"] == len(t) == 3
        assert got["p50_us"] == pytest.approx(np.percentile(t, 50), abs=1e-6)
        assert got["p90_us"] == pytest.approx(np.percentile(t, 90), abs=1e-6)
        assert (got["min_us"], got["max_us"]) == pytest.approx((t.min(), t.max()), abs=1e-6)
    a50, b50 = np.median(loops["a_steps"]), np.median(loops["b_steps"])
    assert steps["speedup"] == pytest.approx(a50 / b50)
    assert steps["per_sample"]["speedup"] == pytest.approx((a50 / 64) / (b50 / 256))
    rows = {f["key"]: f for f in result["figures"]}
    assert rows["step.median_us_per_sample"]["b"] == pytest.approx(b50 / 256)
    p90 = compare(loops["a"], loops["b"], step_stat="p90")["steps"]
    assert p90["speedup"] == pytest.approx(np.percentile(loops["a_steps"], 90)
                                           / np.percentile(loops["b_steps"], 90))
    text = format_text(result)
    assert f"B's median step is {a50 / b50:.2f}× faster than A's" in text
    assert "Per sample (batch 64 vs 256)" in text
    with pytest.raises(UsageError):
        compare(loops["a"], loops["b"], step_stat="p99")


def test_a_row_per_part_and_idle_cause_per_step(loops: dict[str, Any]) -> None:
    a, b = loops["a"], loops["b"]
    rows = {f["key"]: f for f in compare(a, b)["figures"]}
    for side, rep, dev in (("a", a, None), ("b", b, 0)):
        mine = [r for r in rep["step_breakdown"] if r["device"] == dev]
        for part in ("kernel", "runtime", "dataloader", "cpu_exec", "other"):
            want = sum(p["us"] for r in mine for p in r["parts"] if p["name"] == part) / len(mine)
            assert rows[f"parts[0].{part}_us"][side] == pytest.approx(want)
        total = sum(rows[f"parts[0].{p}_us"][side] for p in (
            "kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec",
            "other"))
        assert total == pytest.approx(loops[side + "_steps"].mean(), abs=1e-3)  # a partition
    [dev] = b["host"]["devices"]
    dl = sum(c["us"] for c in dev["causes"] if c["kind"] == "dataloader")
    assert rows["idle_causes[0].dataloader_us"]["b"] == pytest.approx(dl / 3)
    assert rows["parts[0].dataloader_us"]["label"] == "the DataLoader per step (GPU 0)"


def _faster_loader(r: dict[str, Any]) -> dict[str, Any]:
    """The report with each step's DataLoader part halved (the step shorter by as much) and a
    15x slower median launch: a faster step with slower launches."""
    out = copy.deepcopy(r)
    for row in out["step_breakdown"]:
        for p in row["parts"]:
            if p["name"] == "dataloader":
                cut = p["us"] / 2
                p["us"] -= cut
                row["end_us"] -= cut
    out["host"]["launch_latency"]["p50_us"] *= 15
    return out


def test_changes_rank_by_step_time_and_judge_against_the_step(loops: dict[str, Any]) -> None:
    a = loops["b"]
    b = _faster_loader(a)
    result = compare(a, b)
    assert result["steps"]["speedup"] > 1
    changes = result["changes"]
    assert changes[0]["key"] == "parts[0].dataloader_us"  # what changed, not "GPU 0 idle"
    _ranked_by_stake(changes)
    assert "span_us" not in [c["key"] for c in changes]  # the steps say it
    launch = next(c for c in changes if c["key"] == "launch_latency.p50_us")
    assert (launch["effect"], launch["regression"]) == ("worse", False)
    assert launch["text"].endswith("— but the steps got faster")
    back = compare(b, a)["changes"]  # B slower: the DataLoader rising is a regression
    loader = next(c for c in back if c["key"] == "parts[0].dataloader_us")
    assert (loader["effect"], loader["regression"]) == ("worse", True)
    assert loader["text"].endswith("— a regression")
    assert next(c for c in back if c["key"] == "launch_latency.p50_us")["effect"] == "better"


def _ranked_by_stake(changes: list[dict[str, Any]]) -> None:
    """Named per-step rows by stake, then window totals by stake, then the rest."""
    named = ("parts[", "phases[", "idle_causes[")
    groups = [0 if c["key"].startswith(named) else 1 if c["at_stake_us"] is not None else 2
              for c in changes]
    assert groups == sorted(groups)
    for g in (0, 1):
        stakes = [c["at_stake_us"] for c, k in zip(changes, groups, strict=True) if k == g]
        assert stakes == sorted(stakes, reverse=True)


def test_real_dataloader_pair_leads_with_the_dataloader() -> None:
    """mnist, DataLoader workers 1 vs 8 on the H200: the DataLoader is the change."""
    pair = Path("sample_traces/h200/real-loops")
    a, b = (rp.analyze(load(next((pair / v).glob("*.pt.trace.json.gz")))).to_dict()
            for v in ("mnist-workers1", "mnist-workers8"))
    result = compare(a, b, batch=(64, 64))
    assert result["steps"]["speedup"] > 3  # 24 ms -> under 5 ms a step
    top = result["changes"][:3]  # the DataLoader: part of the step, phase, idle it caused
    assert {c["key"] for c in top} == {"parts[0].dataloader_us", "idle_causes[0].dataloader_us",
                                       "phases[dataloader]_us"}
    assert {c["effect"] for c in top} == {"better"}
    _ranked_by_stake(result["changes"])
    assert not any(c["regression"] for c in result["changes"])  # B's steps are faster
    text = format_text(result)
    assert "DataLoader per step fell from" in text.split("\n  3.")[0]


def test_cli_step_stat_and_batch_size(tmp_path: Path) -> None:
    runner = CliRunner()
    res = runner.invoke(cli, ["compare", str(CPU_LOOP), str(GPU_LOOP), "--step-stat", "p90",
                              "--batch-size", "64,256", "-f", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["steps"]["stat"] == "p90"
    assert doc["steps"]["per_sample"]["a_batch"] == 64
    assert doc["steps"]["per_sample"]["b_batch"] == 256
    res = runner.invoke(cli, ["compare", str(CPU_LOOP), str(GPU_LOOP), "--batch-size", "x"])
    assert res.exit_code == 2 and "--batch-size" in res.stderr
