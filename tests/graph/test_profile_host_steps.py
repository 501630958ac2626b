"""docs/WHATIF.md's "`traceprobe profile --host-steps`, on the GPU": examples/lm_train.py
profiled on an H200 by `traceprobe profile --record-shapes --host-steps 10`
(sample_traces/h200/profile-host-steps). Every cell against the runs: the measured side from
each run's metadata, the host issue time from the trace's raw JSON (and the metadata's host
steps), the predictions through the public whatif API."""

from __future__ import annotations

import gzip
import json
import statistics
from pathlib import Path

import pytest

from traceprobe.graph import whatif
from traceprobe.graph.overhead import profiler_cost
from traceprobe.load import load

REPO = Path(__file__).resolve().parents[2]
RUNS = REPO / "sample_traces" / "h200" / "profile-host-steps"
pytestmark = pytest.mark.skipif(not RUNS.is_dir(), reason="the profile runs are not here")
TITLE = "### `traceprobe profile --host-steps`, on the GPU"


def _rows() -> list[list[str]]:
    text = (REPO / "docs" / "WHATIF.md").read_text().split(TITLE, 1)[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()
            if line.startswith("| `")]


def _meta(variant: str) -> dict:
    from traceprobe.record import meta

    return meta.read(RUNS / variant / meta.FILENAME)


def _trace(variant: str) -> Path:
    return next((RUNS / variant).glob("*.pt.trace.json.gz"))


def _ms(cell: str) -> float:
    assert cell.endswith(" ms"), cell
    return float(cell.split()[0])


def _median_period(res) -> float:  # type: ignore[no-untyped-def]
    return statistics.median(w.predicted_period_us for w in res.windows) / 1000


def test_each_run_is_profiled_with_host_steps_and_cupti_torn_down() -> None:
    for v in ("lm-fp32", "lm-tf32", "lm-bf16"):
        m = _meta(v)
        t = m["timing"]
        assert m["kind"] == "profile" and "--host-steps" in m["command"]
        (rank,) = m["ranks"] if m.get("ranks") else [m]
        assert rank.get("cupti_teardown", m.get("cupti_teardown")) is True
        host = [w for w, p in zip(t["step_wall_s"], t["step_phase"], strict=True) if p == "host"]
        assert len(host) == 10
        raw = json.loads(gzip.decompress(_trace(v).read_bytes()))["traceprobeUnprofiled"]
        assert raw["host_steps"] == 10
        assert raw["host_ms"] == pytest.approx(statistics.median(host) * 1e3, abs=1e-3)


def test_the_table_against_the_runs() -> None:
    rows = _rows()
    assert len(rows) == 5
    for slow, scen, fast, host, cal, measured, err, alone, err_alone in rows:
        slow, fast, scen = slow.strip("`"), fast.strip("`"), scen.strip("`")
        m = _meta(fast)["timing"]["unprofiled_step_median_s"] * 1e3
        assert _ms(measured) == pytest.approx(m, abs=0.006)
        assert _ms(host) == pytest.approx(_meta(slow)["timing"]["host_issue_median_s"] * 1e3,
                                          abs=0.006)
        tl = load(_trace(slow))
        given = [] if scen == "–" else [scen]
        res = whatif(tl, ["no-profiler", *given], step="all")
        assert any("calibrated on the recorder's" in n for n in res.notes)
        assert _ms(cal) == pytest.approx(_median_period(res), abs=0.006)
        est = profiler_cost(tl).ns
        assert _ms(alone) == pytest.approx(
            _median_period(whatif(tl, [f"no-profiler:{est:g}", *given], step="all")), abs=0.006)
        for p, e in ((cal, err), (alone, err_alone)):
            assert float(e[:-1]) == pytest.approx((_ms(p) - m) / m * 100, abs=0.1)
        if scen != "–":  # a change's prediction: within the goal, calibrated
            assert abs(float(err[:-1])) <= 20
