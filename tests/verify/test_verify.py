"""`traceprobe verify`: verdicts on the recorded experiments' claims.

* Rules on hand-built report and metadata dicts, with exact verdicts at and around each
  threshold (no torch, no traces).
* Timeline-only figures on a tiny hand-built trace, with numbers worked out by hand.
* Wall-clock figures and their explanation; the renderers.
* End to end on the CPU: `traceprobe record` then `traceprobe verify` (needs torch).
* The committed GPU samples (sample_traces/h200x2), once they exist.

GIVEN / WHEN / THEN in the names and docstrings.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracebuild import TraceBuilder
from traceprobe import verify as vf
from traceprobe.cli import cli
from traceprobe.load.pipeline import load
from traceprobe.render.verdicts import render
from traceprobe.verify import CANNOT_TELL, FAILS, HOLDS, PARTLY, Recorded

# The committed GPU recording; TRACEPROBE_GPU_SAMPLES points the sample tests at another one.
SAMPLES_GPU = Path(os.environ.get("TRACEPROBE_GPU_SAMPLES") or
                   Path(__file__).resolve().parents[2] / "sample_traces" / "h200x2")


# ----------------------------------------------------------------------------- builders


def report(
    *,
    devices: tuple[tuple[int, float | None, float], ...] = (),
    pairs: tuple[tuple[int, int, float | None, float | None], ...] = (),
    copies: tuple[dict[str, Any], ...] = (),
    comm: tuple[tuple[int, float, float], ...] = (),
    streams: tuple[tuple[int, float, int], ...] = (),
    stream_rows: int | None = None,
    gaps: tuple[dict[str, Any], ...] = (),
    latency_p50: float | None = None,
    span: float = 1000.0,
    gpu_span: float | None = None,
    cpu_ops: int = 10,
    steps: int = 1,
    top_ops: tuple[str, ...] = ("aten::mm",),
    step_reports: list[dict[str, Any]] | None = None,
    causes: dict[int, tuple[str, float]] | None = None,
    rank: int | None = None,
) -> dict[str, Any]:
    """The parts of a traceprobe.report/1 dict that the rules read.

    devices: (device, utilization, kernel_us); pairs: (a, b, fraction_of_either,
    fraction_of_min); copies: "all" rows; comm: (device, hidden_fraction, exposed_us);
    streams: (device, concurrent_us, max_concurrent); causes: device -> (name, us).
    """
    return {
        "trace": "hand-built",
        "rank": rank,
        "span_us": span,
        "gpu_span_us": (span * 0.9 if devices else 0.0) if gpu_span is None else gpu_span,
        "counts": {"kernels": 10 if devices else 0, "cpu_ops": cpu_ops, "steps": steps},
        "devices": [{"device": d, "utilization": u, "kernel_us": k} for d, u, k in devices],
        "streams": [{"device": 0, "stream": 7 + i} for i in range(
            stream_rows if stream_rows is not None else len(devices))],
        "overlap": {
            "cross_device": [{"devices": [a, b], "fraction_of_either": fe, "fraction_of_min": fm}
                             for a, b, fe, fm in pairs],
            "multi_device_us": 0.0,
            "copy_compute": [{"direction": "all", **c} for c in copies],
            "comm_compute": [{"device": d, "hidden_fraction": h, "exposed_us": e}
                             for d, h, e in comm],
            "streams": [{"device": d, "concurrent_us": c, "max_concurrent": m}
                        for d, c, m in streams],
        },
        "host": {
            "devices": [{"device": d, "causes": [{"name": n, "us": us}]}
                        for d, (n, us) in (causes or {}).items()],
            "launch_latency": {"p50_us": latency_p50},
            "kernel_gaps": list(gaps),
        },
        "top_ops": [{"name": n, "count": 100} for n in top_ops],
        "steps": step_reports or [],
    }


def meta(workload: str, variant: str, *, gpus: int = 2, correct: bool | None = None,
         facts: dict[str, Any] | None = None, plain_s: float = 0.1, prof_s: float = 0.11,
         profiled_steps: int = 1, ranks: int = 0) -> dict[str, Any]:
    """A traceprobe.meta/1 dict: ``gpus`` GPUs used (0: the CPU fallback)."""
    used = [f"cuda:{i}" for i in range(gpus)] if gpus else ["cpu"]
    m: dict[str, Any] = {
        "workload": workload,
        "variant": variant,
        "claim": f"registry claim of {workload}",
        "devices_used": [] if ranks else used,
        "machine": {"kind": "cuda" if gpus else "cpu", "gpus": gpus},
        "gpus": [{"name": "NVIDIA H200"}] * gpus,
        "correct": correct,
        "correct_detail": "C differs from the serial results" if correct is False else "ok",
        "facts": facts or {},
        "profiler": {"profiled_steps": profiled_steps},
        "timing": {"plain": {"mean_s": plain_s, "step_wall_s": [plain_s] * 3},
                   "profiled": {"active_mean_s": prof_s, "cuda_event_ms": {}}},
    }
    if ranks:
        m["ranks"] = [{"rank": r, "device": used[r % len(used)]} for r in range(ranks)]
    return m


def two_gpus(overlap: float | None, of_min: float | None = None, util: float = 0.95,
             **kw: Any) -> dict[str, Any]:
    return report(devices=((0, util, 500.0), (1, util, 500.0)),
                  pairs=((0, 1, overlap, of_min if of_min is not None else overlap),), **kw)


def cpu_only(**kw: Any) -> dict[str, Any]:
    return report(**kw)


def one_sentence(why: str) -> None:
    assert why and "\n" not in why, why
    assert ". " not in why and not why.endswith("."), why
    assert re.search(r"\d", why), f"no number in {why!r}"


def decide(v: Recorded, *peers: Recorded) -> vf.Decision:
    d = vf.RULES[v.workload](v, {p.variant: p for p in peers})
    one_sentence(d.why)
    return d


# ----------------------------------------------------------------------------- two-devices


@pytest.mark.parametrize(("par", "seq", "expected"), [
    (0.90, 0.05, HOLDS),
    (0.95, 0.0, HOLDS),
    (0.8999, 0.0, FAILS),
    (0.97, 0.0501, FAILS),
])
def test_two_devices_parallel_needs_overlap_and_a_quiet_sequential(par, seq, expected):
    """GIVEN parallel and sequential overlaps around 0.9 and 0.05 WHEN judging parallel THEN
    it holds exactly when parallel >= 0.9 and sequential <= 0.05."""
    p = Recorded(meta("two-devices", "parallel", plain_s=0.1), two_gpus(par, span=1000))
    s = Recorded(meta("two-devices", "sequential", plain_s=0.2), two_gpus(seq, span=2000))
    d = decide(p, s)
    assert d.verdict == expected
    assert d.figures["cross_device_overlap"] == par
    assert d.figures["sequential_cross_device_overlap"] == seq
    assert d.figures["speedup_wall"] == pytest.approx(2.0)
    assert d.figures["speedup_gpu_span"] == pytest.approx(2.0)


def test_two_devices_parallel_without_sequential_decides_on_its_own():
    d = decide(Recorded(meta("two-devices", "parallel"), two_gpus(0.92)))
    assert d.verdict == HOLDS and "sequential: not recorded" in d.why


@pytest.mark.parametrize(("seq", "expected"), [(0.05, HOLDS), (0.0, HOLDS), (0.06, FAILS)])
def test_two_devices_sequential_is_the_control(seq, expected):
    d = decide(Recorded(meta("two-devices", "sequential"), two_gpus(seq)))
    assert d.verdict == expected


def test_two_devices_on_one_gpu_cannot_tell():
    """GIVEN both halves ran on GPU 0 (one GPU) THEN cannot tell, and the why says why."""
    v = Recorded(meta("two-devices", "parallel", gpus=1),
                 report(devices=((0, 0.9, 900.0),)))
    d = decide(v)
    assert d.verdict == CANNOT_TELL
    assert d.why == "ran on 1 GPU: cross-device overlap needs two"


def test_two_devices_on_the_cpu_cannot_tell():
    d = decide(Recorded(meta("two-devices", "parallel", gpus=0), cpu_only()))
    assert d.verdict == CANNOT_TELL
    assert d.why == "ran on the CPU (0 GPUs on this machine): cross-device overlap needs two"


def test_cpu_run_on_a_gpu_machine_says_device_cpu():
    m = meta("two-devices", "parallel", gpus=0)
    m["gpus"] = [{"name": "NVIDIA H200"}] * 2
    d = decide(Recorded(m, cpu_only()))
    assert d.why.startswith("ran on the CPU (--device cpu, 2 GPUs unused):")


# ----------------------------------------------------------------------------- copy


def copy_report(hidden: float | None, pageable: int = 0, copies: int = 50) -> dict[str, Any]:
    memcpy = 1000.0 if hidden is not None else 0.0
    row = {"device": 0, "hidden_fraction": hidden, "memcpy_us": memcpy,
           "exposed_us": memcpy * (1 - (hidden or 0)), "copies": copies, "pageable": pageable}
    return report(devices=((0, 0.9, 5000.0),), copies=(row,))


@pytest.mark.parametrize(("hidden", "expected"), [
    (0.5, HOLDS), (0.98, HOLDS), (0.4999, FAILS), (0.0, FAILS)])
def test_copy_holds_from_half_hidden(hidden, expected):
    v = Recorded(meta("copy", "side-stream", gpus=1), copy_report(hidden),
                 {"copies_on_compute_stream": 0})
    assert decide(v).verdict == expected


def test_copy_nonblocking_same_stream_says_why_it_cannot_hide():
    """GIVEN the notes' non_blocking copies into pageable memory, all on the compute stream,
    0% hidden THEN does not hold, and the why names the stream and the pageable memory."""
    v = Recorded(meta("copy", "nonblocking-same-stream", gpus=1), copy_report(0.0, pageable=50),
                 {"copies_on_compute_stream": 50})
    d = decide(v)
    assert d.verdict == FAILS
    assert d.why.startswith("copies ran on the compute stream: 0.0% hidden")
    assert d.why.endswith("non_blocking into pageable memory is synchronous")


def test_copy_pinned_on_the_compute_stream_blames_stream_order():
    v = Recorded(meta("copy", "nonblocking-same-stream", gpus=1, facts={"dest_pinned": True}),
                 copy_report(0.0), {"copies_on_compute_stream": 50})
    d = decide(v)
    assert d.verdict == FAILS and "whatever non_blocking says" in d.why
    assert d.figures["dest_pinned"] is True


def test_copy_side_stream_speedup_is_against_blocking():
    b = Recorded(meta("copy", "blocking", gpus=1, plain_s=0.3), copy_report(0.0, pageable=50))
    s = Recorded(meta("copy", "side-stream", gpus=1, plain_s=0.1), copy_report(0.9))
    d = decide(s, b)
    assert d.figures["baseline"] == "blocking"
    assert d.figures["speedup_wall"] == pytest.approx(3.0)


def test_copy_on_the_cpu_or_without_copies_cannot_tell():
    assert decide(Recorded(meta("copy", "blocking", gpus=0), cpu_only())).verdict == CANNOT_TELL
    no_copies = report(devices=((0, 0.9, 5000.0),))
    assert decide(Recorded(meta("copy", "blocking", gpus=1), no_copies)).verdict == CANNOT_TELL


# ----------------------------------------------------------------------------- independent-ops


def matmuls(n: int, kernel_us: float, **extra: Any) -> Recorded:
    variant = "one-stream" if n > 1 else "single"
    return Recorded(meta("independent-ops", variant, gpus=1, facts={"matmuls_per_step": n},
                         plain_s=n * 0.003),
                    report(devices=((0, 0.95, kernel_us),), streams=((0, 0.0, 1),)), extra)


@pytest.mark.parametrize(("mk", "conc_us", "expected"), [
    (1, 0.0, FAILS),        # one stream serialises
    (2, 9.99, FAILS),       # touching by rounding: < 1% of 1000 µs
    (2, 10.0, HOLDS),       # exactly 1%
    (3, 500.0, HOLDS),
])
def test_independent_ops_one_stream_needs_real_concurrency(mk, conc_us, expected):
    one = matmuls(50, 1000.0, max_concurrent_kernels=mk, concurrent_kernels_us=conc_us)
    assert decide(one, matmuls(1, 20.0)).verdict == expected


def test_independent_ops_reports_per_matmul_time_and_the_50x_ratio():
    """GIVEN 50 matmuls of 2.6 ms each and one of 2.6 ms THEN one at a time, ratio 50."""
    one = matmuls(50, 130_000.0, max_concurrent_kernels=1, concurrent_kernels_us=0.0)
    single = matmuls(1, 2_600.0)
    d = decide(one, single)
    assert d.verdict == FAILS
    assert d.figures["kernel_per_matmul_us"] == pytest.approx(2_600.0)
    assert d.figures["kernel_time_ratio"] == pytest.approx(50.0)
    assert "50 matmuls ran one at a time" in d.why and "50.0x one matmul" in d.why


@pytest.mark.parametrize(("ratio", "expected"), [(50.0, FAILS), (45.0, FAILS), (44.99, HOLDS)])
def test_independent_ops_single_judges_the_notes_reading(ratio, expected):
    """The notes' claim 'fifty take less than fifty times one' holds only below 50 x 0.9."""
    one = matmuls(50, 1000.0 * ratio, max_concurrent_kernels=1)
    assert decide(matmuls(1, 1000.0), one).verdict == expected


