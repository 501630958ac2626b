"""``--step all`` computes every step in one pass (traceprobe.report.windows); each of its
step reports must hold exactly what analysing that one step alone gives (``step=N``,
which cuts nothing: one window of plain frames)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from traceprobe.load.pipeline import load
from traceprobe.report import analyze

ROOT = Path(__file__).resolve().parents[2]
ALONE_ONLY = ("steps", "headlines", "warnings", "salvaged", "schema",
              "efficiency")  # per trace, not per step


def with_steps() -> list[Path]:
    out = []
    for p in sorted(ROOT.glob("sample_traces/**/*.pt.trace.json.gz")):
        if '"ProfilerStep#' in _text(p):
            out.append(p)
    return out


def _text(p: Path) -> str:
    import gzip

    return gzip.decompress(p.read_bytes()).decode(errors="replace")


def same_as_alone(tl) -> int:
    """Assert each step of ``step="all"`` equals ``step=N`` alone; the number of steps."""
    every = analyze(tl, step="all")
    for s in every.steps:
        alone = analyze(tl, step=s.window.step).to_dict()
        got = s.to_dict()
        for k in ALONE_ONLY:
            alone.pop(k, None)
            got.pop(k, None)
        assert json.dumps(got, sort_keys=True) == json.dumps(alone, sort_keys=True), (
            f"{tl.source} step {s.window.step}")
    return len(every.steps)


@pytest.mark.parametrize("path", with_steps(), ids=lambda p: str(p.relative_to(ROOT)))
def test_each_step_as_if_alone(path: Path) -> None:
    """GIVEN a recorded trace with ProfilerSteps WHEN analysing all steps at once THEN
    every step report is the report of that step analysed alone."""
    assert same_as_alone(load(path)) >= 1


def test_many_small_steps_as_if_alone(tmp_path: Path) -> None:
    """GIVEN the benchmark's many-steps shape (launch, kernel, copy and op per step) WHEN
    all steps are analysed at once THEN each equals its own analysis."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from bench import many_steps_trace

    p = tmp_path / "steps.json"
    p.write_text(json.dumps(many_steps_trace(40)))
    assert same_as_alone(load(p)) == 40


def test_sample_set_has_steps() -> None:
    """The parametrised test above has something to run on."""
    assert len(with_steps()) >= 5
