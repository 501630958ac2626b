"""`traceprobe analyze` in many-rank mode: options, formats, CSV, --rank; the cross-trace
pairs table capped (issue 9)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from conftest import CPU_DDP, GPU_DDP, make_job
from traceprobe.cli import main
from traceprobe.engines.local import LocalEngine
from traceprobe.render import render


def _run(*args: str) -> int:
    return main(["analyze", *args])


def test_options_that_need_one_trace_are_refused(tmp_path: Path, capsys: Any) -> None:
    rc = _run(str(GPU_DDP), "--ranks", "--plot", str(tmp_path / "t.png"))
    err = capsys.readouterr().err
    assert rc == 2 and "--plot cannot be used with the many-rank summary" in err
    assert not (tmp_path / "t.png").exists()


def test_rank_that_is_not_there(capsys: Any) -> None:
    rc = _run(str(GPU_DDP), "--rank", "9", "-j", "1")
    assert rc == 2 and "the job has ranks 0-1" in capsys.readouterr().err


def test_rank_in_full_json_text_csv(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    assert _run(str(GPU_DDP), "--rank", "1", "-j", "1", "-o", str(out),
                "--csv", str(tmp_path / "csv")) == 0
    doc = json.loads(out.read_text())
    full = doc["rank_report"]
    assert full["rank"] == 1 and full["trace"] == doc["ranks"]["table"][1]["trace"]
    assert full["devices"][0]["busy_us"] == doc["ranks"]["table"][1]["busy_us"]
    with open(tmp_path / "csv" / "ranks.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [int(r["rank"]) for r in rows] == [0, 1]
    assert float(rows[1]["busy_us"]) == doc["ranks"]["table"][1]["busy_us"]
    with open(tmp_path / "csv" / "collectives.csv", newline="") as f:
        colls = list(csv.DictReader(f))
    assert len(colls) == len(doc["ranks"]["collectives"])
    want = doc["ranks"]["collectives"][0]["busbw_gbps"]
    assert float(colls[0]["busbw_gbps"]) == pytest.approx(want)
    text = render(doc, "text")
    assert "traceprobe: 2 ranks" in text and "== [--rank]" in text and "Slowest collectives" in text


@pytest.mark.parametrize("fmt", ["markdown", "html"])
def test_other_formats_show_the_summary(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"r.{'md' if fmt == 'markdown' else 'html'}"
    assert _run(str(GPU_DDP), "--ranks", "-j", "1", "-f", fmt, "-o", str(out)) == 0
    text = out.read_text()
    assert "Stragglers" in text and "Slowest collectives" in text and "Across ranks" in text
    if fmt == "html":
        assert text.startswith("<!DOCTYPE html>") and "<table>" in text


def test_more_than_16_traces_get_the_summary_by_themselves(tmp_path: Path) -> None:
    job, truth = make_job(tmp_path / "job", source=CPU_DDP, n=17, straggler=4, delay_us=3000.0,
                          ranks_per_host=17)
    out = tmp_path / "r.json"
    assert _run(str(job), "-j", "2", "-o", str(out)) == 0
    r = json.loads(out.read_text())["ranks"]
    assert r["count"] == 17 and r["clock"]["mode"] == "shared"  # one host: one clock
    assert r["stragglers"]["by_rank"][0]["rank"] == 4
    assert r["stragglers"]["by_rank"][0]["late_mean_us"] == pytest.approx(3000, rel=0.05)


def test_progress_bar_on_the_client(capsys: Any) -> None:
    assert LocalEngine(1).map(len, ["ab", "c"], progress=True) == [2, 1]
    assert "summarising" in capsys.readouterr().err


def test_cross_trace_table_lists_the_top_pairs_only() -> None:
    pairs = [{"a": {"trace": 0, "device": i}, "b": {"trace": 1, "device": i},
              "overlap_us": float(i), "either_us": 100.0, "fraction_of_either": i / 100}
             for i in range(50)]
    multi = {"schema": "traceprobe.reports/1", "traces": [],
             "cross_trace": {"pairs": pairs, "skipped": [], "clock": "shared"}}
    text = render(multi, "text")
    shown = [line for line in text.splitlines() if line.strip().startswith("[0] GPU")]
    assert len(shown) == 20
    assert shown[0].split()[2] == "49"  # the longest overlap first
    assert "the 20 of 50 pairs that overlapped longest" in text
    assert len(json.loads(render(multi, "json"))["cross_trace"]["pairs"]) == 50