def test_independent_ops_single_alone_cannot_tell():
    assert decide(matmuls(1, 1000.0)).verdict == CANNOT_TELL


# ----------------------------------------------------------------------------- small-ops


def small(variant: str, span: float, plain_s: float, cpu_ops: int = 250,
          launch_bound: bool = True, ops: tuple[str, ...] = ("aten::mm",)) -> Recorded:
    gaps = ({"device": 0, "stream": 7, "gaps": 49, "p50_us": 20.0, "kernel_p50_us": 2.0,
             "launch_bound": launch_bound},)
    r = report(devices=((0, 0.05, 100.0),), gaps=gaps, latency_p50=8.0, span=span,
               gpu_span=span, cpu_ops=cpu_ops, top_ops=ops,
               causes={0: ("cudaLaunchKernel", 900.0)})
    return Recorded(meta("small-ops", variant, gpus=1, plain_s=plain_s), r,
                    {"max_concurrent_kernels": 1})


@pytest.mark.parametrize(("trace", "wall", "expected"), [
    (1.2, 1.2, HOLDS),
    (1.19, 1.5, FAILS),
    (1.5, 1.19, FAILS),     # the clocks disagree
    (1.0, 1.0, FAILS),
])
def test_small_ops_run_needs_a_speedup_on_both_clocks(trace, wall, expected):
    loop = small("loop", span=1000.0 * trace, plain_s=0.001 * wall)
    run = small("run", span=1000.0, plain_s=0.001)
    d = decide(run, loop)
    assert d.verdict == expected
    if expected == FAILS and trace < 1.2:
        assert "the notes' 0.0518 s against 0.0005 s timed the loop first" in d.why


