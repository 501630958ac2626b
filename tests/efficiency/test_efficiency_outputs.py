"""The efficiency figures where they come out: the what-if replay, the module view, the
report's renderers and CSV, and `traceprobe check` names; on hand-built traces."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tracebuild import TraceBuilder
from traceprobe.efficiency import efficiency
from traceprobe.errors import UsageError
from traceprobe.expect.names import measure
from traceprobe.graph import whatif
from traceprobe.load import from_document
from traceprobe.render import markdown, text
from traceprobe.render.csv import write_csv
from traceprobe.render.roofline import roofline_svg
from traceprobe.report import analyze

MM = {"Input Dims": [[1024, 1024], [1024, 1024]], "Input type": ["float", "float"],
      "Concrete Inputs": ["", ""]}


def _gpu_bound_gemm(kernel: str = "cutlass_80_simt_sgemm_128x128") -> TraceBuilder:
    """Step 1 (0..112 µs): an fp32 mm launches a 100 µs kernel (10..110); the host waits in
    cudaDeviceSynchronize until 111; the step ends at 112."""
    t = TraceBuilder()
    t.device_properties(0)
    t.step(1, 0, 112)
    t.op("aten::mm", 1, 8, **{"External id": 1, **MM})
    t.runtime("cudaLaunchKernel", 2, 5, correlation=7, **{"External id": 1})
    t.kernel(kernel, 10, 100, correlation=7)
    t.runtime("cudaDeviceSynchronize", 12, 99)
    return t


def test_precision_tf32_through_the_replay_shortens_a_gpu_bound_step() -> None:
    """The kernel runs at its fp32 share of the TF32 roof: 100 µs x 67 / 494.7; the GPU-bound
    step shortens by the time saved."""
    tl = from_document(_gpu_bound_gemm().document())
    w = whatif(tl, ["precision:tf32"]).windows[0]
    assert w.replayed_us == pytest.approx(w.measured_us)
    saved = 100 - 100 * 67 / 494.7
    assert w.predicted_us == pytest.approx(w.measured_us - saved, abs=1.0)


def test_roof_share_through_the_replay() -> None:
    """roof:gemm=S: the kernel at share S of its roof (t_roof = F / P_fp32, compute-bound)."""
    tl = from_document(_gpu_bound_gemm().document())
    t_roof = 2 * 1024**3 / 67e12 * 1e6  # µs
    w = whatif(tl, ["roof:sgemm=0.5"]).windows[0]
    assert w.predicted_us == pytest.approx(w.measured_us - (100 - t_roof / 0.5), abs=1.0)


@pytest.mark.parametrize("bad", ["precision:fp8", "roof:gemm=0", "roof:gemm=1.5", "roof:(=0.5"])
def test_bad_efficiency_scenarios_are_usage_errors(bad: str) -> None:
    tl = from_document(_gpu_bound_gemm().document())
    with pytest.raises(UsageError, match="scenario"):
        whatif(tl, [bad])


def test_a_tensor_core_gemm_is_not_rescaled() -> None:
    tl = from_document(_gpu_bound_gemm("sm90_xmma_gemm_tf32f32_tf32f32").document())
    w = whatif(tl, ["precision:tf32"]).windows[0]
    assert w.predicted_us == pytest.approx(w.measured_us)


def _modules() -> Any:
    """nn.Module: Net_0 (0..100) holds Linear_0 (10..40, launches a 20 µs kernel) and
    Linear_1 (50..80, launches 30 µs); Net_0 itself launches 5 µs (at 85); a 7 µs kernel is
    launched outside every module (at 150)."""
    t = TraceBuilder()
    t.device_properties(0)
    t.cpu("python_function", "nn.Module: Net_0", 0, 100)
    t.cpu("python_function", "nn.Module: Linear_0", 10, 30)
    t.cpu("python_function", "nn.Module: Linear_1", 50, 30)
    for ts, dur in ((15, 20), (55, 30), (85, 5), (150, 7)):
        t.launch("k", ts, 2, ts + 100, dur)
    return from_document(t.document())


def test_module_view_self_and_total_by_hand() -> None:
    m = efficiency(_modules()).modules
    assert m is not None
    rows = {r.path: (r.depth, r.calls, r.self_ns, r.total_ns) for r in m.rows.itertuples()}
    assert rows == {"Net_0": (0, 1, 5_000, 55_000), "Net_0/Linear_0": (1, 1, 20_000, 20_000),
                    "Net_0/Linear_1": (1, 1, 30_000, 30_000)}
    assert m.outside_ns == 7_000


def test_module_view_of_a_real_trace_adds_up() -> None:
    """transformer-fp32-modules: every kernel launched in the window is in one module's self
    time or outside; the root's total is all the self time under it."""
    folder = Path(__file__).resolve().parents[2] / "sample_traces/h200/real-loops"
    from traceprobe.load import load

    tl = load(next((folder / "transformer-fp32-modules").glob("*.gz")))
    window = (int(tl.steps["start"].min()), int(tl.steps["end"].max()))
    e = efficiency(tl, window)
    m = e.modules
    assert m is not None
    assert m.rows["self_ns"].sum() + m.outside_ns == pytest.approx(e.kernel_ns)
    roots = m.rows[m.rows["depth"] == 0]
    assert roots["total_ns"].sum() == pytest.approx(m.rows["self_ns"].sum())
    assert {"TinyLM_0", "TinyLM_0/TransformerEncoder_0"} <= set(m.rows["path"])


