"""The Report value object: analyze(), steps, to_dict() against the documented schema, check()."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from frames import comm, copy, kernel, memset, op, runtime, timeline
from traceprobe.errors import UsageError
from traceprobe.report import SCHEMA, analyze, analyze_many, check

SCHEMA_DOC = Path(__file__).parents[2] / "docs" / "REPORT_SCHEMA.md"


def schema_example() -> dict:
    """The jsonc example of docs/REPORT_SCHEMA.md, comments removed."""
    block = re.search(r"```jsonc\n(.*?)```", SCHEMA_DOC.read_text(), re.S).group(1)  # type: ignore[union-attr]
    block = re.sub(r"/\*.*?\*/", "", block, flags=re.S)
    return json.loads(re.sub(r"//[^\n]*", "", block))


def assert_shape(ours, example, where: str = "$") -> None:
    """Same keys in the same order, recursively; numbers where the example has numbers."""
    if isinstance(example, dict):
        assert isinstance(ours, dict), f"{where}: {type(ours).__name__}, want an object"
        assert list(ours) == list(example), f"{where}: keys {list(ours)} != {list(example)}"
        for k in example:
            assert_shape(ours[k], example[k], f"{where}.{k}")
    elif isinstance(example, list):
        assert isinstance(ours, list), f"{where}: {type(ours).__name__}, want a list"
        if example and not isinstance(example[0], (int, float)):
            for i, item in enumerate(ours):
                assert_shape(item, example[0], f"{where}[{i}]")
    elif isinstance(example, bool):
        assert isinstance(ours, bool), f"{where}: {ours!r}, want a boolean"
    elif isinstance(example, (int, float)):
        assert ours is None or (isinstance(ours, (int, float)) and not isinstance(ours, bool)), (
            f"{where}: {ours!r}, want a number"
        )
        if isinstance(example, float) and ours is not None:
            assert isinstance(ours, float), f"{where}: {ours!r}, want a float (µs or fraction)"
    elif isinstance(example, str):
        assert isinstance(ours, str), f"{where}: {ours!r}, want a string"


def _rich():
    """Two GPUs, copies, NCCL, streams, launches, host calls, two steps: every list non-empty."""
    return timeline(
        gpu=[
            kernel(1000, 3000, "gemm", correlation=1),
            kernel(2000, 2500, "gemm", stream=20, correlation=2),
            kernel(4000, 4100, "relu"),
            kernel(6000, 6100, "relu"),
            copy(2500, 3500, "HtoD", stream=21, src_kind="Pageable"),
            memset(500, 600),
            comm(1500, 5000, stream=30),
            kernel(1500, 2500, "gemm", device=1),
        ],
        cpu=[
            op(0, 7000, "aten::linear"),
            runtime(100, 200, correlation=1),
            runtime(300, 400, correlation=2),
            runtime(5000, 5500, "cudaStreamSynchronize"),
        ],
        steps=[(1, 0, 3000), (2, 3000, 7000)],
        names={0: "NVIDIA H200", 1: "NVIDIA H200"},
        rank=3,
        source="rich.json",
    )


def test_to_dict_has_exactly_the_documented_shape() -> None:
    r = analyze(_rich(), step="all")
    check(r)
    d = r.to_dict()
    example = schema_example()
    example["steps"] = []  # steps hold report objects; checked below
    # no shapes and no modules in this trace: null (tests/efficiency/ check them filled)
    example["efficiency"].update(precision=None, modules=None)
    assert_shape(d, example)
    per_trace = ("steps", "headlines", "warnings", "efficiency")  # said once, not per step
    step_example = {k: v for k, v in schema_example().items() if k not in per_trace}
    assert len(d["steps"]) == 2
    for s in d["steps"]:
        assert_shape(s, step_example, "$.steps[]")
    # every list the schema describes is exercised by this trace
    o, h = d["overlap"], d["host"]
    for rows in (
        d["devices"],
        d["streams"],
        o["cross_device"],
        o["copy_compute"],
        o["comm_compute"],
        o["streams"],
        o["streams"][0]["pairs"],
        h["devices"],
        h["devices"][0]["causes"],
        h["kernel_gaps"],
        d["top_kernels"],
        d["top_ops"],
        d["headlines"],
    ):
        assert rows
    json.dumps(d, allow_nan=False)


def test_to_dict_values_are_microseconds() -> None:
    d = analyze(_rich()).to_dict()
    assert d["schema"] == SCHEMA == "traceprobe.report/1"
    assert (d["trace"], d["format"], d["rank"]) == ("rich.json", "kineto", 3)
    assert d["window"] == {"start_us": 0.0, "end_us": 7.0, "step": None, "basis": "steps",
                           "start_ns": 0, "end_ns": 7000}
    assert (d["span_us"], d["gpu_span_us"]) == (7.0, 5.6)
    assert d["counts"] == {
        "kernels": 6,
        "memcpys": 1,
        "memsets": 1,
        "cpu_ops": 1,
        "runtime_calls": 3,
        "steps": 2,
    }
    dev0 = d["devices"][0]
    # kernels ∪ [1000,5000) ∪ [6000,6100) = 4.1 µs; copy [2500,3500) inside; memset 0.1 µs
    assert dev0 == {
        "device": 0,
        "name": "NVIDIA H200",
        "busy_us": 4.2,
        "kernel_us": 4.1,
        "memcpy_us": 1.0,
        "memset_us": 0.1,
        "idle_us": 2.8,
        "utilization": 4.2 / 7.0,
        "active_span_us": 5.6,
        "kernels": 5,
        "memcpys": 1,
        "memsets": 1,
        "streams": 4,
    }
    assert d["steps"] == []


def test_step_all_adds_one_report_per_step_clipped_at_the_boundary() -> None:
    r = analyze(_rich(), step="all")
    check(r)
    s1, s2 = r.steps
    assert (s1.window.step, s1.window.start_ns, s1.window.end_ns, s1.span_ns) == (1, 0, 3000, 3000)
    assert (s2.window.step, s2.window.start_ns, s2.window.end_ns) == (2, 3000, 7000)
    # the NCCL kernel [1500,5000) straddles the boundary at 3000: each step gets its part
    c1, c2 = s1.overlap.comm_compute[0], s2.overlap.comm_compute[0]
    assert (c1.comm_ns, c2.comm_ns, r.overlap.comm_compute[0].comm_ns) == (1500, 2000, 3500)
    b1, b2, whole = s1.device(0).busy_ns, s2.device(0).busy_ns, r.device(0).busy_ns
    # step 1: [500,600) + [1000,3000) = 2100; step 2: [3000,5000) + [6000,6100) = 2100
    assert (b1, b2, whole) == (2100, 2100, 4200)
    # per-step figures add up to at most the whole
    for dev in (0, 1):
        assert sum(s.device(dev).busy_ns for s in r.steps) <= r.device(dev).busy_ns
    assert s1.steps == () and s1.headlines == ()
    assert r.headlines


def test_step_n_analyses_only_that_window() -> None:
    r = analyze(_rich(), step=2)
    check(r)
    assert (r.window.step, r.span_ns, r.steps) == (2, 4000, ())
    # device 1 has no work in step 2 but is still listed (it has activity in the trace)
    assert [d.device for d in r.devices] == [0, 1]
    assert r.device(1).busy_ns == 0
    assert r.to_dict()["window"] == {"start_us": 3.0, "end_us": 7.0, "step": 2, "basis": "step",
                                     "start_ns": 3000, "end_ns": 7000}


def test_zero_length_event_on_a_step_boundary_belongs_to_the_later_step() -> None:
    tl = timeline(gpu=[kernel(10, 10), kernel(0, 5)], steps=[(1, 0, 10), (2, 10, 20)])
    r = analyze(tl, step="all")
    check(r)
    assert [s.counts.kernels for s in r.steps] == [1, 1]


def test_step_may_be_given_as_digits() -> None:
    assert analyze(_rich(), step="2").window.step == 2


def test_missing_step_is_a_usage_error_naming_the_steps() -> None:
    with pytest.raises(UsageError, match=r"rich.json: no ProfilerStep#9; the trace has steps 1-2"):
        analyze(_rich(), step=9)
    with pytest.raises(UsageError, match="no ProfilerStep windows"):
        analyze(timeline(gpu=[kernel(0, 1)]), step=1)
    with pytest.raises(UsageError, match="'last'"):
        analyze(_rich(), step="last")  # type: ignore[arg-type]


def test_cpu_only_trace_has_no_devices_and_no_crash() -> None:
    tl = timeline(cpu=[op(0, 100, "aten::empty"), op(10, 20, "aten::empty")], fmt="cpu-only")
    r = analyze(tl, step="all")
    check(r)
    d = r.to_dict()
    assert d["format"] == "cpu-only"
    assert (d["devices"], d["streams"], d["gpu_span_us"]) == ([], [], 0.0)
    o = d["overlap"]
    assert (
        o["cross_device"],
        o["multi_device_us"],
        o["copy_compute"],
        o["comm_compute"],
        o["streams"],
    ) == ([], 0.0, [], [], [])
    assert d["host"] == {
        "devices": [],
        "kernel_gaps": [],
        "launch_latency": {
            "count": 0,
            "mean_us": None,
            "p50_us": None,
            "p95_us": None,
            "max_us": None,
            "unqueued_count": 0,
            "unqueued_p50_us": None,
            "unqueued_max_us": None,
            "waited_count": 0,
        },
    }
    assert d["serial"] == {
        "serial_us": 0.0,
        "busy_union_us": 0.0,
        "gpu_span_us": 0.0,
        "speedup_vs_span": None,
        "parallelism": None,
    }
    assert d["top_kernels"] == []
    assert r.headlines == (
        "No GPU activity in the window: the trace shows CPU work only",
        "The CPU op with the most self time was aten::empty (100 ns of 110 ns over 2 calls)",
    )


def test_empty_timeline() -> None:
    r = analyze(timeline())
    check(r)
    assert (r.span_ns, r.devices, r.window.start_ns) == (0, (), 0)


def test_headlines_are_sentences_with_numbers() -> None:
    r = analyze(_rich())
    # material findings only (>= 1% of the 7000 ns window at stake), largest stake first
    assert r.headlines == (
        # GPU 1 busy [1500,2500): idle 6000, of which the sync takes 500, the launches 200 and
        # aten::linear's self time the other 5300 (5300 / 6000 = 88.3%)
        "GPU 1 idle 85.7% of the window; main cause: CPU op aten::linear 5.3 µs (88.3% of the "
        "idle time)",
        # GPU 1's 1000 lies inside GPU 0's busy time: 1000 / 4200 (at stake: 4200)
        "GPU 0 and GPU 1 were both busy 23.8% of the time either was",
        # streams: 2300 + 500 + 1000 + 3500 on GPU 0, 1000 on GPU 1 = 8300 over 4200 (4100)
        "8.3 µs of stream work ran in 4.2 µs of GPU busy time (1.98x parallelism)",
        # NCCL [1500,5000) = 3500 at stake; other kernels cover [1500,3000) + [4000,4100) = 1600
        "Communication on GPU 0: 45.7% hidden under compute (1.9 µs exposed)",
        # GPU 0 busy 4200 of 7000; of its idle 2800 the sync takes [5000,5500) = 500, the two
        # launches 200, and aten::linear the rest: 2100 = 75%
        "GPU 0 idle 40.0% of the window; main cause: CPU op aten::linear 2.1 µs (75.0% of the "
        "idle time)",
        # streams 7 ([1000,3000) ...), 30 (NCCL), 20 [2000,2500), 21 (copy [2500,3500)):
        # 3 at once on [2000,3000); >= 2 on [1500,3500) + [4000,4100) = 2100 of 4200
        "Up to 3 streams on GPU 0 ran at once; two or more were busy for 2.1 µs "
        "(50.0% of its busy time)",
        # the copy [2500,3500) = 1000 at stake (14% of the window), all under kernels
        "Copies on GPU 0: 100.0% hidden under compute (0 ns exposed)",
        # the pageable copy: 1024 bytes in 1000 ns
        "HtoD copies Pageable -> Device on GPU 0 ran at 1.02 GB/s (1.6% of PCIe's 64 GB/s): "
        "pageable host memory is staged and blocks the host; pin it (pin_memory)",
    )
    # not material: the copy is fully hidden (0 ns exposed); stream 7 has no host-late gap (its
    # launches came early), so it is not launch-bound


def test_check_catches_broken_figures() -> None:
    r = analyze(_rich())
    c = r.overlap.copy_compute[0]
    bad = replace(
        r,
        overlap=replace(
            r.overlap,
            copy_compute=(replace(c, hidden_ns=c.hidden_ns + 1), *r.overlap.copy_compute[1:]),
        ),
    )
    with pytest.raises(AssertionError, match="hidden \\+ exposed != memcpy"):
        check(bad)
    d = r.devices[0]
    bad = replace(r, devices=(replace(d, busy_ns=d.busy_ns + 10**6), *r.devices[1:]))
    with pytest.raises(AssertionError, match="busy"):
        check(bad)
    p = r.overlap.cross_device[0]
    bad = replace(r, overlap=replace(r.overlap, cross_device=(replace(p, overlap_ns=10**9),)))
    with pytest.raises(AssertionError, match="overlap <= min busy"):
        check(bad)


def test_analyze_many_runs_each_trace_with_the_same_options() -> None:
    ranks = [replace(t, meta=replace(t.meta, rank=i, world_size=2))
             for i, t in enumerate([_rich(), _rich()])]  # ranks of one job: compared
    m = analyze_many(ranks, step=1, devices=[0])
    check(m)
    assert [r.window.step for r in m.reports] == [1, 1]
    assert [[d.device for d in r.devices] for r in m.reports] == [[0], [0]]
    (p,) = m.cross_trace.pairs
    # the same busy set twice: they overlap completely
    assert p.fraction_of_either == 1.0


def figures_example():
    """The worked example of docs/FIGURES.md (there in µs; here 1 µs = 1000 ns)."""
    us = 1000
    return timeline(
        gpu=[
            kernel(3 * us, 9 * us, "gemm", correlation=1),
            kernel(10 * us, 11 * us, "relu", correlation=3),
            copy(6 * us, 11 * us, "HtoD", stream=20, correlation=2, bytes=4096),
            kernel(8 * us, 10 * us, "gemm", device=1),
        ],
        cpu=[
            op(0, 4 * us, "aten::mm"),
            runtime(1 * us, 2 * us, "cudaLaunchKernel", correlation=1),
            runtime(2 * us, 3 * us, "cudaLaunchKernel", correlation=3),
            runtime(4 * us, 5 * us, "cudaMemcpyAsync", correlation=2),
            runtime(5 * us, 12 * us, "cudaStreamSynchronize"),
        ],
    )


def test_figures_md_worked_example() -> None:
    """Every number quoted in docs/FIGURES.md's worked example."""
    r = analyze(figures_example())
    check(r)
    d = r.to_dict()
    assert (d["span_us"], d["gpu_span_us"]) == (12.0, 8.0)
    g0, g1 = d["devices"]
    assert (g0["busy_us"], g0["kernel_us"], g0["memcpy_us"], g0["idle_us"]) == (8.0, 7.0, 5.0, 4.0)
    assert (g0["utilization"], g0["active_span_us"], g0["streams"]) == (8 / 12, 8.0, 2)
    assert (g1["busy_us"], g1["idle_us"], g1["utilization"]) == (2.0, 10.0, 2 / 12)
    assert [(s["stream"], s["busy_us"]) for s in d["streams"]] == [(7, 7.0), (20, 5.0), (7, 2.0)]
    o = d["overlap"]
    assert o["cross_device"] == [
        {
            "devices": [0, 1],
            "overlap_us": 2.0,
            "either_us": 8.0,
            "fraction_of_either": 0.25,
            "fraction_of_min": 1.0,
        }
    ]
    assert o["multi_device_us"] == 2.0
    assert [
        (c["direction"], c["memcpy_us"], c["hidden_us"], c["exposed_us"], c["hidden_fraction"])
        for c in o["copy_compute"]
    ] == [("all", 5.0, 4.0, 1.0, 0.8), ("HtoD", 5.0, 4.0, 1.0, 0.8), ("all", 0.0, 0.0, 0.0, None)]
    assert o["streams"][0] == {
        "device": 0,
        "streams": 2,
        "concurrent_us": 4.0,
        "max_concurrent": 2,
        "pairs": [{"streams": [7, 20], "overlap_us": 4.0}],
        "pairs_omitted": False,
    }
    h0, h1 = d["host"]["devices"]
    assert (h0["idle_us"], h0["idle_host_busy_us"]) == (4.0, 4.0)
    # the partition: [0,1) aten::mm self, [1,3) the two launches, [11,12) inside the sync
    assert [(c["name"], c["us"], c["calls"]) for c in h0["causes"]] == [
        ("cudaLaunchKernel", 2.0, 2),
        ("synchronization", 1.0, 1),  # ties: regions, waits, syncs, CPU ops, runtime calls
        ("aten::mm", 1.0, 1),
    ]
    assert sum(c["us"] for c in h0["causes"]) == h0["idle_us"]
    assert (h1["idle_us"], h1["idle_host_busy_us"]) == (10.0, 10.0)
    # GPU 1 idle [0,8) + [10,12): the host's sync [5,12) while GPU 0 (busy [3,11)) worked is
    # waiting on it: [5,8) + [10,11); [11,12) plain synchronization
    assert [(c["name"], c["us"]) for c in h1["causes"]] == [
        ("waiting on another device", 4.0),
        ("aten::mm", 2.0),
        ("cudaLaunchKernel", 2.0),
        ("synchronization", 1.0),
        ("cudaMemcpyAsync", 1.0),
    ]
    assert sum(c["us"] for c in h1["causes"]) == h1["idle_us"]
    lat = d["host"]["launch_latency"]
    assert (lat["count"], lat["mean_us"], lat["p50_us"], lat["max_us"]) == (2, 5.0, 5.0, 8.0)
    assert abs(lat["p95_us"] - 7.7) < 1e-9
    assert (lat["unqueued_count"], lat["unqueued_p50_us"], lat["unqueued_max_us"]) == (1, 2.0, 2.0)
    assert d["host"]["kernel_gaps"] == [
        {
            "device": 0,
            "stream": 7,
            "gaps": 1,
            "mean_us": 1.0,
            "p50_us": 1.0,
            "max_us": 1.0,
            "kernel_p50_us": 3.5,
            "launch_bound": False,
            "host_late_gaps": 0,  # relu's launch [2,3) came before gemm began at 3
            "host_late_p50_us": None,
            "host_late_us": 0.0,
        }
    ]
    assert d["serial"] == {
        "serial_us": 14.0,
        "busy_union_us": 8.0,
        "gpu_span_us": 8.0,
        "speedup_vs_span": 1.75,
        "parallelism": 1.75,
    }
    assert [(k["name"], k["device"], k["total_us"], k["fraction"]) for k in d["top_kernels"]] == [
        ("gemm", 0, 6.0, 6 / 9),
        ("gemm", 1, 2.0, 2 / 9),
        ("relu", 0, 1.0, 1 / 9),
    ]
    # ranked by the time at stake: GPU 1 idle 10, the path's GPU time 8 (gemm 6 + relu 1 +
    # the wait 1; before the tie "either" 8 by the order of findings), both-busy "either" 8,
    # serial - union 6, copy time 5, GPU 0 idle 4, concurrent 4, launch overhead 1 x 2 = 2
    assert d["headlines"] == [
        "GPU 1 idle 83.3% of the window; main cause: waiting on another device 4 µs (40.0% of "
        "the idle time)",
        "The GPU bounds the critical path: 66.7% of it is GPU work (GEMM 85.7%, other 14.3% of "
        "the kernel time on it)",
        "GPU 0 and GPU 1 were both busy 25.0% of the time either was",
        "14 µs of stream work ran in 8 µs of GPU busy time (1.75x parallelism)",
        "Copies on GPU 0: 80.0% hidden under compute (1 µs exposed)",
        "GPU 0 idle 33.3% of the window; main cause: runtime call cudaLaunchKernel 2 µs (50.0% "
        "of the idle time)",
        "Up to 2 streams on GPU 0 ran at once; two or more were busy for 4 µs "
        "(50.0% of its busy time)",
        "Launch overhead 2 µs at most (n = 1)",
    ]