def test_small_ops_different_ops_is_not_loop_against_run():
    """GIVEN the notes' loop calling matmul (350 ops a step) against run()'s mm (250)
    THEN a 2x 'speedup' does not hold: the ops differ."""
    loop = small("loop", span=2000.0, plain_s=0.002, cpu_ops=350,
                 ops=("aten::matmul", "aten::mm"))
    d = decide(small("run", span=1000.0, plain_s=0.001), loop)
    assert d.verdict == FAILS
    assert "350 CPU ops per step and run() 250 (aten::matmul" in d.why


@pytest.mark.parametrize(("bound", "expected"), [(True, HOLDS), (False, FAILS)])
def test_small_ops_loop_is_launch_bound_when_kernels_are_shorter_than_gaps(bound, expected):
    d = decide(small("loop", span=1000.0, plain_s=0.001, launch_bound=bound))
    assert d.verdict == expected
    assert d.figures["kernel_p50_us"] == 2.0 and d.figures["gap_p50_us"] == 20.0
    assert d.figures["launch_latency_p50_us"] == 8.0
    if bound:
        assert "while the host spent 900 µs in cudaLaunchKernel" in d.why


def test_small_ops_loop_on_the_cpu_cannot_tell_but_run_can():
    loop = Recorded(meta("small-ops", "loop", gpus=0, plain_s=0.001), cpu_only(span=1000.0))
    run = Recorded(meta("small-ops", "run", gpus=0, plain_s=0.001), cpu_only(span=1000.0))
    assert decide(loop).verdict == CANNOT_TELL
    assert decide(run, loop).verdict == FAILS


