"""Which walk a GPU-near step's critical path takes (traceprobe.graph._gpu_bounds): the GPU's
unless it is more idle than the host's, beyond a slack when the GPU walk is mostly GPU work."""

from __future__ import annotations

from pathlib import Path

import pytest

from traceprobe import analyze
from traceprobe.graph import GPU_IDLE_SLACK, _gpu_bounds
from traceprobe.graph.path import GPU_CATEGORIES
from traceprobe.load import load

REPO = Path(__file__).resolve().parents[2]


def _walk(*pieces: tuple[str, int]) -> list[tuple[int, int, str, str, tuple]]:
    """Walked pieces of the given kinds and lengths, end to end from 0."""
    out, t = [], 0
    for kind, n in pieces:
        out.append((t, t + n, kind, kind, ()))
        t += n
    return out


def test_a_gpu_walk_no_more_idle_than_the_host_walk_bounds_the_step() -> None:
    assert _gpu_bounds(_walk(("kernel", 900), ("idle", 100)), _walk(("cpu_op", 900),
                                                                    ("idle", 100)), 1000)


def test_a_busy_gpu_walk_with_short_gaps_bounds_the_step() -> None:
    # 96% kernels, 2% idle (gaps between kernels launched before the recording) against a
    # host walk with no idle and no GPU work: the GPU bounds it
    gpu = _walk(("kernel", 960), ("idle", 20), ("runtime", 20))
    host = _walk(("cpu_op", 700), ("python", 300))
    assert _gpu_bounds(gpu, host, 1000)


def test_a_gpu_walk_over_the_slack_or_mostly_not_gpu_does_not() -> None:
    host = _walk(("cpu_op", 1000))
    over = int(GPU_IDLE_SLACK * 1000) + 10
    assert not _gpu_bounds(_walk(("kernel", 1000 - over), ("idle", over)), host, 1000)
    # little idle but less than half GPU work: the GPU mostly waited on the host
    assert not _gpu_bounds(_walk(("kernel", 400), ("idle", 10), ("cpu_op", 590)), host, 1000)
    # 82% kernels, the rest launch waits and a short gap, against a host busy throughout
    # (the benchmark transformer's steps): the GPU was not saturated, the host bounds it
    assert not _gpu_bounds(_walk(("kernel", 820), ("optimizer", 80), ("cpu_op", 80),
                                 ("idle", 20)), host, 1000)
    # no more GPU work than the host walk already shows: the host walk's account stays
    both = _walk(("kernel", 950), ("cpu_op", 50))
    assert not _gpu_bounds(_walk(("kernel", 960), ("idle", 40)), both, 1000)


def test_the_first_step_of_a_gpu_bound_loop_recorded_again_is_gpu_bound() -> None:
    """The transformer-fp32 loop recorded a second time: the GPU is 98% busy through its
    first profiled step with kernels launched before the recording (their launches are not
    in the trace); its path is the GPU's, not the host's (it was 0% GPU before the slack)."""
    folder = REPO / "sample_traces" / "h200" / "real-loops-2" / "transformer-fp32"
    if not folder.is_dir():
        pytest.skip("the second real-loop recording is not here")
    r = analyze(load(next(folder.glob("*.pt.trace.json.gz"))), step="all")
    first = r.steps[0].critical_path
    assert first["bound_by"] == "GPU"
    br = first["breakdown"]
    assert sum(br[k] for k in GPU_CATEGORIES) >= 0.9 * first["length_us"]
    assert br["idle"] <= GPU_IDLE_SLACK * first["length_us"]
