"""`traceprobe analyze --hta`: HTA's own figures in the report, checked against traceprobe's.

HTA's temporal breakdown (hta/analyzers/breakdown_analysis.py, traceinsight 0.6.1) for a rank:
  kernel_time K = last GPU event end - first GPU event start (every GPU of the process merged)
  idle I = K - |∪ GPU events|,  compute C = |∪ compute kernels|,  non_compute NC = K - I - C
where the GPU events are those with a stream (kernels, memcpys, memsets). On a trace of one
ProfilerStep HTA keeps every event (it drops the last step's work only when there are >= 2),
so K is traceprobe's ``serial.gpu_span_us`` (G), C + NC is ``serial.busy_union_us`` (U) and
I is G - U: time with no GPU busy, not any one device's idle time.

The one difference is rounding: HTA moves each event's start up and end down to whole
microseconds (hta/common/trace_parser.py, round_down_time_stamps), less than 1 µs at each end.
So K loses under 2 µs (first start, last end), and the union loses under 2 µs per event (an
event can lose no more than its own shrink, and gaps open only where events shrink): with n
GPU events, G - 2 < K <= G, U - 2n < C + NC <= U, and so -2 < I - (G - U) < 2n.

Those bounds are loose (2n is 200 µs on a 100-event trace), so the tests also apply HTA's
rounding themselves: ``_hta_rounded`` reads the trace's JSON, parses ``ts``/``dur`` as float64
as HTA does, rounds each start up and each end down, and sums a plain sorted-interval union.
HTA's four figures must equal those exactly; what is left between them and traceprobe's is
the rounding and nothing else.
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from traceprobe.cli import cli
from traceprobe.hta_bridge import MISSING

SAMPLES = Path(__file__).resolve().parents[1] / "sample_traces" / "h200x2"
SEQUENTIAL = SAMPLES / "two-devices" / "sequential"  # 2 GPUs, one after the other: idle > 0
SIDE_COPY = SAMPLES / "copy" / "side-stream"  # 1 GPU, copies beside kernels: NC > 0


def _analyze(*args: Any) -> Any:
    return CliRunner().invoke(cli, ["analyze", *map(str, args)], catch_exceptions=False)


@functools.cache
def _report(path: Path) -> dict[str, Any]:
    result = _analyze(path, "--hta", "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # HTA's parse logs and numpy warnings are silenced

    def no_nan(name: str) -> None:
        raise AssertionError(f"{name} in the JSON")

    report: dict[str, Any] = json.loads(result.stdout, parse_constant=no_nan)
    return report


def _union_us(intervals: list[tuple[int, int]]) -> int:
    total, cur = 0, None
    for a, b in sorted(x for x in intervals if x[1] > x[0]):
        if cur is None or a > cur[1]:
            total += 0 if cur is None else cur[1] - cur[0]
            cur = [a, b]
        else:
            cur[1] = max(cur[1], b)
    return total + (0 if cur is None else cur[1] - cur[0])


def _hta_rounded(trace_dir: Path) -> dict[str, float]:
    """K, I, C, NC from the raw JSON with HTA's rounding (see the module docstring)."""
    [path] = trace_dir.glob("*.pt.trace.json.gz")
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    gpu, compute = [], []
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            ts = float(e["ts"])
            iv = (math.ceil(ts), math.floor(ts + float(e.get("dur", 0))))
            gpu.append(iv)
            if e["cat"] == "kernel" and "nccl" not in e["name"].lower():
                compute.append(iv)
    k = max(b for _, b in gpu) - min(a for a, _ in gpu)
    idle, c = k - _union_us(gpu), _union_us(compute)
    return {"kernel": k, "idle": idle, "compute": c, "non_compute": k - idle - c}


@pytest.fixture
def hta_version() -> str:
    return str(pytest.importorskip("hta").__version__)


