"""Tests for traceprobe.expect and `traceprobe check`.

GIVEN a hand-made report dict (docs/REPORT_SCHEMA.md) with round numbers, WHEN an
expectation is evaluated, THEN the measured value is exactly the one the names table
says; then the CLI end to end on tiny hand-built traces with hand-derived figures.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracebuild import TraceBuilder  # tests/tracebuild.py
from traceprobe import expect
from traceprobe.cli import cli
from traceprobe.errors import ExpectationFailed, UsageError


def make_report() -> dict[str, Any]:
    """Two GPUs over a 1000 µs window; every figure chosen to be checked exactly."""
    return {
        "schema": "traceprobe.report/1",
        "trace": "hand.json",
        "format": "kineto",
        "rank": None,
        "window": {"start_us": 0.0, "end_us": 1000.0, "step": None},
        "span_us": 1000.0,
        "gpu_span_us": 900.0,
        "counts": {"kernels": 20, "memcpys": 4, "memsets": 0, "cpu_ops": 7,
                   "runtime_calls": 24, "steps": 0},
        "devices": [
            {"device": 0, "name": "H", "busy_us": 800.0, "kernel_us": 750.0, "memcpy_us": 100.0,
             "memset_us": 0.0, "idle_us": 200.0, "utilization": 0.8, "active_span_us": 900.0,
             "kernels": 12, "memcpys": 3, "memsets": 0, "streams": 2},
            {"device": 1, "name": "H", "busy_us": 600.0, "kernel_us": 580.0, "memcpy_us": 40.0,
             "memset_us": 0.0, "idle_us": 400.0, "utilization": 0.6, "active_span_us": 700.0,
             "kernels": 8, "memcpys": 1, "memsets": 0, "streams": 1},
        ],
        "streams": [],
        "overlap": {
            "cross_device": [{"devices": [0, 1], "overlap_us": 450.0, "either_us": 900.0,
                              "fraction_of_either": 0.5, "fraction_of_min": 0.75}],
            "multi_device_us": 450.0,
            "copy_compute": [
                {"device": 0, "direction": "all", "memcpy_us": 100.0, "hidden_us": 80.0,
                 "exposed_us": 20.0, "hidden_fraction": 0.8, "copies": 3, "bytes": 3072,
                 "pageable": 0},
                {"device": 0, "direction": "HtoD", "memcpy_us": 60.0, "hidden_us": 30.0,
                 "exposed_us": 30.0, "hidden_fraction": 0.5, "copies": 2, "bytes": 2048,
                 "pageable": 0},
                {"device": 1, "direction": "all", "memcpy_us": 40.0, "hidden_us": 10.0,
                 "exposed_us": 30.0, "hidden_fraction": 0.25, "copies": 1, "bytes": 1024,
                 "pageable": 1},
            ],
            "comm_compute": [
                {"device": 0, "comm_us": 50.0, "hidden_us": 40.0, "exposed_us": 10.0,
                 "hidden_fraction": 0.8},
                {"device": 1, "comm_us": 20.0, "hidden_us": 5.0, "exposed_us": 15.0,
                 "hidden_fraction": 0.25},
            ],
            "streams": [
                {"device": 0, "streams": 2, "concurrent_us": 120.0, "max_concurrent": 2,
                 "pairs": [{"streams": [7, 20], "overlap_us": 120.0}]},
                {"device": 1, "streams": 1, "concurrent_us": 0.0, "max_concurrent": 1,
                 "pairs": []},
            ],
        },
        "host": {
            "devices": [],
            "launch_latency": {"count": 10, "mean_us": 5.0, "p50_us": 4.0, "p95_us": 9.0,
                               "max_us": 12.0, "unqueued_count": 6, "unqueued_p50_us": 3.5,
                               "unqueued_max_us": 7.0},
            "kernel_gaps": [
                {"device": 0, "stream": 7, "gaps": 3, "launch_bound": True},
                {"device": 1, "stream": 7, "gaps": 3, "launch_bound": False},
            ],
        },
        "serial": {"serial_us": 1800.0, "busy_union_us": 900.0, "gpu_span_us": 900.0,
                   "speedup_vs_span": 2.0, "parallelism": 2.0},
        "top_kernels": [],
        "top_ops": [],
        "headlines": [],
        "efficiency": {"tensor_core_fraction": 0.25, "gemm_roof_fraction": 0.5,
                       "categories": [{"category": "attention", "tflops": 9.0},
                                      {"category": "gemm", "tflops": 30.0}],
                       "precision": {"tf32_saving_us": 300.0}},
    }


# ----------------------------------------------------------------------------- parsing


@pytest.mark.parametrize(
    "text, name, index, op, threshold",
    [
        ("cross_device_overlap >= 0.9", "cross_device_overlap", None, ">=", 0.9),
        ("utilization[0]>=0.8", "utilization", 0, ">=", 0.8),
        ("  utilization [ 1 ]  <  .5 ", "utilization", 1, "<", 0.5),
        ("gpu_span_us < 1e6", "gpu_span_us", None, "<", 1e6),
        ("max_concurrent_streams >= 2", "max_concurrent_streams", None, ">=", 2.0),
        ("idle_us[0] != -2.5E-3", "idle_us", 0, "!=", -2.5e-3),
        ("kernels == 20", "kernels", None, "==", 20.0),
        ("span_us > +3.", "span_us", None, ">", 3.0),
    ],
)
def test_parse_accepts_the_grammar(text: str, name: str, index: int | None, op: str,
                                   threshold: float) -> None:
    e = expect.parse(text)
    assert (e.name, e.index, e.op, e.threshold) == (name, index, op, threshold)


def test_parse_canonical_text_keeps_the_number_as_written() -> None:
    assert str(expect.parse("utilization[0]>=0.80")) == "utilization[0] >= 0.80"


@pytest.mark.parametrize(
    "text",
    ["utilization >= ", "utilization => 0.8", "utilization = 0.8", "utilization >= 0.8 and 1",
     "utilization[a] >= 1", "1 < utilization", "__import__('os') >= 1", "utilization >= nan",
     "utilization >= 0x10", ""],
)
def test_parse_rejects_anything_else_with_the_grammar(text: str) -> None:
    with pytest.raises(UsageError, match=r"NAME\[DEVICE\] OP VALUE") as info:
        expect.parse(text)
    assert info.value.exit_code == 2


def test_unknown_name_lists_the_valid_names_and_suggests_one() -> None:
    with pytest.raises(UsageError) as info:
        expect.parse("utilisation[0] >= 0.8")
    msg = str(info.value)
    assert "unknown name 'utilisation'" in msg
    assert "did you mean utilization?" in msg
    for name in expect.NAMES:
        assert name in msg


def test_index_on_a_name_without_devices_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="cross_device_overlap takes no \\[device\\]"):
        expect.parse("cross_device_overlap[0] >= 0.9")


def test_parse_lines_skips_comments_and_blank_lines_and_numbers_sources(tmp_path: Path) -> None:
    f = tmp_path / "ci.expect"
    f.write_text("# overlap\n\ncross_device_overlap >= 0.9   # both GPUs\n  utilization[1] > 0.5\n")
    exps = expect.parse_file(f)
    assert [str(e) for e in exps] == ["cross_device_overlap >= 0.9", "utilization[1] > 0.5"]
    assert [e.source for e in exps] == [f"{f}:3", f"{f}:4"]


def test_parse_file_errors_name_the_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "bad.expect"
    f.write_text("span_us > 1\nspan_us >> 1\n")
    with pytest.raises(UsageError, match=f"{f}:2: cannot read expectation 'span_us >> 1'"):
        expect.parse_file(f)


# ----------------------------------------------------------------------------- reading


READINGS: list[tuple[str, float]] = [
    ("span_us", 1000.0),
    ("gpu_span_us", 900.0),
    ("busy_us", 900.0),  # serial.busy_union_us
    ("busy_us[1]", 600.0),
    ("idle_us", 400.0),  # the idlest device
    ("idle_us[0]", 200.0),
    ("utilization", 0.6),  # the least utilized device
    ("utilization[0]", 0.8),
    ("devices", 2.0),
    ("kernels", 20.0),
    ("memcpys", 4.0),
    ("memsets", 0.0),
    ("cross_device_overlap", 0.5),
    ("cross_device_overlap_of_min", 0.75),
    ("multi_device_us", 450.0),
    ("hidden_copy_fraction", 0.25),  # min over devices of the "all" rows, not HtoD's 0.5
    ("hidden_copy_fraction[0]", 0.8),
    ("exposed_copy_us", 50.0),  # 20 + 30: "all" rows only
    ("exposed_copy_us[1]", 30.0),
    ("hidden_comm_fraction", 0.25),
    ("hidden_comm_fraction[0]", 0.8),
    ("exposed_comm_us", 25.0),
    ("exposed_comm_us[1]", 15.0),
    ("max_concurrent_streams", 2.0),
    ("max_concurrent_streams[1]", 1.0),
    ("concurrent_streams_us", 120.0),
    ("concurrent_streams_us[0]", 120.0),
    ("speedup_vs_span", 2.0),
    ("parallelism", 2.0),
    ("launch_latency_mean_us", 5.0),
    ("launch_latency_p50_us", 4.0),
    ("launch_latency_p95_us", 9.0),
    ("launch_latency_max_us", 12.0),
    ("launch_latency_unqueued_p50_us", 3.5),
    ("launch_latency_unqueued_max_us", 7.0),
    ("launch_bound_streams", 1.0),
    ("tensor_core_fraction", 0.25),
    ("gemm_roof_fraction", 0.5),
    ("gemm_tflops", 30.0),  # the "gemm" row, not the first
    ("tf32_saving_us", 300.0),
]


@pytest.mark.parametrize("subject, value", READINGS)
def test_every_name_reads_the_documented_field(subject: str, value: float) -> None:
    [r] = expect.evaluate(make_report(), [f"{subject} == {value!r}"])
    assert r.value == value
    assert r.passed


def test_every_name_is_covered_by_the_reading_test() -> None:
    from traceprobe.expect.names import STEP_NAMES  # tests/expect/test_step_names.py

    assert {s.split("[")[0] for s, _ in READINGS} == set(expect.NAMES) - set(STEP_NAMES)


def test_aggregates_say_which_device_they_came_from() -> None:
    [r] = expect.evaluate(make_report(), ["hidden_copy_fraction > 0.5"])
    assert not r.passed
    assert r.measured_text() == "0.25 = 25.0%, min over GPUs 0, 1: GPU 1"


@pytest.mark.parametrize(
    "op, passed",
    [(">=", True), (">", False), ("<=", True), ("<", False), ("==", True), ("!=", False)],
)
def test_every_operator(op: str, passed: bool) -> None:
    [r] = expect.evaluate(make_report(), [f"utilization[0] {op} 0.8"])
    assert r.passed is passed


def test_undefined_values_fail_with_the_reason() -> None:
    one_gpu = make_report()
    one_gpu["overlap"]["cross_device"] = []
    one_gpu["overlap"]["comm_compute"] = []
    results = expect.evaluate(one_gpu, ["cross_device_overlap >= 0", "hidden_comm_fraction >= 0",
                                        "utilization[3] >= 0", "cross_device_overlap != 5"])
    assert [(r.passed, r.value, r.note) for r in results] == [
        (False, None, "fewer than two GPUs in the window"),
        (False, None, "no communication kernels in the window"),
        (False, None, "no GPU 3 in the report (GPUs 0, 1)"),
        (False, None, "fewer than two GPUs in the window"),
    ]
    assert results[0].describe() == (
        "FAIL  cross_device_overlap >= 0  measured undefined, fewer than two GPUs in the window"
    )


def test_null_fields_are_undefined_not_zero() -> None:
    r = make_report()
    r["serial"]["speedup_vs_span"] = None
    r["overlap"]["copy_compute"][2]["hidden_fraction"] = None  # GPU 1 "all" row
    res = expect.evaluate(r, ["speedup_vs_span > 0", "hidden_copy_fraction > 0",
                              "hidden_copy_fraction[1] > 0"])
    assert [(x.value, x.passed) for x in res] == [(None, False), (0.8, True), (None, False)]


def test_no_gpu_activity() -> None:
    r = make_report()
    r["devices"], r["overlap"]["copy_compute"], r["overlap"]["streams"] = [], [], []
    r["overlap"]["comm_compute"] = []
    res = expect.evaluate(r, ["max_concurrent_streams >= 2", "exposed_copy_us == 0",
                              "utilization >= 0.5", "utilization[0] >= 0.5",
                              "hidden_copy_fraction > 0.5"])
    assert [(x.value, x.note) for x in res] == [
        (0.0, ""), (0.0, ""), (None, "no GPU activity"), (None, "no GPU 0: no GPU activity"),
        (None, "no copies in the window"),
    ]


def test_a_several_traces_report_is_refused() -> None:
    with pytest.raises(UsageError, match="one trace's report"):
        expect.evaluate({"schema": "traceprobe.reports/1", "traces": []}, ["span_us > 0"])


def test_evaluate_does_not_modify_the_report() -> None:
    r = make_report()
    before = copy.deepcopy(r)
    expect.evaluate(r, [f"{n} >= 0" for n, s in expect.NAMES.items() if s.unit != "text"])
    assert r == before


def test_require_names_each_failure_with_its_measured_value() -> None:
    results = expect.evaluate(make_report(), ["utilization[0] >= 0.8",
                                              "hidden_copy_fraction > 0.5",
                                              "cross_device_overlap >= 0.9"])
    with pytest.raises(ExpectationFailed) as info:
        expect.require(results)
    assert info.value.exit_code == 1
    assert str(info.value) == (
        "2 expectations failed: "
        "hidden_copy_fraction > 0.5 (measured 0.25 = 25.0%, min over GPUs 0, 1: GPU 1); "
        "cross_device_overlap >= 0.9 (measured 0.5 = 50.0%, GPUs 0 & 1)"
    )
    expect.require(results[:1])  # all passed: no error


# ----------------------------------------------------------------------------- the CLI


def run(*args: str) -> tuple[int, str, str]:
    """`traceprobe ARGS` in-process: (exit code, stdout, stderr)."""
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def two_gpu_trace(path: Path) -> Path:
    """GPU 0 busy [0, 10) µs, GPU 1 busy [5, 15): overlap 5 of 15 either → 1/3.

    GPU 0 also copies [2, 6) on stream 20 while its kernel runs: fully hidden.
    """
    t = TraceBuilder()
    t.device_properties(0, 1)
    t.launch("k0", cpu_ts=-4, cpu_dur=2, gpu_ts=0, gpu_dur=10, device=0, stream=7)
    t.launch("k1", cpu_ts=-3, cpu_dur=2, gpu_ts=5, gpu_dur=10, device=1, stream=7)
    t.memcpy("Memcpy HtoD (Pinned -> Device)", ts=2, dur=4, device=0, stream=20)
    return t.write(path)


def test_check_passes_and_prints_each_measured_value(tmp_path: Path) -> None:
    trace = two_gpu_trace(tmp_path / "t.json")
    code, out, err = run("check", str(trace), "-e", "cross_device_overlap < 0.34",
                         "--expect", "hidden_copy_fraction[0] == 1",
                         "-e", "max_concurrent_streams >= 2")
    assert code == 0, err
    assert out.splitlines() == [
        f"traceprobe check: {trace}",
        "  PASS  cross_device_overlap < 0.34   measured 0.3333 = 33.3%, GPUs 0 & 1",
        "  PASS  hidden_copy_fraction[0] == 1  measured 1 = 100.0%",
        "  PASS  max_concurrent_streams >= 2   measured 2, max over GPUs 0, 1: GPU 0",
        "  3 passed, 0 failed",
    ]
    assert err == ""


def test_check_fails_with_exit_1_naming_the_failure_and_value(tmp_path: Path) -> None:
    trace = two_gpu_trace(tmp_path / "t.json")
    code, out, err = run("check", str(trace), "-e", "cross_device_overlap >= 0.9",
                         "-e", "span_us > 0")
    assert code == 1
    assert "  FAIL  cross_device_overlap >= 0.9  measured 0.3333 = 33.3%, GPUs 0 & 1" in out
    assert "  1 passed, 1 failed" in out
    # the failure is listed once (above); the error line only counts
    assert out.count("cross_device_overlap >= 0.9") == 1
    assert err == "traceprobe: error: 1 of 2 expectations failed (listed above)\n"


def test_check_exit_code_through_the_console_entry_point(tmp_path: Path, capsys) -> None:
    from traceprobe.cli import main

    trace = two_gpu_trace(tmp_path / "t.json")
    assert main(["check", str(trace), "-e", "cross_device_overlap >= 0.9"]) == 1
    assert main(["check", str(trace), "-e", "cross_device_overlap > 0.3"]) == 0
    assert main(["check", str(trace), "-e", "nope > 0.3"]) == 2
    capsys.readouterr()


def test_check_expect_file_and_json(tmp_path: Path) -> None:
    trace = two_gpu_trace(tmp_path / "t.json")
    f = tmp_path / "ci.expect"
    f.write_text("# CI\nutilization[1] >= 0.5\n")
    code, out, _ = run("check", str(trace), "--expect-file", str(f), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["passed"] is True
    [res] = doc["traces"][0]["results"]
    # GPU 1 busy 10 µs of the 19 µs window (first CPU call at -4 to last kernel end at 15)
    assert res["value"] == pytest.approx(10 / 19)
    assert res["source"] == f"{f}:2"


def test_check_several_traces_names_the_failing_one(tmp_path: Path) -> None:
    a = two_gpu_trace(tmp_path / "a.json")
    t = TraceBuilder()
    t.launch("k0", cpu_ts=-4, cpu_dur=2, gpu_ts=0, gpu_dur=10, device=0, stream=7)
    b = t.write(tmp_path / "b.json")
    code, _, err = run("check", str(a), str(b), "-e", "devices == 2")
    assert code == 1
    assert err == f"traceprobe: error: 1 of 2 expectations failed, on {b} (listed above)\n"


@pytest.mark.parametrize(
    "args, message",
    [
        (["-e", "utilisation >= 1"], "unknown name 'utilisation'"),
        (["-e", "span_us >>> 1"], "cannot read expectation"),
        ([], "nothing to check"),
    ],
)
def test_check_usage_errors_exit_2_before_loading(tmp_path: Path, args: list[str],
                                                  message: str) -> None:
    missing = tmp_path / "never-read.json"
    missing.write_text("not json")  # would be exit 3 if it were read
    code, _, err = run("check", str(missing), *args)
    assert code == 2
    assert message in err


def test_check_step(tmp_path: Path) -> None:
    t = TraceBuilder()
    t.step(1, ts=0, dur=100)
    t.step(2, ts=100, dur=100)
    t.launch("k", cpu_ts=110, cpu_dur=5, gpu_ts=120, gpu_dur=50, device=0, stream=7)
    trace = t.write(tmp_path / "s.json")
    assert run("check", str(trace), "--step", "2", "-e", "utilization[0] == 0.5")[0] == 0
    code, out, _ = run("check", str(trace), "--step", "1", "-e", "utilization[0] == 0")
    assert code == 0
    assert "(ProfilerStep#1)" in out
    code, _, err = run("check", str(trace), "--step", "9", "-e", "span_us > 0")
    assert (code, err) == (2, f"traceprobe: error: {trace}: no ProfilerStep#9; "
                              "the trace has steps 1-2\n")


def test_check_help_has_an_example_and_the_names() -> None:
    code, out, _ = run("check", "--help")
    assert code == 0
    assert "Example:" in out
    for name in expect.NAMES:
        assert name in out


# ----------------------------------------------------------------------------- sample traces

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"


def _samples() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    return sorted(p for p in SAMPLES.rglob("*") if p.name.endswith((".json", ".json.gz"))
                  and ".pt.trace" in p.name)


@pytest.mark.parametrize("trace", _samples() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no traces in sample_traces/ yet"))], ids=lambda p: getattr(p, "name", "none"))
def test_every_name_on_sample_traces_matches_the_report(trace: Path | None) -> None:
    """On real traces: every name evaluates, and a value read equals the report field."""
    import traceprobe

    rep = traceprobe.analyze(traceprobe.load(trace)).to_dict()
    evaluated = expect.evaluate(rep, [f"{n} >= 0" for n, s in expect.NAMES.items()
                                      if s.unit != "text"])
    results = {r.expectation.name: r for r in evaluated}
    assert results["span_us"].value == rep["span_us"]
    assert results["gpu_span_us"].value == rep["gpu_span_us"]
    assert results["devices"].value == len(rep["devices"])
    for d in rep["devices"]:
        [u] = expect.evaluate(rep, [f"utilization[{d['device']}] >= 0"])
        assert u.value == d["utilization"]
    pairs = rep["overlap"]["cross_device"]
    if pairs:
        assert results["cross_device_overlap"].value == max(p["fraction_of_either"] for p in pairs)
    for r in results.values():  # every defined figure here is non-negative
        assert r.passed or r.value is None
