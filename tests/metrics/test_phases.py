"""Phases of a step (forward / backward / optimizer / dataloader / other) from the markers.

GIVEN a hand-built LBFGS step (two closure calls inside ``Optimizer.step``, backward on the
autograd thread) the phases are exactly the ones worked out by hand below; GIVEN the committed
loops, every step's phases sum to the step, and where the script labelled its own
``forward``/``backward`` ranges, those labels bound the phases.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tracebuild import TraceBuilder
from traceprobe import report as rp
from traceprobe.load import load
from traceprobe.metrics.phases import PHASES

ENGINE = "autograd::engine::evaluate_function: "


def _lbfgs(tmp: Path) -> Path:
    t = TraceBuilder()
    t.step(1, 0, 100)
    t.cpu("user_annotation", "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 10)
    t.cpu("user_annotation", "Optimizer.step#LBFGS.step", 20, 75)
    for zs, zd, fs, fd in ((21, 2, 25, 10), (62, 1, 65, 5)):  # each closure call
        t.cpu("user_annotation", "Optimizer.zero_grad#LBFGS.zero_grad", zs, zd)
        t.op("aten::linear", fs, fd)
    t.op(ENGINE + "MmBackward0", 40, 10, tid=2)  # pass 1: 40..60, no op starts at 50..51
    t.op(ENGINE + "AddBackward0", 51, 9, tid=2)
    t.op("aten::mm", 52, 3, tid=2)  # the engine's own work, nested in its event
    t.op(ENGINE + "MmBackward0", 72, 8, tid=2)  # pass 2, after the second forward
    t.op("aten::add_", 82, 8)  # LBFGS's own update
    t.op("aten::item", 96, 2)
    return t.write(tmp / "lbfgs.json")


def _phases(row: dict) -> dict[str, float]:  # type: ignore[type-arg]
    return {p["name"]: p["us"] for p in row["phases"]}


def test_an_lbfgs_step_by_hand(tmp_path: Path) -> None:
    [row] = rp.analyze(load(_lbfgs(tmp_path))).to_dict()["step_breakdown"]
    assert [p["name"] for p in row["phases"]] == list(PHASES)
    assert _phases(row) == {
        "dataloader": 10,  # [0, 10)
        "backward": 20 + 8,  # [40, 60) and [72, 80)
        "optimizer": 2 + 1 + 15,  # the zero_grads [21, 23) [62, 63), the update [80, 95)
        "forward": (40 - 10 - 2) + (72 - 60 - 1),  # up to each pass, less data and zero_grad
        "other": 5,  # [95, 100)
    }
    assert sum(_phases(row).values()) == 100


LOOPS = sorted(Path("sample_traces").glob("h200/real-loops/*/*.pt.trace.json.gz")) + [
    next(Path("sample_traces/h200/examples/dataloader-loop").glob("*.pt.trace.json.gz")),
    next(Path("sample_traces/cpu/examples/dataloader-loop").glob("*.pt.trace.json.gz")),
    next(Path("sample_traces/h200/profile/convnet_gpu").glob("*.pt.trace.json.gz")),
]


@pytest.mark.parametrize("trace", LOOPS, ids=lambda p: p.parent.name)
def test_phases_sum_to_each_step(trace: Path) -> None:
    tl = load(trace)
    rep = rp.analyze(tl).to_dict()
    assert rep["step_breakdown"]
    for row in rep["step_breakdown"]:
        length = sum(p["us"] for p in row["parts"])
        assert sum(_phases(row).values()) == pytest.approx(length, abs=1e-6)
        assert all(v >= 0 for v in _phases(row).values())
    if tl.cpu["name"].str.startswith(ENGINE).any():  # autograd ran: a training step
        for row in rep["step_breakdown"]:
            ph = _phases(row)
            assert ph["forward"] > 0 and ph["backward"] > 0, row["step"]


def _labelled(tl, name: str, lo: int, hi: int) -> int:  # type: ignore[no-untyped-def]
    """ns of the union of the user's ``name`` ranges within [lo, hi)."""
    c = tl.cpu[(tl.cpu["kind"] == "user_annotation") & (tl.cpu["name"] == name)]
    m = np.zeros(hi - lo, bool)
    for s, e in zip(c["start"].to_numpy(), c["end"].to_numpy(), strict=True):
        m[max(s - lo, 0):max(min(e - lo, hi - lo), 0)] = True
    return int(m.sum())


@pytest.mark.parametrize("where", ["cpu", "h200"])
def test_the_scripts_own_labels_bound_the_phases(where: str) -> None:
    """The dataloader loop wraps its model call in record_function("forward") and its
    loss.backward() in record_function("backward"): the engine's passes lie inside the
    latter, and the former inside the time leading up to them."""
    tl = load(next(Path(f"sample_traces/{where}/examples/dataloader-loop").glob("*.gz")))
    rep = rp.analyze(tl).to_dict()
    for row in rep["step_breakdown"]:
        st = tl.steps[tl.steps["step"] == row["step"]].iloc[0]
        lo, hi = int(st["start"]), int(st["end"])
        ph = _phases(row)
        assert ph["backward"] * 1000 <= _labelled(tl, "backward", lo, hi) + 1
        assert ph["forward"] * 1000 >= _labelled(tl, "forward", lo, hi) - 1
