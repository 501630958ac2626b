"""Every output format is one entry of the registry, html included."""

from __future__ import annotations

from frames import copy, kernel, timeline
from traceprobe.render import formats, render
from traceprobe.render.html import render_html
from traceprobe.report import analyze


def test_html_is_a_format_like_the_others() -> None:
    """GIVEN a report and its timeline THEN format "html" through the registry is the page
    render_html makes, with the picture when the timeline is given and without it else."""
    tl = timeline(gpu=[kernel(0, 10), copy(5, 20, stream=8)])
    r = analyze(tl)
    assert formats()[:4] == ["text", "json", "markdown", "html"]
    with_picture = render(r, "html", timelines=[tl])
    assert with_picture == render_html(r.to_dict(), [tl])
    tables_only = render(r, "html")
    assert tables_only == render_html(r.to_dict(), None)
    assert 'id="timeline-0"' in with_picture and 'id="timeline-0"' not in tables_only


def test_a_report_draws_over_its_exact_window() -> None:
    """GIVEN recorded traces' reports (whole and one step) THEN the page drawn from the Report
    (its window in exact ns) is the page drawn from its dict (the window found from µs)."""
    from pathlib import Path

    from traceprobe.load.pipeline import load

    root = Path(__file__).resolve().parents[2] / "sample_traces"
    seen = 0
    for path in sorted(root.glob("h200*/*/*/*.pt.trace.json.gz"))[:4]:
        tl = load(path)
        steps = tl.steps["step"].tolist()
        for r in [analyze(tl)] + ([analyze(tl, step=steps[-1])] if steps else []):
            assert render_html([r], [tl]) == render_html([r.to_dict()], [tl]), path
            seen += 1
    assert seen >= 4
