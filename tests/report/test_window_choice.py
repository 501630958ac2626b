"""`window=` / `--window steps|profiler|events`: what the whole-trace figures cover.

GIVEN the committed H200 DataLoader loop (3 ProfilerSteps, a profiler ``Trace`` span, events
after the last step), WHEN analysed with each window, THEN the window's edges are the ones
read independently from the trace's frames, and every command takes the option.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from traceprobe import report as rp
from traceprobe.cli import cli
from traceprobe.errors import UsageError
from traceprobe.load import load

LOOP = next(Path("sample_traces/h200/examples/dataloader-loop").glob("*.pt.trace.json.gz"))


@pytest.fixture(scope="module")
def tl():  # type: ignore[no-untyped-def]
    return load(LOOP)


def test_each_window_has_the_edges_read_from_the_frames(tl) -> None:  # type: ignore[no-untyped-def]
    steps = tl.steps
    starts = [int(df["start"].min()) for df in (tl.cpu, tl.gpu) if not df.empty]
    ends = [int(df["end"].max()) for df in (tl.cpu, tl.gpu) if not df.empty]
    want = {
        "steps": (int(steps["start"].min()), int(steps["end"].max())),
        "events": (min(starts), max(ends)),
    }
    for window, (lo, hi) in want.items():
        r = rp.analyze(tl, window=window)
        assert (r.window.basis, r.window.start_ns, r.window.end_ns) == (window, lo, hi)
        assert r.span_ns == hi - lo
        rp.check(r)
    prof = rp.analyze(tl, window="profiler")
    plo, phi = tl.meta.extra["profiler_span_ns"]
    assert prof.window.basis == "profiler"
    assert max(plo, min(starts)) <= prof.window.start_ns < prof.window.end_ns <= phi
    # the profiler span holds events after the last step: a longer window than the steps'
    assert prof.window.end_ns > want["steps"][1]
    assert rp.analyze(tl).window.basis == "steps"  # the default is unchanged


def test_a_window_the_trace_lacks_falls_back(tmp_path: Path) -> None:
    from tracebuild import TraceBuilder

    t = TraceBuilder()
    t.kernel("k", 0, 10, device=0)
    t.op("aten::mm", 0, 5)
    path = t.write(tmp_path / "t.json")
    r = rp.analyze(load(path), window="profiler")  # no Trace span: every event
    assert r.window.basis == "events"
    with pytest.raises(UsageError, match="window must be one of"):
        rp.analyze(load(path), window="bogus")


@pytest.mark.parametrize("command", ["analyze", "compare", "check", "whatif"])
def test_every_command_takes_window(command: str) -> None:
    args = {
        "analyze": ["analyze", str(LOOP), "-f", "json"],
        "compare": ["compare", str(LOOP), str(LOOP), "-f", "json"],
        "check": ["check", str(LOOP), "-e", "span_us > 0", "-f", "json"],
        "whatif": ["whatif", str(LOOP), "-f", "json"],
    }[command]
    res = CliRunner().invoke(cli, [*args, "--window", "events"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    if command == "analyze":
        assert out["window"]["basis"] == "events"
    elif command == "compare":
        assert out["a"]["window"]["basis"] == "events"
    elif command == "whatif":  # one prediction of the whole replayed trace
        assert [s["step"] for s in out["windows"]] == [None]
    res = CliRunner().invoke(cli, [*args, "--window", "nope"])
    assert res.exit_code == 2