def test_report_sections_csv_chart_and_check_names(tmp_path: Path) -> None:
    tl = from_document(_gpu_bound_gemm().document())
    r = analyze(tl)
    d = r.to_dict()
    e = d["efficiency"]
    assert e["device"] == "NVIDIA H200" and e["tensor_core_fraction"] == 0.0
    f = 2 * 1024**3
    assert e["rows"][0]["tflops"] == pytest.approx(f / 100e-6 / 1e12)
    assert e["gemm_roof_fraction"] == pytest.approx(f / 67e12 / 100e-6)
    assert measure(d, "gemm_roof_fraction").value == pytest.approx(e["gemm_roof_fraction"])
    assert measure(d, "tensor_core_fraction").value == 0.0
    assert measure(d, "gemm_tflops").value == pytest.approx(f / 100e-6 / 1e12)
    saving = e["precision"]["tf32_saving_us"]
    assert saving == pytest.approx(100 - 100 * 67 / 494.7)
    assert measure(d, "tf32_saving_us").value == pytest.approx(saving)
    assert any("without tensor cores" in h for h in r.headlines)
    for render in (text.render, markdown.render):  # the renderers take the Report
        out = render(r)
        assert "Kernel efficiency" in out and "Efficiency per op shape" in out
    svg = roofline_svg(e)
    assert svg is not None and svg.count("<circle") >= 1
    write_csv(tl, tmp_path / "csv", reports=[r])
    rows = pd.read_csv(tmp_path / "csv" / "efficiency.csv")
    assert rows.loc[0, "op"] == "aten::mm"
    assert math.isclose(rows.loc[0, "tflops"], e["rows"][0]["tflops"], rel_tol=1e-9)
    cats = pd.read_csv(tmp_path / "csv" / "efficiency_categories.csv")
    assert list(cats["category"]) == ["gemm"]


def test_check_name_without_the_section_is_undefined() -> None:
    m = measure({"trace": "t"}, "gemm_roof_fraction")
    assert m.value is None and "efficiency" in m.note


def test_a_filled_efficiency_section_has_the_documented_shape() -> None:
    """docs/REPORT_SCHEMA.md's efficiency object, precision and modules filled (an fp32
    transformer recorded with_modules on an H200)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
    from test_model import assert_shape, schema_example  # tests/report/test_model.py

    from traceprobe.load import load

    folder = Path(__file__).resolve().parents[2] / "sample_traces/h200/real-loops"
    d = analyze(load(next((folder / "transformer-fp32-modules").glob("*.gz")))).to_dict()
    e = d["efficiency"]
    assert e["precision"] is not None and e["modules"] is not None
    assert_shape(e, schema_example()["efficiency"], "$.efficiency")