# ----------------------------------------------------------------------------- cpu-gpu


@pytest.mark.parametrize(("host", "hidden", "expected"), [
    (0.5, 0.5, HOLDS),
    (0.49, 0.9, FAILS),
    (0.9, 0.49, FAILS),
    (0.6, None, HOLDS),     # no copies in the trace: host overlap alone
])
def test_cpu_gpu_host_and_copies_must_overlap_the_gpu(host, hidden, expected):
    copies = () if hidden is None else ({"device": 0, "hidden_fraction": hidden,
                                         "memcpy_us": 100.0, "exposed_us": 1.0, "copies": 20},)
    r = report(devices=((0, 0.9, 1000.0),), copies=copies)
    v = Recorded(meta("cpu-gpu", "overlapped", gpus=1), r,
                 {"host_compute_us": 1000.0, "host_gpu_overlap_us": 1000.0 * host})
    d = decide(v)
    assert d.verdict == expected
    assert d.figures["host_overlap_fraction"] == pytest.approx(host)


def test_cpu_gpu_on_the_cpu_cannot_tell():
    v = Recorded(meta("cpu-gpu", "overlapped", gpus=0), cpu_only(), {"host_compute_us": 5.0})
    assert decide(v).verdict == CANNOT_TELL


# ----------------------------------------------------------------------------- scheduled


def scheduled(per_step: list[float], expected_steps: int = 3, gpus: int = 2) -> Recorded:
    steps = [dict(two_gpus(f), window={"step": 2 + i}) for i, f in enumerate(per_step)]
    r = two_gpus(min(per_step), steps=len(per_step), step_reports=steps)
    return Recorded(meta("scheduled", "both-devices", gpus=gpus,
                         profiled_steps=expected_steps), r)


def test_scheduled_holds_when_every_active_step_overlaps():
    d = decide(scheduled([0.97, 0.96, 0.90]))
    assert d.verdict == HOLDS
    assert d.figures["steps_recorded"] == d.figures["steps_expected"] == 3
    assert d.figures["cross_device_overlap_per_step"] == [0.97, 0.96, 0.90]


def test_scheduled_names_the_step_that_misses():
    d = decide(scheduled([0.97, 0.89, 0.95]))
    assert d.verdict == FAILS and d.why.startswith("in ProfilerStep#3 the two GPUs")


def test_scheduled_wants_all_active_steps_in_the_trace():
    d = decide(scheduled([0.97, 0.97]))
    assert d.verdict == FAILS
    assert "holds 2 ProfilerStep windows where the schedule has 3 active steps" in d.why


def test_scheduled_on_the_cpu_cannot_tell():
    v = Recorded(meta("scheduled", "both-devices", gpus=0, profiled_steps=3),
                 cpu_only(steps=3, step_reports=[cpu_only(), cpu_only(), cpu_only()]))
    d = decide(v)
    assert d.verdict == CANNOT_TELL and "(3 of 3 active steps in the trace)" in d.why


# ----------------------------------------------------------------------------- dag


def dag(variant: str, concurrent: float, correct: bool | None = True, gpus: int = 1,
        span: float = 1000.0, plain_s: float = 0.1) -> Recorded:
    r = report(devices=((0, 0.9, 1000.0),) if gpus else (), stream_rows=3 if gpus else 0,
               streams=((0, concurrent, 2 if concurrent else 1),) if gpus else (),
               span=span, gpu_span=span)
    return Recorded(meta("dag", variant, gpus=gpus, correct=correct, plain_s=plain_s), r)


@pytest.mark.parametrize(("conc", "correct", "expected"), [
    (146.0, True, PARTLY),  # the streams touched, but no faster than serial (1.00x)
    (0.001, True, PARTLY),
    (0.0, True, FAILS),
    (146.0, False, FAILS),  # a wrong result, whatever the timing
    (146.0, None, CANNOT_TELL),
])
def test_dag_two_streams_needs_concurrency_and_right_results(conc, correct, expected):
    d = decide(dag("two-streams", conc, correct), dag("serial", 0.0))
    assert d.verdict == expected
    if expected == PARTLY:
        assert "not the notes' 61.86x" in d.why and "the DAG ran no faster" in d.why


