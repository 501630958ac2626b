"""GIVEN a recorded variant WHEN record finishes THEN traceprobe's scalars sit beside its traces."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("tensorboard")

from traceprobe.cli import main  # noqa: E402
from traceprobe.record import meta  # noqa: E402


def test_record_writes_tensorboard_scalars_beside_the_traces(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["record", "two-devices/parallel", "--device", "cpu", "--out", str(out),
                 "--no-progress"]) == 0
    folder = out / "two-devices" / "parallel"
    m = json.loads((folder / meta.FILENAME).read_text())
    events = sorted((folder / "traceprobe").rglob("events.out.tfevents.*"))
    assert events, m["tensorboard_scalars"]
    assert m["tensorboard_scalars"] == ", ".join(str(p.relative_to(folder)) for p in events)

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(events[0].parent))
    acc.Reload()
    tags = acc.Tags()
    assert "traceprobe/span_us" in tags["scalars"] + tags["tensors"], tags
