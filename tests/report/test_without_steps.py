"""A report made with step="all", its steps dropped, is the plain report (so --tensorboard,
which needs every step, analyses each trace once)."""

from __future__ import annotations

from pathlib import Path

from traceprobe.load.pipeline import load
from traceprobe.report import analyze, analyze_many
from traceprobe.report.build import without_steps

ROOT = Path(__file__).resolve().parents[2] / "sample_traces"


def test_the_whole_report_does_not_depend_on_its_steps() -> None:
    seen = 0
    for path in sorted(ROOT.rglob("*.pt.trace.json.gz")):
        if path.stat().st_size > 1_500_000:
            continue
        tl = load(path)
        assert without_steps(analyze(tl, step="all")).to_dict() == analyze(tl).to_dict(), path
        seen += 1
    assert seen >= 20
    ranks = [load(p) for p in sorted((ROOT / "h200x2" / "ddp").rglob("*.pt.trace.json.gz"))]
    assert len(ranks) >= 2
    assert (without_steps(analyze_many(ranks, step="all")).to_dict()
            == analyze_many(ranks).to_dict())


def test_analyze_with_steps_gives_both_reports() -> None:
    """GIVEN a trace with steps WHEN asked for the report of each kind and every step THEN
    both are those analyze makes, whatever was asked (once for the whole trace)."""
    from traceprobe.report.build import analyze_with_steps

    tl = load(next(p for p in sorted(ROOT.rglob("*.pt.trace.json.gz"))
                   if not load(p).steps.empty))
    every = analyze(tl, step="all").to_dict()
    n = int(tl.steps["step"].iloc[0])
    for step, devices in ((None, None), ("all", None), (n, None), (None, tl.devices[:1])):
        rep, stepped = analyze_with_steps([tl], step=step, devices=devices)
        assert rep.to_dict() == analyze(tl, step=step, devices=devices).to_dict()
        assert [r.to_dict() for r in stepped] == [every]