@pytest.mark.parametrize(("serial_span", "serial_s", "expected"), [
    (1300.0, 0.13, HOLDS), (1300.0, 0.1, PARTLY), (1100.0, 0.13, PARTLY)])
def test_dag_two_streams_holds_only_with_a_speedup(serial_span, serial_s, expected):
    """The notes claim a speedup: 1.2x by the trace and the wall clock both, or only partly."""
    d = decide(dag("two-streams", 146.0), dag("serial", 0.0, span=serial_span, plain_s=serial_s))
    assert d.verdict == expected


def test_dag_wrong_results_do_not_hold_even_on_the_cpu():
    d = decide(dag("two-streams", 0.0, correct=False, gpus=0))
    assert d.verdict == FAILS and "C differs from the serial results" in d.why


@pytest.mark.parametrize(("conc", "expected"), [(0.0, HOLDS), (5.0, FAILS)])
def test_dag_serial_is_the_control(conc, expected):
    assert decide(dag("serial", conc)).verdict == expected


# ----------------------------------------------------------------------------- mlp


def mlp(variant: str, of_min: float = 0.6, correct: bool | None = True, plain_s: float = 0.01,
        span: float = 1000.0) -> Recorded:
    if variant == "single":
        r = report(devices=((0, 0.95, 900.0),), span=span)
        return Recorded(meta("mlp", variant, gpus=1, plain_s=plain_s), r)
    return Recorded(meta("mlp", variant, gpus=2, correct=correct, plain_s=plain_s),
                    two_gpus(of_min * 0.7, of_min=of_min, span=span))


@pytest.mark.parametrize(("of_min", "correct", "expected"), [
    (0.5, True, HOLDS), (0.4999, True, FAILS), (0.9, False, FAILS), (0.9, None, CANNOT_TELL)])
def test_mlp_data_parallel_overlap_of_the_less_busy_gpu(of_min, correct, expected):
    assert decide(mlp("data-parallel", of_min, correct), mlp("single")).verdict == expected


@pytest.mark.parametrize(("single_s", "expected"), [(0.012, HOLDS), (0.0119, FAILS)])
def test_mlp_single_asks_for_a_clear_speedup_from_two_gpus(single_s, expected):
    single = mlp("single", plain_s=single_s, span=single_s * 1e5)
    dp = mlp("data-parallel", plain_s=0.01, span=1000.0)
    d = decide(single, dp)
    assert d.verdict == expected
    assert d.figures["speedup_wall"] == pytest.approx(single_s / 0.01)


# ----------------------------------------------------------------------------- ddp


def ddp(hidden: tuple[float, float], gpus: int = 2, correct: bool = True) -> Recorded:
    ranks = [report(devices=((r, 0.9, 1000.0),), comm=((r, h, 100.0),), rank=r)
             for r, h in enumerate(hidden)] if gpus else [cpu_only(rank=0), cpu_only(rank=1)]
    multi = {"traces": ranks, "cross_trace": {"pairs": [{"fraction_of_either": 0.95}]}}
    return Recorded(meta("ddp", "train", gpus=gpus, correct=correct, ranks=2), multi)


@pytest.mark.parametrize(("hidden", "expected"), [
    ((0.5, 0.9), HOLDS), ((0.5, 0.5), HOLDS), ((0.9, 0.4999), PARTLY), ((0.25, 0.9), PARTLY),
    ((0.1, 0.9), PARTLY), ((0.9, 0.0999), FAILS)])
def test_ddp_judges_the_rank_that_hid_least(hidden, expected):
    d = decide(ddp(hidden))
    assert d.verdict == expected
    assert d.figures["hidden_comm_fraction"] == min(hidden)
    assert d.figures["exposed_comm_us"] == 200.0 and d.figures["cross_rank_overlap"] == 0.95


def test_ddp_on_the_cpu_cannot_tell_and_wrong_parameters_do_not_hold():
    assert decide(ddp((0.0, 0.0), gpus=0)).verdict == CANNOT_TELL
    assert decide(ddp((0.9, 0.9), correct=False)).verdict == FAILS


# ----------------------------------------------------------------------------- the rest


def test_unknown_workload_cannot_tell():
    v = Recorded(meta("future-thing", "x", gpus=1), report(devices=((0, 0.9, 1.0),)))
    out = vf.decide(v, {})
    assert out["verdict"] == CANNOT_TELL and "no rule for workload 'future-thing'" in out["why"]


def test_every_registered_workload_has_a_rule():
    from traceprobe.record import registry

    assert set(vf.RULES) == set(registry.names())


def test_wall_figures_explain_overhead_and_host_time():
    """GIVEN plain 100 ms, profiled 130 ms, span 130 ms with 90 ms of GPU span THEN the
    profiler added 30 ms and the host spent 40 ms outside GPU activity."""
    v = Recorded(meta("dag", "serial", gpus=1, plain_s=0.1, prof_s=0.13),
                 report(devices=((0, 0.9, 1.0),), span=130_000.0, gpu_span=90_000.0))
    figs, note = vf.wall_figures(v)
    assert figs["profiler_overhead_us"] == pytest.approx(30_000.0)
    assert figs["host_outside_gpu_us"] == pytest.approx(40_000.0)
    assert figs["profiled_wall_us"] == pytest.approx(130_000.0)
    assert "the profiler added 30 ms (1.30x)" in note
    assert "the other 40 ms is host time outside GPU activity" in note
    assert "matches the span within 0%" in note


