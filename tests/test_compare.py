"""Tests for traceprobe.comparison and `traceprobe compare`.

GIVEN two hand-made report dicts (a "sequential" A and a "parallel" B with round
numbers), WHEN compared, THEN speedups, figure rows and the ranked changes are exactly
the hand-derived ones; then the CLI on tiny hand-built traces.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracebuild import TraceBuilder  # tests/tracebuild.py
from traceprobe.cli import cli
from traceprobe.comparison import compare, describe_change, format_text
from traceprobe.errors import UsageError


def report(*, span: float, gpu_span: float, busy: float, overlap: float, either: float,
           serial_speedup: float, trace: str) -> dict[str, Any]:
    """Two GPUs, each busy ``busy`` µs, overlapping ``overlap`` µs; GPU 0 copies 100 µs,
    half hidden; one stream each."""
    devices = [
        {"device": d, "name": "H", "busy_us": busy, "kernel_us": busy, "memcpy_us": 0.0,
         "memset_us": 0.0, "idle_us": span - busy, "utilization": busy / span,
         "active_span_us": busy, "kernels": 5, "memcpys": 0, "memsets": 0, "streams": 1}
        for d in (0, 1)
    ]
    return {
        "schema": "traceprobe.report/1",
        "trace": trace,
        "format": "kineto",
        "rank": None,
        "window": {"start_us": 0.0, "end_us": span, "step": None},
        "span_us": span,
        "gpu_span_us": gpu_span,
        "counts": {"kernels": 10, "memcpys": 1, "memsets": 0, "cpu_ops": 0, "runtime_calls": 11,
                   "steps": 0},
        "devices": devices,
        "streams": [],
        "overlap": {
            "cross_device": [{"devices": [0, 1], "overlap_us": overlap, "either_us": either,
                              "fraction_of_either": overlap / either,
                              "fraction_of_min": overlap / busy}],
            "multi_device_us": overlap,
            "copy_compute": [{"device": 0, "direction": "all", "memcpy_us": 100.0,
                              "hidden_us": 50.0, "exposed_us": 50.0, "hidden_fraction": 0.5,
                              "copies": 1, "bytes": 1024, "pageable": 0}],
            "comm_compute": [],
            "streams": [{"device": d, "streams": 1, "concurrent_us": 0.0, "max_concurrent": 1,
                         "pairs": []} for d in (0, 1)],
        },
        "host": {"devices": [], "launch_latency": {"count": 10, "mean_us": 4.0, "p50_us": 4.0,
                                                   "p95_us": 4.0, "max_us": 4.0},
                 "kernel_gaps": []},
        "serial": {"serial_us": 2 * busy, "busy_union_us": either, "gpu_span_us": gpu_span,
                   "speedup_vs_span": serial_speedup, "parallelism": 2 * busy / either},
        "top_kernels": [],
        "top_ops": [],
        "headlines": [],
    }


def sequential() -> dict[str, Any]:
    return report(span=2000.0, gpu_span=1800.0, busy=900.0, overlap=0.0, either=1800.0,
                  serial_speedup=1.0, trace="a.json")


def parallel() -> dict[str, Any]:
    return report(span=1000.0, gpu_span=950.0, busy=900.0, overlap=850.0, either=950.0,
                  serial_speedup=1800.0 / 950.0, trace="b.json")


# ----------------------------------------------------------------------------- library


def test_speedup_is_a_over_b() -> None:
    result = compare(sequential(), parallel())
    assert result["speedup"] == {"span": 2.0, "gpu_span": 1800.0 / 950.0}
    assert result["schema"] == "traceprobe.compare/1"
    assert result["a"] == {"trace": "a.json", "window": sequential()["window"]}


def test_figures_are_in_fixed_order_with_deltas() -> None:
    rows = {f["key"]: f for f in compare(sequential(), parallel())["figures"]}
    assert list(rows) == [
        "span_us", "gpu_span_us",
        "devices[0].busy_us", "devices[0].utilization", "devices[0].idle_us",
        "devices[1].busy_us", "devices[1].utilization", "devices[1].idle_us",
        "cross_device[0-1].fraction_of_either", "cross_device[0-1].overlap_us",
        "multi_device_us",
        "copy_compute[0,all].hidden_fraction", "copy_compute[0,all].exposed_us",
        "streams[0].concurrent_us", "streams[0].max_concurrent",
        "streams[1].concurrent_us", "streams[1].max_concurrent",
        "serial.speedup_vs_span", "serial.parallelism", "launch_latency.p50_us",
    ]
    assert rows["span_us"] == {"key": "span_us", "label": "span", "unit": "us",
                               "scope": "window", "better": "lower", "a": 2000.0,
                               "b": 1000.0, "delta": -1000.0, "relative": -0.5}
    assert rows["cross_device[0-1].overlap_us"]["relative"] is None  # from 0
    assert rows["devices[0].utilization"]["delta"] == pytest.approx(0.45)


def test_changes_rank_by_time_at_stake_then_fold_and_skip_unchanged_figures() -> None:
    changes = compare(sequential(), parallel())["changes"]
    # no steps: the window is the step; times by µs at stake, then the rest by fold
    assert [(c["key"], c["at_stake_us"], c["fold"]) for c in changes] == [
        ("span_us", 1000.0, 2.0),  # 2000 -> 1000 µs
        ("devices[0].idle_us", 1000.0, 11.0),  # 1100 -> 100 µs
        ("devices[1].idle_us", 1000.0, 11.0),
        ("gpu_span_us", 850.0, 1800.0 / 950.0),
        ("cross_device[0-1].overlap_us", 850.0, None),  # 0 -> 850 µs
        ("multi_device_us", 850.0, None),
        ("cross_device[0-1].fraction_of_either", None, None),  # from 0: first of the rest
        ("devices[0].utilization", None, 2.0),
        ("devices[1].utilization", None, 2.0),
        ("serial.speedup_vs_span", None, 1800.0 / 950.0),
        ("serial.parallelism", None, 1800.0 / 950.0),
    ]
    assert {c["effect"] for c in changes} == {"better"}  # B overlaps: every figure improved
    assert not any(c["regression"] for c in changes)


def test_changes_in_plain_words() -> None:
    texts = [c["text"] for c in compare(sequential(), parallel())["changes"]]
    assert texts[6] == (
        "GPU 0 & 1 overlap (share of time either was busy) rose from 0.0% to 89.5% (+89.5 points)"
    )
    assert texts[4] == "GPU 0 & 1 overlap time rose from 0 to 850 µs"
    assert texts[1] == "GPU 0 idle fell from 1.10 ms to 100 µs (-90.9%, 11.00× less)"
    assert texts[0] == "span fell from 2.00 ms to 1.00 ms (-50.0%, 2.00× less)"
    assert texts[9] == "overlap speedup (serial time / GPU span) rose from 1.00× to 1.89× " \
                       "(+89.5%, 1.89× more)"


def test_describe_counts() -> None:
    assert describe_change("GPU 0 most streams busy at once", "count", 1, 3) == (
        "GPU 0 most streams busy at once rose from 1 to 3"
    )


def test_swapping_a_and_b_inverts_speedup_and_keeps_the_ranking() -> None:
    ab, ba = compare(sequential(), parallel()), compare(parallel(), sequential())
    assert ba["speedup"]["span"] == 0.5
    assert [c["key"] for c in ab["changes"]] == [c["key"] for c in ba["changes"]]


def test_identical_reports_change_nothing() -> None:
    result = compare(parallel(), parallel())
    assert result["speedup"] == {"span": 1.0, "gpu_span": 1.0}
    assert result["changes"] == []
    assert "Nothing changed by 1% or more." in format_text(result)


def test_noise_is_not_a_change() -> None:
    b = sequential()
    b["devices"][0]["utilization"] = 0.4509  # +0.09 points: below 0.1 point
    b["devices"][0]["idle_us"] = 1101.9  # +1.9 µs: below 0.1% of the 2000 µs span
    b["overlap"]["streams"][0]["max_concurrent"] = 2  # counts always count
    assert [c["key"] for c in compare(sequential(), b)["changes"]] == ["streams[0].max_concurrent"]


def test_devices_in_one_report_only() -> None:
    b = parallel()
    b["devices"].append({**b["devices"][1], "device": 2})
    result = compare(sequential(), b)
    assert result["devices_only_in"] == {"a": [], "b": [2]}
    row = next(f for f in result["figures"] if f["key"] == "devices[2].busy_us")
    assert (row["a"], row["b"], row["delta"]) == (None, 900.0, None)
    assert "devices[2].busy_us" not in [c["key"] for c in result["changes"]]
    assert "  GPU 2 only in B" in format_text(result)


def test_deterministic_json_safe_and_inputs_untouched() -> None:
    a, b = sequential(), parallel()
    a["serial"]["speedup_vs_span"] = float("nan")  # a bad input value is treated as missing
    before = copy.deepcopy(b)
    one, two = compare(a, b), compare(a, b)
    assert json.dumps(one, allow_nan=False) == json.dumps(two, allow_nan=False)
    assert b == before


def test_zero_span_gives_no_speedup() -> None:
    b = parallel()
    b["span_us"] = 0.0
    b["gpu_span_us"] = 0.0
    assert compare(sequential(), b)["speedup"] == {"span": None, "gpu_span": None}


def test_several_traces_report_is_refused() -> None:
    with pytest.raises(UsageError, match="report B holds several traces"):
        compare(sequential(), {"schema": "traceprobe.reports/1", "traces": []})


def test_text_rendering() -> None:
    text = format_text(compare(sequential(), parallel()), top=2)
    lines = text.splitlines()
    assert lines[:9] == [
        "traceprobe compare",
        "  A: a.json",
        "  B: b.json",
        "",
        "  * B is 2.00× faster than A over the whole window",
        "  * B is 1.89× faster than A over the GPU span",
        "",
        "What changed most (step time at stake first, then relative change):",
        "  1. span fell from 2.00 ms to 1.00 ms (-50.0%, 2.00× less)",
    ]
    assert lines[9] == "  2. GPU 0 idle fell from 1.10 ms to 100 µs (-90.9%, 11.00× less)"
    assert lines[11] == "Figures:"
    span_row = next(line for line in lines if line.startswith("  span "))
    assert span_row.split() == ["span", "2.00", "ms", "1.00", "ms", "-50.0%"]


# ----------------------------------------------------------------------------- the CLI


def run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return r.exit_code, r.stdout, r.stderr


def two_gpus(path: Path, *, overlapped: bool) -> Path:
    """Kernels of 10 µs on GPU 0 at 0 and GPU 1 at 0 (overlapped) or 10; launches at -2."""
    t = TraceBuilder()
    t.device_properties(0, 1)
    t.launch("k0", cpu_ts=-2, cpu_dur=1, gpu_ts=0, gpu_dur=10, device=0, stream=7)
    t.launch("k1", cpu_ts=-2, cpu_dur=1, gpu_ts=0 if overlapped else 10, gpu_dur=10, device=1,
             stream=7)
    return t.write(path)


def test_cli_compare_text(tmp_path: Path) -> None:
    a = two_gpus(tmp_path / "seq.json", overlapped=False)
    b = two_gpus(tmp_path / "par.json.gz", overlapped=True)
    code, out, err = run("compare", str(a), str(b), "--top", "3")
    assert code == 0, err
    # spans: A -2..20 = 22 µs, B -2..10 = 12 µs; GPU spans 20 and 10 µs
    assert "  * B is 1.83× faster than A over the whole window" in out
    assert "  * B is 2.00× faster than A over the GPU span" in out
    assert "  1. span fell from 22.0 µs to 12.0 µs (-45.5%, 1.83× less)" in out
    assert "  4." not in out


def test_cli_compare_json_to_file_and_refuses_to_overwrite(tmp_path: Path) -> None:
    a = two_gpus(tmp_path / "seq.json", overlapped=False)
    b = two_gpus(tmp_path / "par.json", overlapped=True)
    dest = tmp_path / "diff.json"
    assert run("compare", str(a), str(b), "-o", str(dest))[0] == 0
    doc = json.loads(dest.read_text())
    assert doc["speedup"] == {"span": 22 / 12, "gpu_span": 2.0}
    code, _, err = run("compare", str(a), str(b), "-o", str(dest))
    assert code == 4
    assert "will not overwrite without --force" in err
    assert run("compare", str(a), str(b), "-o", str(dest), "--force")[0] == 0


def test_cli_compare_needs_one_trace_per_side(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    two_gpus(d / "w0.1.pt.trace.json", overlapped=False)
    two_gpus(d / "w1.1.pt.trace.json", overlapped=True)
    code, _, err = run("compare", str(d), str(d / "w0.1.pt.trace.json"))
    assert code == 2
    assert "holds 2 traces" in err


def test_cli_compare_a_trace_with_itself(tmp_path: Path) -> None:
    a = two_gpus(tmp_path / "seq.json", overlapped=False)
    code, out, err = run("compare", str(a), str(a))
    assert code == 0, err
    assert "  * A and B take the same time over the whole window (B/A = 1.000)" in out
    assert "Nothing changed by 1% or more." in out


def test_cli_compare_help_has_an_example() -> None:
    code, out, _ = run("compare", "--help")
    assert code == 0 and "Example:" in out


# ----------------------------------------------------------------------------- sample traces

SAMPLES = Path(__file__).resolve().parent.parent / "sample_traces"


def _samples() -> list[Path]:
    if not SAMPLES.is_dir():
        return []
    return sorted(p for p in SAMPLES.rglob("*") if ".pt.trace.json" in p.name)


@pytest.mark.parametrize("trace", _samples() or [pytest.param(None, marks=pytest.mark.skip(
    reason="no traces in sample_traces/ yet"))], ids=lambda p: getattr(p, "name", "none"))
def test_sample_trace_against_itself_and_its_first_step(trace: Path | None) -> None:
    import traceprobe

    tl = traceprobe.load(trace)
    whole = traceprobe.analyze(tl).to_dict()
    # GIVEN the same report on both sides THEN nothing changed and every row is equal
    same = compare(whole, whole)
    assert same["changes"] == []
    assert same["speedup"]["span"] == 1.0
    for f in same["figures"]:
        assert f["a"] == f["b"]
    json.dumps(same, allow_nan=False)
    # GIVEN the whole trace (A) against its first ProfilerStep (B)
    if tl.steps.empty:
        pytest.skip(f"{trace.name} has no ProfilerStep window")
    first = int(tl.steps.sort_values("start")["step"].iloc[0])
    step = traceprobe.analyze(tl, step=first).to_dict()
    assert step["window"]["step"] == first
    result = compare(whole, step)
    json.dumps(result, allow_nan=False)
    # THEN each side's rows are that side's own report figures
    assert result["a"]["window"] == whole["window"] and result["b"]["window"] == step["window"]
    assert result["speedup"]["span"] == pytest.approx(whole["span_us"] / step["span_us"])
    rows = {f["key"]: f for f in result["figures"]}
    assert (rows["span_us"]["a"], rows["span_us"]["b"]) == (whole["span_us"], step["span_us"])
    for d in whole["devices"]:
        row = rows[f"devices[{d['device']}].busy_us"]
        [in_step] = [x for x in step["devices"] if x["device"] == d["device"]]
        assert (row["a"], row["b"]) == (d["busy_us"], in_step["busy_us"])
        assert row["b"] <= row["a"]  # a step is part of the whole trace
        assert row["delta"] == pytest.approx(row["b"] - row["a"])
    # AND with steps on both sides the span is not a change (the steps are): B's one step
    # is its whole window
    assert "span_us" not in [c["key"] for c in result["changes"]]
    assert rows["step.median_us"]["b"] == pytest.approx(step["span_us"], abs=1e-3)