SAMPLE_PAIR = sorted((Path(__file__).parents[2] / "sample_traces/h200x2/ddp/train").glob(
    "*.pt.trace.json.gz"))


def test_from_dict_reads_the_json_back_exactly() -> None:
    """GIVEN real reports (whole, --step all, several traces) WHEN their JSON dicts are read
    back (Report.from_dict, MultiReport.from_dict) THEN the objects give the same dicts again,
    and the integer-ns fields are the report's own (not rounded µs)."""
    from traceprobe.load import load
    from traceprobe.report.model import MultiReport, Report

    tls = [load(p) for p in SAMPLE_PAIR]
    for rep in (analyze(tls[0]), analyze(tls[1], step="all")):
        d = rep.to_dict()
        back = Report.from_dict(json.loads(json.dumps(d)))
        assert back.to_dict() == d
        assert back.window == rep.window and back.devices[0].busy_ns == rep.devices[0].busy_ns
        assert [s.window for s in back.steps] == [s.window for s in rep.steps]
        assert back.top_kernels == rep.top_kernels and back.host.devices == rep.host.devices
    multi = analyze_many(tls)
    d = multi.to_dict()
    assert MultiReport.from_dict(json.loads(json.dumps(d))).to_dict() == d


def test_from_dict_is_lenient_as_the_schema_promises() -> None:
    """Fields are only ever added: a dict without some keys reads back with the fields'
    defaults (else None), and keys it does not know are left out."""
    from traceprobe.report.model import Report

    d = analyze(timeline(gpu=[kernel(0, 10)])).to_dict()
    del d["copies"], d["serial"]
    d["something_new"] = {"x": 1}
    back = Report.from_dict(d)
    assert back.copies == () and back.serial is None and not hasattr(back, "something_new")
    assert back.devices[0].busy_ns == 10
