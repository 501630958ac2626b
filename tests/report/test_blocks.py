"""``--step all`` builds its step reports a block of steps at a time (traceprobe.report.blocks)
and the JSON writer streams them (render.jsonfmt.pieces, output.write_pieces): the figures
and the bytes must be those of one pass over all steps, whatever the block size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traceprobe import output
from traceprobe.load.pipeline import load
from traceprobe.metrics.grouping import Windows
from traceprobe.metrics.host import host_process
from traceprobe.render.jsonfmt import as_dict, pieces, render
from traceprobe.report import analyze
from traceprobe.report import blocks as blocks_mod
from traceprobe.report.blocks import StepReports
from traceprobe.report.build import _devices, _step_rows
from traceprobe.report.windows import window_reports

ROOT = Path(__file__).resolve().parents[2]
MANY = next(ROOT.glob("sample_traces/h200/many-steps/*.pt.trace.json.gz"))  # 100 steps


@pytest.fixture(scope="module")
def timeline():
    return load(MANY)


def _one_pass(tl) -> list:
    """Every step's report from one cut of the timeline at all steps (no blocks)."""
    rows = _step_rows(tl)
    bounds = [(s, e) for _, s, e in rows]
    return window_reports(tl.cut(bounds), Windows.of(bounds), [(n, "step") for n, _, _ in rows],
                          _devices(tl, None), host_process(tl.cpu))


@pytest.mark.parametrize("block", [1, 7, 100, 1000])
def test_blocks_equal_one_pass(timeline, block: int) -> None:
    """GIVEN a 100-step H200 trace WHEN its step reports are built `block` steps at a time
    THEN each equals the report of one pass over all steps (critical paths aside: the
    one-pass reference computes none)."""
    rows = _step_rows(timeline)
    lazy = StepReports(timeline, rows, _devices(timeline, None), host_process(timeline.cpu),
                       {}, block=block)
    want = _one_pass(timeline)
    assert len(lazy) == len(want) == 100
    assert list(lazy) == want
    assert lazy[0] == want[0] and lazy[-1] == want[-1] and lazy[57] == want[57]
    assert lazy[3:6] == tuple(want[3:6])
    with pytest.raises(IndexError):
        lazy[100]


def test_report_steps_are_lazy_but_equal(timeline, monkeypatch) -> None:
    """GIVEN step="all" WHEN read with blocks of 9 steps and of all steps THEN the whole
    report's dict is the same (critical paths included)."""
    whole = analyze(timeline, step="all").to_dict()
    monkeypatch.setattr(blocks_mod, "BLOCK", 9)
    small = analyze(timeline, step="all")
    assert isinstance(small.steps, StepReports)
    assert json.dumps(small.to_dict()) == json.dumps(whole)
    assert [s.window.step for s in small.steps] == [n for n, _, _ in _step_rows(timeline)]


@pytest.mark.parametrize("top", [None, 3, 0])
def test_pieces_are_the_rendered_bytes(timeline, monkeypatch, top: int | None) -> None:
    """GIVEN step="all" WHEN the JSON is written in pieces (a step at a time) THEN the bytes
    are those of rendering the whole dict at once."""
    monkeypatch.setattr(blocks_mod, "BLOCK", 13)
    rep = analyze(timeline, step="all")
    want = render(as_dict(rep), top=top).encode()
    got = list(pieces(rep, top=top))
    assert len(got) == len(rep.steps) + 2  # head, each step, tail
    assert b"".join(got) == want
    assert json.loads(b"".join(got))["steps"][5]["window"]["step"] == rep.steps[5].window.step


def test_pieces_without_steps_render_whole(timeline) -> None:
    """GIVEN a report without steps (or a plain dict) WHEN written in pieces THEN one piece,
    the rendered text."""
    rep = analyze(timeline)
    assert list(pieces(rep)) == [render(as_dict(rep)).encode()]
    assert list(pieces({"a": [1.5, float("nan")]})) == [render({"a": [1.5, None]}).encode()]


def test_pieces_hold_one_block(timeline, monkeypatch) -> None:
    """GIVEN blocks of 10 steps WHEN the pieces are consumed one by one THEN each block is
    built once, in order, and only when its first step is written."""
    monkeypatch.setattr(blocks_mod, "BLOCK", 10)
    built: list[int] = []
    real = blocks_mod.window_reports

    def spy(tl, windows, labels, *a, **k):
        built.append(labels[0][0])
        return real(tl, windows, labels, *a, **k)

    monkeypatch.setattr(blocks_mod, "window_reports", spy)
    rep = analyze(timeline, step="all")
    numbers = [n for n, _, _ in _step_rows(timeline)]
    it = pieces(rep)
    next(it)  # the head
    assert built == []
    for i in range(12):
        next(it)
        assert built == numbers[: 10 * (i // 10 + 1) : 10]
    for _ in it:
        pass
    assert built == numbers[::10]


def test_write_pieces(tmp_path: Path, capsys) -> None:
    """GIVEN text in pieces WHEN written to a file and to standard output THEN both hold the
    joined text; an existing file is refused without force."""
    parts = [b'{\n  "a": "\xc2\xb5s"', b",\n  ", b'"b": 1\n}\n']
    target = tmp_path / "r.json"
    output.write_pieces(target, iter(parts))
    assert target.read_bytes() == b"".join(parts)
    with pytest.raises(Exception, match="exists"):
        output.write_pieces(target, iter(parts))
    output.write_pieces(output.STDOUT, iter(parts))
    assert capsys.readouterr().out == b"".join(parts).decode()


def test_step_all_without_steps(tmp_path: Path) -> None:
    """GIVEN a trace without ProfilerSteps WHEN analysed with step="all" THEN its steps are an
    empty list in the dict, the head and the pieces."""
    from traceprobe.load.pipeline import from_events

    tl = from_events([{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1,
                       "dur": 5, "args": {"device": 0, "stream": 7, "correlation": 1}}])
    rep = analyze(tl, step="all")
    assert len(rep.steps) == 0 and list(rep.steps) == []
    assert type(rep.to_dict()["steps"]) is list and type(rep.head_dict()["steps"]) is list
    assert rep.to_dict()["steps"] == [] and rep.head_dict()["steps"] == []
    assert json.loads(b"".join(pieces(rep)))["steps"] == []