def test_wall_figures_call_out_time_outside_the_trace_and_noise():
    far = Recorded(meta("dag", "serial", gpus=0, plain_s=0.5, prof_s=0.2),
                   cpu_only(span=50_000.0))
    _, note = vf.wall_figures(far)
    assert "300 ms less, which is timing noise" in note
    assert "4.0x the span: that time went outside the traced events" in note
    assert "of host activity only" in note


def test_units_name_every_figure():
    out = [vf.decide(Recorded(meta("two-devices", "parallel"), two_gpus(0.95)), {})]
    units = vf.units(out)
    assert set(units) == set(out[0]["figures"])
    assert units["cross_device_overlap"] == "fraction" and units["span_us"] == "us"


# ----------------------------------------------------------------------------- timeline figures


def test_timeline_figures_on_a_hand_built_trace(tmp_path):
    """GIVEN GPU 0 kernels [0,10) on stream 7 and [5,15) on stream 20, a copy on stream 7
    [20,25) and one on stream 30 [30,32); on the main thread an aten::mm [0,8) (host compute)
    and an aten::copy_ [20,26) around a cudaMemcpyAsync (GPU driving); another thread's op
    THEN 2 kernels at once for 5 µs, 1 copy on a compute stream, 8 µs of host compute, all
    of it under GPU activity."""
    t = TraceBuilder()
    t.kernel("gemm", ts=0, dur=10, device=0, stream=7)
    t.kernel("gemm", ts=5, dur=10, device=0, stream=20)
    t.kernel("gemm", ts=0, dur=10, device=1, stream=7)
    t.memcpy("Memcpy DtoH (Device -> Pinned)", ts=20, dur=5, device=0, stream=7)
    t.memcpy("Memcpy DtoH (Device -> Pinned)", ts=30, dur=2, device=0, stream=30)
    t.op("aten::mm", ts=0, dur=8)
    t.op("aten::copy_", ts=20, dur=6)
    t.runtime("cudaMemcpyAsync", ts=21, dur=4)
    t.op("aten::mm", ts=40, dur=0.5)
    t.op("other", ts=0, dur=100, tid=2)
    figs = vf.timeline_figures(load(t.write(tmp_path / "t.json")))
    assert figs["max_concurrent_kernels"] == 2
    assert figs["concurrent_kernels_us"] == pytest.approx(5.0)
    assert figs["copies_on_compute_stream"] == 1
    assert figs["host_compute_us"] == pytest.approx(8.5)
    assert figs["host_gpu_overlap_us"] == pytest.approx(8.0)
    assert figs["host_kernel_overlap_us"] == pytest.approx(8.0)


# ----------------------------------------------------------------------------- rendering


VERDICTS = {
    "schema": vf.SCHEMA,
    "source": "runs/h200",
    "machine": {"kind": "cuda", "gpus": ["NVIDIA H200", "NVIDIA H200"], "torch": "2.11.0",
                "cuda": "13.0", "hostname": "gpu-1"},
    "units": {"cross_device_overlap": "fraction", "span_us": "us", "speedup_wall": "ratio",
              "per_step": "fraction", "correct": "bool", "streams": "count"},
    "verdicts": [{
        "workload": "two-devices", "variant": "parallel", "folder": "two-devices/parallel",
        "claim": "Both GPUs compute | at once.", "verdict": HOLDS,
        "why": "GPU 0 and GPU 1 were both busy 97.2% of the time either was",
        "figures": {"cross_device_overlap": 0.972, "span_us": 1500.0, "speedup_wall": 1.98,
                    "per_step": [0.97, 0.969], "correct": True, "streams": 3, "none": None},
        "wall_clock": "Unprofiled a step took 132 ms.",
    }],
}


def test_text_lists_the_verdicts_then_explains_each():
    out = render(VERDICTS, "text")
    assert out.startswith("traceprobe verify: runs/h200\n")
    assert "machine: 2 x NVIDIA H200, torch 2.11.0, CUDA 13.0, host gpu-1" in out
    assert "1 variant(s): 1 holds" in out
    assert "\n  two-devices/parallel  holds\n" in out
    assert "\ntwo-devices/parallel: holds\n" in out
    flat = " ".join(out.split())  # long fields wrap at 100 columns
    assert ("figures cross device overlap 97.2%; span 1.50 ms; speedup wall 1.98×; per step "
            "[97.0%, 96.9%]; correct yes; streams 3; none —") in flat
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "  wall     Unprofiled a step took 132 ms." in out


def test_markdown_escapes_and_tabulates():
    out = render(VERDICTS, "markdown")
    assert out.startswith("# traceprobe verify: `runs/h200`\n")
    assert "| `two-devices/parallel` | holds | GPU 0 and GPU 1 were both busy 97.2% " in out
    assert "> Both GPUs compute \\| at once." in out
    assert "| cross device overlap | 97.2% |" in out


