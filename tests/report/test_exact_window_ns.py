"""The JSON's window carries exact integer ns beside the µs floats (issue 24: at epoch scale
a float64 of µs resolves only ~0.25 µs: …094.5 for …094.565)."""

from __future__ import annotations

from pathlib import Path

from traceprobe.load import pipeline as loader
from traceprobe.report import analyze


def test_epoch_scale_window_edges_are_exact(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(
        '{"traceEvents": ['
        '{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1,'
        ' "ts": 1796092754029094.565, "dur": 100.125},'
        '{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,'
        ' "ts": 1796092754029095.001, "dur": 10, "args": {"device": 0, "stream": 7}}]}'
    )
    w = analyze(loader.load(p)).to_dict()["window"]
    assert (w["start_ns"], w["end_ns"]) == (1796092754029094565, 1796092754029194690)
    assert abs(w["start_us"] * 1000 - w["start_ns"]) < 1000
