"""The step-level names of `traceprobe check` and ``--baseline``.

GIVEN the committed DataLoader loops (H200: 3 ProfilerSteps, the DataLoader about half of each
step; CPU: the same script without a GPU), WHEN the step names are read, THEN each equals a value
computed independently from the trace's frames (step times from the ``ProfilerStep`` ranges, the
DataLoader share by a nanosecond mask sweep), and a baseline expectation compares against the
other report, scaled as written.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from traceprobe import expect
from traceprobe import report as rp
from traceprobe.cli import cli
from traceprobe.errors import UsageError
from traceprobe.expect.names import STEP_NAMES
from traceprobe.load import load

GPU_LOOP = next(Path("sample_traces/h200/examples/dataloader-loop").glob("*.pt.trace.json.gz"))
CPU_LOOP = next(Path("sample_traces/cpu/examples/dataloader-loop").glob("*.pt.trace.json.gz"))


@pytest.fixture(scope="module")
def gpu():  # type: ignore[no-untyped-def]
    tl = load(GPU_LOOP)
    return tl, rp.analyze(tl).to_dict()


@pytest.fixture(scope="module")
def cpu_report():  # type: ignore[no-untyped-def]
    return rp.analyze(load(CPU_LOOP)).to_dict()


def _value(report, text: str, baseline=None):  # type: ignore[no-untyped-def]
    [r] = expect.evaluate(report, [text], baseline=baseline)
    return r


def test_step_statistics_are_those_of_the_profiler_step_ranges(gpu) -> None:  # type: ignore[no-untyped-def]
    tl, rep = gpu
    lengths = (tl.steps["end"] - tl.steps["start"]).to_numpy() / 1000  # exact ns, in µs
    assert len(lengths) == 3
    want = {"step_p50_us": np.percentile(lengths, 50), "step_p90_us": np.percentile(lengths, 90),
            "step_mean_us": lengths.mean(), "step_min_us": lengths.min(),
            "step_max_us": lengths.max(), "steps": 3}
    for name, value in want.items():
        assert _value(rep, f"{name} >= 0").value == pytest.approx(value, abs=1e-6), name


def test_dataloader_share_matches_a_nanosecond_sweep(gpu) -> None:  # type: ignore[no-untyped-def]
    tl, rep = gpu
    lo, hi = int(tl.steps["start"].min()), int(tl.steps["end"].max())
    n = hi - lo

    def mask(df):  # type: ignore[no-untyped-def]
        m = np.zeros(n, bool)
        for s, e in zip(df["start"].to_numpy() - lo, df["end"].to_numpy() - lo, strict=True):
            m[max(s, 0):max(min(e, n), 0)] = True
        return m

    gpu_busy = mask(tl.gpu[tl.gpu["device"] == 0])
    host = tl.cpu[tl.cpu["pid"] == tl.cpu[tl.cpu["name"].str.contains("DataLoader")]["pid"].iloc[0]]
    runtime = mask(host[host["kind"].isin(["cuda_runtime", "cuda_driver"])
                        | host["name"].isin(["aten::item", "aten::_local_scalar_dense"])])
    loader = mask(host[host["name"].str.contains("DataLoader")])
    in_steps = mask(tl.steps)
    share = (loader & ~gpu_busy & ~runtime & in_steps).sum() / in_steps.sum()
    got = _value(rep, "dataloader_share <= 1")
    assert got.value == pytest.approx(share, abs=1e-9)
    assert 0.3 < got.value < 0.7  # about half of each step waits on the DataLoader
    assert _value(rep, "dataloader_share[0] <= 1").value == got.value
    assert _value(rep, "step_dataloader_share[0] <= 1").value == got.value
    parts = sum(_value(rep, f"step_{p}_share[0] >= 0").value
                for p in ("kernel", "memcpy", "memset", "communication", "runtime",
                          "dataloader", "cpu_exec", "other"))
    assert parts == pytest.approx(1.0, abs=1e-9)  # the parts partition the steps


def test_idle_cause_shares_sum_the_causes_of_each_kind(gpu) -> None:  # type: ignore[no-untyped-def]
    _, rep = gpu
    [dev] = rep["host"]["devices"]
    total = 0.0
    for kind in ("dataloader", "optimizer", "region", "wait", "sync", "cpu_op", "runtime",
                 "host_idle"):
        us = sum(c["us"] for c in dev["causes"] if c["kind"] == kind)
        got = _value(rep, f"idle_{kind}_share[0] >= 0").value
        assert got == pytest.approx(us / dev["idle_us"], abs=1e-12)
        total += got
    listed = sum(c["us"] for c in dev["causes"]) / dev["idle_us"]  # the top 5 of a partition
    assert total == pytest.approx(listed, abs=1e-12) and total <= 1 + 1e-12
    assert _value(rep, "idle_dataloader_share > 0.5").passed  # the DataLoader leads


def test_bound_by_is_a_word_and_gpu_bound_follows_it(gpu) -> None:  # type: ignore[no-untyped-def]
    _, rep = gpu
    bound = rep["critical_path"]["bound_by"]
    assert _value(rep, f'bound_by == "{bound}"').passed
    assert not _value(rep, f"bound_by != '{bound}'").passed
    r = _value(rep, "gpu_bound == 0")
    assert r.value == float(bound in ("kernel", "copy", "communication"))
    parts = rep["critical_path"]["breakdown"]
    share = (parts["kernel"] + parts["copy"] + parts["communication"]) / rep["critical_path"][
        "length_us"]
    assert _value(rep, "critical_path_gpu_share >= 0").value == pytest.approx(share)
    for bad in ("bound_by >= 1", "bound_by < 'kernel'", "span_us == 'kernel'",
                "bound_by == baseline.span_us"):
        with pytest.raises(UsageError):
            expect.parse(bad)


def test_no_steps_makes_the_step_names_undefined(tmp_path: Path) -> None:
    from tracebuild import TraceBuilder

    t = TraceBuilder()
    t.kernel("k", 0, 10)
    rep = rp.analyze(load(t.write(tmp_path / "t.json"))).to_dict()
    for text in ("step_p50_us >= 0", "dataloader_share >= 0", "phase_forward_share >= 0"):
        r = _value(rep, text)
        assert (r.passed, r.value) == (False, None)
        assert "no ProfilerSteps" in r.note


def test_every_step_name_is_read_here() -> None:
    tested = {"steps", "step_p50_us", "step_p90_us", "step_mean_us", "step_min_us",
              "step_max_us", "dataloader_share", "bound_by", "gpu_bound",
              "critical_path_gpu_share"}
    tested |= {n for n in STEP_NAMES if n.startswith(("step_", "idle_", "phase_"))}
    assert tested == set(STEP_NAMES)


def test_baseline_thresholds_are_scaled_as_written(gpu, cpu_report) -> None:  # type: ignore[no-untyped-def]
    _, rep = gpu
    a, b = _value(rep, "step_p50_us >= 0").value, _value(cpu_report, "step_p50_us >= 0").value
    assert a < b  # the GPU loop's steps are faster than the CPU one's
    r = _value(rep, "step_p50_us <= 1.05 * baseline.step_p50_us", cpu_report)
    assert r.passed and r.threshold == pytest.approx(1.05 * b)
    r = _value(cpu_report, "step_p50_us <= baseline.step_p50_us * 2 - 10", rep)
    assert r.threshold == pytest.approx(2 * a - 10) and r.passed is (b <= 2 * a - 10)
    assert _value(rep, "step_p50_us == baseline.step_p50_us", rep).passed
    assert "baseline.step_p50_us = " in r.note
    with pytest.raises(UsageError, match="no baseline was given"):
        expect.evaluate(rep, ["step_p50_us <= baseline.step_p50_us"])
    undefined = _value(rep, "span_us <= baseline.step_p50_us", {"span_us": 1})
    assert not undefined.passed and "baseline.step_p50_us undefined" in undefined.note


def test_check_baseline_from_a_trace_or_a_report_json(tmp_path: Path) -> None:
    runner = CliRunner()
    report_json = tmp_path / "base.json"
    res = runner.invoke(cli, ["analyze", str(CPU_LOOP), "-f", "json", "-o", str(report_json)])
    assert res.exit_code == 0, res.output
    gate = ["-e", "step_p50_us <= 1.05 * baseline.step_p50_us", "-f", "json"]
    outs = []
    for base in (str(CPU_LOOP), str(report_json)):
        res = runner.invoke(cli, ["check", str(GPU_LOOP), "--baseline", base, *gate])
        assert res.exit_code == 0, res.output
        outs.append(json.loads(res.output)["traces"][0]["results"][0])
    assert outs[0] == outs[1]  # the trace analysed as the JSON was
    # the other way round the gate fails: exit 1, the failure listed once
    res = runner.invoke(cli, ["check", str(CPU_LOOP), "--baseline", str(GPU_LOOP),
                              "-e", "step_p50_us <= 1.05 * baseline.step_p50_us"])
    assert res.exit_code == 1
    assert res.stdout.count("FAIL") == 1 and "step_p50_us" not in res.stderr
    assert res.stderr == "traceprobe: error: 1 of 1 expectation failed (listed above)\n"
    # baseline. without --baseline: a usage error before anything is loaded
    res = runner.invoke(cli, ["check", "/nonexistent.json", "-e",
                              "step_p50_us <= baseline.step_p50_us"])
    assert res.exit_code == 2 and "--baseline" in res.stderr


def test_the_python_api_takes_the_baseline_and_the_batch(gpu, cpu_report) -> None:  # type: ignore[no-untyped-def]
    import traceprobe

    _, rep = gpu
    [r] = traceprobe.check(rep, "step_p50_us <= 1.05 * baseline.step_p50_us", baseline=cpu_report)
    base = _value(cpu_report, "step_p50_us >= 0").value
    assert r.passed and r.threshold == pytest.approx(1.05 * base)
    diff = traceprobe.compare(cpu_report, rep, step_stat="p90", batch=(64, 256))
    assert diff["steps"]["stat"] == "p90" and diff["steps"]["per_sample"]["b_batch"] == 256