def test_json_round_trips():
    assert json.loads(render(VERDICTS, "json")) == json.loads(json.dumps(VERDICTS))


# ----------------------------------------------------------------------------- end to end


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """GIVEN two-devices, copy, dag and small-ops recorded on the CPU."""
    pytest.importorskip("torch")
    out = tmp_path_factory.mktemp("verify") / "out"
    result = invoke("record", "two-devices", "copy", "dag", "small-ops", "--out", str(out),
                    "--device", "cpu", "--no-progress", "--plain-steps", "2")
    assert result.exit_code == 0, result.output
    return out


def test_verify_end_to_end_on_a_cpu_recording(recorded, tmp_path):
    """WHEN verify writes JSON THEN every recorded variant has one verdict, the GPU claims
    cannot be told on this machine, and every why is one sentence with numbers."""
    from traceprobe.record import meta as meta_file

    dest = tmp_path / "verdicts.json"
    result = invoke("verify", str(recorded), "--output", str(dest))
    assert result.exit_code == 0, result.output
    data = json.loads(dest.read_text())
    assert data["schema"] == "traceprobe.verdicts/1"
    assert data["machine"]["kind"] == "cpu" and data["machine"]["torch"]
    got = {(v["workload"], v["variant"]): v for v in data["verdicts"]}
    wanted = {(m["workload"], m["variant"])
              for m in map(meta_file.read, meta_file.find(recorded))}
    assert set(got) == wanted and len(data["verdicts"]) == len(wanted) == 10
    for key, v in got.items():
        one_sentence(v["why"])
        assert set(v["figures"]) <= set(data["units"])
        assert v["wall_clock"] and v["folder"] == "/".join(key)
        if key[0] in ("two-devices", "copy", "dag") or key in (("small-ops", "loop"),
                                                                ("small-ops", "cuda-graph")):
            assert v["verdict"] == CANNOT_TELL, (key, v["why"])
    assert got[("two-devices", "parallel")]["why"].startswith("ran on the CPU")
    # small-ops run is decidable on the CPU, but which way depends on this machine's timing:
    # the verdict must be the one the documented thresholds give on the figures it reports
    run, loop = got[("small-ops", "run")], got[("small-ops", "loop")]
    f = run["figures"]
    run_ops, loop_ops = f["cpu_ops_per_step"], loop["figures"]["cpu_ops_per_step"]
    if abs(loop_ops - run_ops) > vf.SAME_OPS_TOLERANCE * max(loop_ops, run_ops):
        want, words = FAILS, "the ops differ"
    elif f["speedup_span"] >= vf.SPEEDUP_CLEAR and (
        f.get("speedup_wall") is None or f["speedup_wall"] >= vf.SPEEDUP_CLEAR
    ):
        want, words = HOLDS, "issue the same"
    else:
        want, words = FAILS, "issue the same"
    assert (run["verdict"], words in run["why"]) == (want, True), (f, run["why"])


def test_verify_text_and_markdown_and_overwrite(recorded, tmp_path):
    text = invoke("verify", str(recorded))
    assert text.exit_code == 0 and text.output.startswith(f"traceprobe verify: {recorded}")
    dest = tmp_path / "v.md"
    assert invoke("verify", str(recorded), "-o", str(dest)).exit_code == 0
    assert dest.read_text().startswith("# traceprobe verify:")
    again = invoke("verify", str(recorded), "-o", str(dest))
    assert again.exit_code == 4 and "will not overwrite without --force" in again.output
    assert invoke("verify", str(recorded), "-o", str(dest), "--force").exit_code == 0


def test_verify_pairs_variants_within_each_recording(recorded, tmp_path):
    """GIVEN two copies of a recording under one folder WHEN verifying the folder THEN each
    variant's speedups are against its own recording's baseline."""
    alone = vf.verify_dir(recorded)["verdicts"]
    for name in ("a", "b"):
        shutil.copytree(recorded, tmp_path / "both" / name)
    both = vf.verify_dir(tmp_path / "both")["verdicts"]
    assert len(both) == 2 * len(alone)
    assert [v["folder"] for v in both[: len(alone)]] == [f"a/{v['folder']}" for v in alone]
    for mine, theirs in zip(both[: len(alone)], alone, strict=True):
        assert mine["figures"].get("speedup_wall") == theirs["figures"].get("speedup_wall")


def test_verify_errors_name_the_fix(recorded, tmp_path):
    missing = invoke("verify", str(tmp_path / "nope"))
    assert missing.exit_code == 2 and "no such directory" in missing.output
    (tmp_path / "empty").mkdir()
    empty = invoke("verify", str(tmp_path / "empty"))
    assert empty.exit_code == 2 and "traceprobe record --out" in empty.output
    broken = tmp_path / "broken"
    shutil.copytree(recorded / "dag", broken / "dag")
    trace = next((broken / "dag" / "serial").glob("*.pt.trace.json.gz"))
    trace.unlink()
    gone = invoke("verify", str(broken))
    assert gone.exit_code == 3 and trace.name in gone.output and "--force" in gone.output


