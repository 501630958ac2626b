"""`analyze --tensorboard` analyses each trace once (the scalars need every step; the report
with steps gives the plain report too)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from traceprobe.cli import cli
from traceprobe.report import build

TRACE = next((Path(__file__).resolve().parents[2] / "sample_traces" / "h200").rglob(
    "*.pt.trace.json.gz"))


@pytest.mark.parametrize("step", [None, "all"])
def test_each_trace_is_analysed_once(tmp_path: Path, monkeypatch, step) -> None:
    pytest.importorskip("tensorboard")
    trace = tmp_path / TRACE.name
    shutil.copy(TRACE, trace)
    calls = []
    real = build._analyze_one
    monkeypatch.setattr(build, "_analyze_one", lambda *a: calls.append(a[1]) or real(*a))
    args = ["analyze", str(trace), "--tensorboard", "-o", str(tmp_path / "r.json")]
    result = CliRunner().invoke(cli, args + (["--step", step] if step else []))
    assert result.exit_code == 0, result.output
    assert calls == ["all"]
    assert list((tmp_path / "traceprobe").glob("events.out.tfevents.*"))
    report = (tmp_path / "r.json").read_text()
    assert ('"steps": []' in report or '"steps":[]' in report) == (step is None)
