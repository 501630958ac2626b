"""The same bug gives the same error on every engine (exit 70 at the CLI), and only a graph
cycle, no other error, leaves a report's critical path null."""

from __future__ import annotations

import pytest

from frames import kernel, timeline
from traceprobe.engines.local import LocalEngine
from traceprobe.errors import GraphCycle, InternalError
from traceprobe.report import analyze, build


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_bug_in_the_task_goes_up_from_the_local_engine(jobs: int) -> None:
    with LocalEngine(jobs) as engine, pytest.raises(ValueError, match="invalid literal"):
        engine.map(int, ["1", "x"])


def test_a_bug_in_the_task_goes_up_from_the_dask_engine() -> None:
    pytest.importorskip("distributed")
    from traceprobe.engines.cluster import DaskEngine

    with DaskEngine(workers=1) as engine:
        assert engine.map(int, ["1", "2"]) == [1, 2]
        with pytest.raises(ValueError, match="invalid literal"):
            engine.map(int, ["1", "x"])


def test_only_a_graph_cycle_leaves_the_critical_path_null(monkeypatch) -> None:
    tl = timeline(gpu=[kernel(0, 10)])
    assert issubclass(GraphCycle, InternalError) and GraphCycle.exit_code == 70

    def cycle(*a, **k):
        raise GraphCycle("the dependency graph has a cycle (2 events on it)")

    monkeypatch.setattr(build, "critical_paths", cycle)
    assert analyze(tl).critical_path is None

    def bug(*a, **k):
        raise ValueError("a numpy error, not a cycle")

    monkeypatch.setattr(build, "critical_paths", bug)
    with pytest.raises(ValueError, match="not a cycle"):
        analyze(tl)


def test_a_graph_cycle_that_reaches_the_cli_is_an_internal_error(monkeypatch, tmp_path) -> None:
    """GIVEN an inference that finds a cycle where none is handled WHEN `analyze` runs THEN
    one line naming it and exit 70, as any other bug."""
    from pathlib import Path

    from click.testing import CliRunner

    from traceprobe.cli import cli

    def cycle(*a, **k):
        raise GraphCycle("the dependency graph has a cycle (2 events on it)")

    monkeypatch.setattr(build, "_analyze_one", cycle)
    trace = next((Path(__file__).resolve().parents[2] / "sample_traces").rglob("*.json.gz"))
    r = CliRunner().invoke(cli, ["analyze", str(trace), "-o", str(tmp_path / "r.txt")])
    assert r.exit_code == 70
    assert "has a cycle" in r.output