@pytest.mark.parametrize("trace_dir", [SEQUENTIAL, SIDE_COPY], ids=lambda p: p.parent.name)
def test_temporal_breakdown_is_traceprobes_whole_rank_figures_to_the_rounding(
    trace_dir: Path, hta_version: str
) -> None:
    # GIVEN a committed one-step trace WHEN analysed with --hta
    r = _report(trace_dir)
    # THEN the "hta" key holds HTA's rows, one rank for the one process
    hta = r["hta"]
    assert hta["version"] == hta_version and hta["scope"] == "rank"
    assert r["counts"]["steps"] == 1  # so HTA drops no step's work (see the docstring)
    [row] = hta["temporal_breakdown"]
    assert row["rank"] == 0
    k, i = row["kernel_time(us)"], row["idle_time(us)"]
    c, nc = row["compute_time(us)"], row["non_compute_time(us)"]
    assert i + c + nc == pytest.approx(k)  # HTA's own definition of non_compute
    # AND its window and busy union are traceprobe's to HTA's rounding (bounds in the docstring)
    g, u = r["serial"]["gpu_span_us"], r["serial"]["busy_union_us"]
    n = r["counts"]["kernels"] + r["counts"]["memcpys"] + r["counts"]["memsets"]
    assert g - 2 < k <= g
    assert u - 2 * n < c + nc <= u
    assert -2 < i - (g - u) < 2 * n
    # AND exactly what HTA's rounding of this trace's events gives, to float precision
    want = _hta_rounded(trace_dir)
    assert (k, i, c, nc) == pytest.approx(
        (want["kernel"], want["idle"], want["compute"], want["non_compute"]), abs=1e-6
    )


def test_two_devices_are_one_rank_and_copies_are_not_compute(hta_version: str) -> None:
    # GIVEN two GPUs taking turns: per device, each idles about half the window
    seq = _report(SEQUENTIAL)
    assert len(seq["devices"]) == 2
    assert min(d["idle_us"] for d in seq["devices"]) > 0.4 * seq["span_us"]
    # THEN HTA gives one row for both, with no comm kernels: overlap ratio undefined -> null
    assert len(seq["hta"]["temporal_breakdown"]) == 1
    assert seq["overlap"]["comm_compute"] == []
    assert seq["hta"]["comm_comp_overlap"] == [{"rank": 0, "comp_comm_overlap_pctg": None}]
    assert seq["hta"]["temporal_breakdown"][0]["non_compute_time(us)"] == 0  # kernels only
    # GIVEN one GPU with copies beside its kernels THEN HTA's compute is the kernels' union
    # (every kernel here is a compute kernel to HTA) and its non-compute the copy-only time,
    # each to the rounding bound of the docstring (k kernels; n GPU events)
    cp = _report(SIDE_COPY)
    [dev] = cp["devices"]
    row = cp["hta"]["temporal_breakdown"][0]
    k = cp["counts"]["kernels"]
    n = k + cp["counts"]["memcpys"] + cp["counts"]["memsets"]
    assert dev["kernel_us"] - 2 * k < row["compute_time(us)"] <= dev["kernel_us"]
    copy_only = dev["busy_us"] - dev["kernel_us"]
    assert abs(row["non_compute_time(us)"] - copy_only) < 2 * n
    assert row["non_compute_time(us)"] > 0
    # with HTA's rounding applied to the same events, compute and copy-only time match exactly
    want = _hta_rounded(SIDE_COPY)
    assert row["compute_time(us)"] == pytest.approx(want["compute"], abs=1e-6)
    assert row["non_compute_time(us)"] == pytest.approx(want["non_compute"], abs=1e-6)


def test_without_hta_installed_a_one_line_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN hta cannot be imported (None in sys.modules makes `import hta` raise ImportError)
    monkeypatch.setitem(sys.modules, "hta", None)
    # WHEN asking for --hta THEN exit 2 and one line naming the fix, before loading anything
    result = _analyze(SEQUENTIAL, "--hta", "--format", "json")
    assert result.exit_code == 2
    assert result.stderr == f"traceprobe: error: {MISSING}\n"
    assert result.stdout == ""


def test_an_hta_failure_names_the_file(monkeypatch: pytest.MonkeyPatch, hta_version: str) -> None:
    # GIVEN HTA failing as it does on sample_traces/h200x2/dag/serial (a bare assert in
    # breakdown_analysis.py), made deterministic here
    from hta.trace_analysis import TraceAnalysis

    def fail(self: Any, visualize: bool = True) -> None:
        raise AssertionError("HTA broke")

    monkeypatch.setattr(TraceAnalysis, "get_temporal_breakdown", fail)
    result = _analyze(SEQUENTIAL, "--hta", "--format", "json")
    # THEN traceprobe's report still comes (exit 0); one warning line names the file and
    # what HTA raised, and the report's "hta" says HTA failed and why; no traceback
    assert result.exit_code == 0, result.stderr
    [trace] = SEQUENTIAL.glob("*.pt.trace.json.gz")
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith(f"traceprobe: warning: {trace}: HTA {hta_version} failed")
    assert "AssertionError: HTA broke at test_hta_bridge.py:" in result.stderr
    r = json.loads(result.stdout)
    assert r["devices"] and r["hta"]["version"] == hta_version
    assert "AssertionError: HTA broke" in r["hta"]["error"]
