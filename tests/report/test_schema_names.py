"""One trace and several traces: two shapes, two schema names, both documented, each consumer
reading the one it understands."""

from __future__ import annotations

from pathlib import Path

import pytest

import traceprobe
from frames import kernel, timeline
from traceprobe.errors import UsageError
from traceprobe.render import render

DOC = (Path(__file__).resolve().parents[2] / "docs" / "REPORT_SCHEMA.md").read_text()


@pytest.fixture
def reports():
    a = timeline(gpu=[kernel(0, 10_000)], source="rank0.json")
    b = timeline(gpu=[kernel(5_000, 20_000)], source="rank1.json")
    return traceprobe.analyze(a).to_dict(), traceprobe.analyze_many([a, b]).to_dict()


def test_each_shape_has_its_own_documented_name(reports) -> None:
    one, several = reports
    assert one["schema"] == "traceprobe.report/1" and "trace" in one and "traces" not in one
    assert several["schema"] == "traceprobe.reports/1" and list(several) == [
        "schema", "traces", "cross_trace", "runs"]
    assert [t["schema"] for t in several["traces"]] == ["traceprobe.report/1"] * 2
    assert render([reports[0], reports[0]], "json").count('"traceprobe.reports/1"') == 1
    for name in ("traceprobe.report/1", "traceprobe.reports/1", "traceprobe.ranks/1"):
        assert f"`{name}`" in DOC


def test_consumers_take_the_shape_they_read(reports) -> None:
    one, several = reports
    assert "rank1.json" in render(several, "text") and "rank0.json" in render(one, "text")
    with pytest.raises(UsageError, match="several traces"):
        traceprobe.compare(several, one)
    with pytest.raises(UsageError, match="one trace"):
        traceprobe.check(several, "utilization[0] > 0")
