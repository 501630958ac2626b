"""The profiler's own cost per recorded CPU event, estimated from the trace
(traceprobe/graph/overhead.py; docs/FIGURES.md, "The profiler's own cost"), the scenario
``no-profiler`` that removes it, and the notes that warn about convolution kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tiny import Trace, nested

from traceprobe.graph import whatif
from traceprobe.graph.overhead import MIN_INTERVALS, boundary_intervals, profiler_cost
from traceprobe.graph.scenarios import PROFILER, unprofiled
from traceprobe.load import load

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "sample_traces" / "h200" / "real-loops"


def _nested(groups: int) -> Trace:
    """``groups`` times: linear (b+2 .. b+8.5) > addmm (b+4 .. b+8) > cudaLaunchKernel
    (b+6 .. b+7) and its 1 µs kernel, b = 10 µs x group; one step 0 .. 10 x groups - 0.5.

    Start -> start intervals: step -> linear 2 µs, linear -> addmm 2, addmm -> call 2: all
    2 µs. End -> end: call -> addmm 1 µs, addmm -> linear 0.5, the last linear -> the step's
    end 1: 25 halves and 26 ones for 25 groups, median 1 µs. So 2000 + 1000 = 3000 ns."""
    return nested(groups)


def test_boundary_intervals_by_hand() -> None:
    # A 0..10 holds B 2..5 and C 5..9 (C starts as B ends: a sibling, not a child)
    ss, ee = boundary_intervals(np.array([0, 2, 5]), np.array([10, 5, 9]))
    assert ss.tolist() == [2]  # A's start -> B's start (B's end comes before C's start)
    assert ee.tolist() == [1]  # C's end -> A's end


def test_the_estimate_of_a_tiny_trace_by_hand() -> None:
    cost = profiler_cost(_nested(25).timeline())
    assert (cost.enter_ns, cost.exit_ns, cost.ns) == (2000, 1000, 3000)
    assert (cost.n_enter, cost.n_exit) == (51, 51)  # each: 2 per group + the step's one


def test_too_few_intervals_estimate_nothing() -> None:
    cost = profiler_cost(_nested(MIN_INTERVALS // 3).timeline())
    assert cost.ns == 0 and "nothing removed" in cost.describe()
    res = whatif(_nested(MIN_INTERVALS // 3).timeline(), [PROFILER])
    assert res.windows[0].predicted_us == pytest.approx(res.windows[0].measured_us)


def test_no_profiler_removes_the_estimate() -> None:
    """GIVEN the tiny trace WHEN no-profiler THEN the same prediction as no-profiler:3000
    (the estimate), shorter than the measured step, and the note says where NS came from."""
    tl = _nested(25).timeline()
    est = whatif(tl, [PROFILER])
    given = whatif(tl, ["no-profiler:3000"])
    assert est.windows[0].predicted_us == given.windows[0].predicted_us
    assert est.windows[0].predicted_us < 0.5 * est.windows[0].measured_us
    (note,) = est.notes
    assert "at 3000 ns each, estimated from the trace" in note


def test_a_prediction_for_the_unprofiled_loop_removes_the_profiler_first() -> None:
    assert unprofiled(["no-host-sync"]) == [PROFILER, "no-host-sync"]
    assert unprofiled([]) == [PROFILER]
    assert unprofiled(["no-host-sync"], keep_profiler=True) == ["no-host-sync"]
    assert unprofiled(["cuda-graph", "no-profiler:500"]) == ["cuda-graph", "no-profiler:500"]
    assert unprofiled([" no-profiler "]) == [" no-profiler "]


def _trace(variant: str) -> Path:
    return next((REAL / variant).glob("*.pt.trace.json*"))


@pytest.mark.skipif(not REAL.is_dir(), reason="real-loop recordings not present")
@pytest.mark.parametrize(("variant", "scenario", "warned"), [
    ("resnet-fp32", "precision:tf32", True),
    ("resnet-fp32", "kernels:conv|grad=2", True),
    ("resnet-fp32", "kernels:conv|grad=0.5", False),  # slower kernels: no gain to overstate
    ("transformer-fp32", "precision:tf32", False),  # GEMMs only: no convolution
])
def test_a_precision_change_on_convolutions_warns_of_cudnns_choice(
        variant: str, scenario: str, warned: bool) -> None:
    notes = whatif(load(_trace(variant)), [scenario]).notes
    said = [n for n in notes if "cuDNN's choice of convolution algorithms" in n]
    assert bool(said) == warned, notes
    if warned:
        assert "not as a bound" in said[0] and int(said[0].split(": ")[1].split()[0]) > 0


def test_a_host_set_prediction_says_the_profilers_cost_inside_events_stays() -> None:
    """transformer-fp32 (GPU-bound) under precision:bf16: the predicted steps are host-set
    (their host span is longer than their GPU work), so the notes say the profiler's cost
    inside events stays in them; the unchanged GPU-bound replay and --keep-profiler do not."""
    folder = (Path(__file__).resolve().parents[2] / "sample_traces" / "h200" / "real-loops"
              / "transformer-fp32")
    if not folder.is_dir():
        pytest.skip("the real-loop recordings are not here")
    tl = load(next(folder.glob("*.pt.trace.json.gz")))
    res = whatif(tl, ["precision:bf16"], baseline=["no-profiler"])
    host_set = [w.step for w in res.windows if (w.predicted_period_us or 0) <= w.predicted_us]
    assert host_set == [w.step for w in res.windows]  # every predicted step: the host's
    (note,) = [n for n in res.notes if "sets the predicted period" in n]
    assert f"{len(host_set)} steps ({', '.join(str(n) for n in host_set)})" in note
    assert "traceprobe profile --host-steps 10" in note  # how to calibrate it instead
    assert all(w.gpu_bound for w in res.windows)  # the base: the GPU's work sets its period
    for quiet in (whatif(tl, [], baseline=["no-profiler"]), whatif(tl, ["precision:bf16"])):
        assert not [n for n in quiet.notes if "sets the predicted period" in n]
