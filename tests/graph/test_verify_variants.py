"""verify's rules for the two variants recorded as what-if ground truth: small-ops/cuda-graph
and independent-ops/many-streams (hand-built report and metadata dicts)."""

from __future__ import annotations

from typing import Any

import pytest

from traceprobe.verify import CANNOT_TELL, FAILS, HOLDS, Recorded
from traceprobe.verify.rules import RULES


def _report(span: float, gpu: bool = True) -> dict[str, Any]:
    return {"trace": "hand", "span_us": span, "gpu_span_us": span * 0.9 if gpu else 0.0,
            "counts": {"kernels": 50 if gpu else 0, "steps": 1},
            "devices": [{"device": 0, "utilization": 0.9, "kernel_us": span * 0.8}] if gpu else []}


def _meta(workload: str, variant: str, plain_s: float, gpus: int = 1, **facts: Any):
    return {"workload": workload, "variant": variant, "claim": "c",
            "devices_used": ["cuda:0"] if gpus else ["cpu"],
            "machine": {"kind": "cuda" if gpus else "cpu", "gpus": gpus},
            "gpus": [{"name": "NVIDIA H200"}] * gpus, "facts": facts,
            "profiler": {"profiled_steps": 1},
            "timing": {"plain": {"mean_s": plain_s}, "profiled": {"active_mean_s": plain_s}}}


def _decide(v: Recorded, *peers: Recorded):
    d = RULES[v.workload](v, {p.variant: p for p in peers})
    assert d.why and "\n" not in d.why and any(c.isdigit() for c in d.why)
    return d


@pytest.mark.parametrize(("loop_span", "loop_s", "expected"), [
    (1500.0, 0.0015, HOLDS),   # 1.5x on both clocks
    (1190.0, 0.0015, FAILS),   # below the 1.2x of a clear speedup by the trace
    (1500.0, 0.00119, FAILS),  # ... or by the wall clock
])
def test_cuda_graph_needs_a_clear_speedup_over_the_loop(loop_span, loop_s, expected):
    graph = Recorded(_meta("small-ops", "cuda-graph", 0.001, cuda_graph=True), _report(1000.0))
    loop = Recorded(_meta("small-ops", "loop", loop_s), _report(loop_span))
    d = _decide(graph, loop)
    assert d.verdict == expected
    assert d.figures["speedup_span"] == pytest.approx(loop_span / 1000.0)


def test_cuda_graph_on_the_cpu_cannot_tell():
    cpu = Recorded(_meta("small-ops", "cuda-graph", 0.001, gpus=0, cuda_graph=False),
                   _report(1000.0, gpu=False))
    assert _decide(cpu).verdict == CANNOT_TELL
    no_graph = Recorded(_meta("small-ops", "cuda-graph", 0.001, cuda_graph=False),
                        _report(1000.0))
    assert _decide(no_graph).verdict == CANNOT_TELL


@pytest.mark.parametrize(("one_span", "expected"), [(1050.0, HOLDS), (1300.0, FAILS)])
def test_many_streams_gains_little_when_matmuls_fill_the_gpu(one_span, expected):
    many = Recorded(_meta("independent-ops", "many-streams", 0.1, streams=4), _report(1000.0),
                    {"max_concurrent_kernels": 2})
    one = Recorded(_meta("independent-ops", "one-stream", 0.1 * one_span / 1000),
                   _report(one_span))
    d = _decide(many, one)
    assert d.verdict == expected
    assert d.figures["speedup_gpu_span"] == pytest.approx(one_span / 1000.0)


def test_many_streams_alone_cannot_tell():
    many = Recorded(_meta("independent-ops", "many-streams", 0.1, streams=4), _report(1000.0))
    assert _decide(many).verdict == CANNOT_TELL