def test_verify_reports_the_good_variants_and_names_each_bad_file(recorded, tmp_path):
    """GIVEN a copy of a recording where one variant's trace is cut inside its gzip header
    (beyond salvage) and another's is a JSON file that is no trace WHEN verifying THEN every
    other variant has a verdict (those of untouched workloads the same verdict and figures
    as the intact recording), stderr has one line per bad file naming it, and the exit is
    3, or 0 with --skip-bad."""
    copy = tmp_path / "copy"
    shutil.copytree(recorded, copy)
    cut = next((copy / "dag" / "serial").glob("*.pt.trace.json.gz"))
    cut.write_bytes(cut.read_bytes()[:12])
    junk = next((copy / "copy" / "blocking").glob("*.pt.trace.json.gz"))
    junk.unlink()
    junk = junk.with_name(junk.name.removesuffix(".gz"))
    junk.write_text('{"model": "resnet", "lr": 0.1}')
    meta_path = copy / "copy" / "blocking" / "traceprobe.meta.jsonc"
    meta_path.write_text(meta_path.read_text().replace(".pt.trace.json.gz", ".pt.trace.json"))
    bad = {("dag", "serial"), ("copy", "blocking")}

    clean = {(v["workload"], v["variant"]): v for v in vf.verify_dir(recorded)["verdicts"]}
    dest = tmp_path / "v.json"
    result = CliRunner().invoke(cli, ["verify", str(copy), "-o", str(dest)])
    assert result.exit_code == 3, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 2, lines
    assert any(str(cut) in ln for ln in lines) and any(str(junk) in ln for ln in lines)
    assert all(ln.startswith("traceprobe: error: ") and "Traceback" not in ln for ln in lines)
    got = {(v["workload"], v["variant"]): v for v in json.loads(dest.read_text())["verdicts"]}
    assert set(got) == set(clean) - bad
    untouched = [k for k in got if k[0] not in {w for w, _ in bad}]
    assert untouched  # two-devices and small-ops: peers intact, so the same verdicts
    for key in untouched:
        assert (got[key]["verdict"], got[key]["figures"]) == (
            clean[key]["verdict"], clean[key]["figures"])

    skip = CliRunner().invoke(cli, ["verify", str(copy), "--skip-bad"])
    assert skip.exit_code == 0 and len(skip.stderr.splitlines()) == 2, skip.stderr
    assert "dag/serial" not in skip.stdout and "dag/two-streams" in skip.stdout


def test_verify_with_nothing_readable_writes_nothing(recorded, tmp_path):
    """GIVEN a recording whose only variant's trace is not a trace WHEN verifying THEN exit 3
    with the file named and no verdicts written, --skip-bad or not."""
    one = tmp_path / "one"
    shutil.copytree(recorded / "dag" / "serial", one / "dag" / "serial")
    trace = next((one / "dag" / "serial").glob("*.pt.trace.json.gz"))
    trace.write_bytes(b"not gzip at all")
    dest = tmp_path / "v.json"
    result = CliRunner().invoke(cli, ["verify", str(one), "-o", str(dest), "--skip-bad"])
    assert result.exit_code == 3 and str(trace) in result.stderr
    assert not dest.exists()


# ----------------------------------------------------------------------------- GPU samples


@pytest.fixture(scope="module")
def gpu_verdicts() -> dict[tuple[str, str], dict[str, Any]]:
    if not SAMPLES_GPU.is_dir():
        pytest.skip(f"{SAMPLES_GPU} is not committed yet (GPU traces from scripts/record_gpu.sh)")
    data = vf.verify_dir(SAMPLES_GPU)
    return {(v["workload"], v["variant"]): v for v in data["verdicts"]}


def test_samples_two_devices_parallel_overlaps_and_sequential_does_not(gpu_verdicts):
    par = gpu_verdicts[("two-devices", "parallel")]
    seq = gpu_verdicts[("two-devices", "sequential")]
    assert par["figures"]["cross_device_overlap"] >= 0.9 and par["verdict"] == HOLDS
    assert seq["figures"]["cross_device_overlap"] <= 0.05 and seq["verdict"] == HOLDS


def test_samples_copy_same_stream_hides_nothing_and_side_stream_hides(gpu_verdicts):
    same = gpu_verdicts[("copy", "nonblocking-same-stream")]
    side = gpu_verdicts[("copy", "side-stream")]
    assert same["figures"]["hidden_copy_fraction"] <= 0.05 and same["verdict"] == FAILS
    assert "compute stream" in same["why"]
    assert side["figures"]["hidden_copy_fraction"] > 0.5 and side["verdict"] == HOLDS


def test_samples_committed_verdicts_match_a_fresh_run(gpu_verdicts):
    """Where a verdicts file is committed beside the samples, it says what verify says now."""
    beside = SAMPLES_GPU.parent / f"verdicts-{SAMPLES_GPU.name}.json"
    candidates = [*SAMPLES_GPU.glob("*.json"), beside]
    files = [p for p in candidates
             if p.is_file() and json.loads(p.read_text()).get("schema") == vf.SCHEMA]
    if not files:
        pytest.skip(f"no traceprobe.verdicts/1 file committed for {SAMPLES_GPU}")
    for p in files:
        committed = {(v["workload"], v["variant"]): v["verdict"]
                     for v in json.loads(p.read_text())["verdicts"]}
        assert committed == {k: v["verdict"] for k, v in gpu_verdicts.items()}, p
