"""The H200 transformer recorded in fp32, TF32 and bf16 autocast (sample_traces/h200/real-loops,
with each loop's unprofiled median ms/step in timing.json):

* achieved TFLOP/s per GEMM shape equals FLOPs / summed kernel time computed independently by
  a slow, simple sweep over the raw JSON (its own shape parsing and correlation links);
* the precision headline appears on the fp32 run only;
* the precision prediction from the fp32 trace alone, checked against the faster runs'
  *measured unprofiled* step.
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from traceprobe.efficiency import efficiency
from traceprobe.load import load
from traceprobe.report import analyze

REAL = Path(__file__).resolve().parents[2] / "sample_traces" / "h200" / "real-loops"
GEMMS = {"aten::mm": 0, "aten::addmm": 1}  # where the first matrix is among the inputs


def _trace(variant: str) -> Path:
    return next((REAL / variant).glob("*.pt.trace.json.gz"))


def _unprofiled_ms(variant: str) -> float:
    return float(json.loads((REAL / variant / "timing.json").read_text())["ms_per_step_median"])


def _sweep(path: Path) -> dict[tuple[str, str], tuple[float, float]]:
    """(op, input dims) -> (FLOPs, kernel ns) of the GEMMs whose runtime call starts in a
    profiled step: one event at a time, from the raw JSON."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    ev = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
    steps = [(e["ts"], e["ts"] + e["dur"]) for e in ev
             if str(e.get("name", "")).startswith("ProfilerStep#")]
    lo, hi = min(s for s, _ in steps), max(e for _, e in steps)
    ops = {e["args"]["External id"]: e for e in ev if e.get("cat") == "cpu_op"}
    calls = {e["args"]["correlation"]: e for e in ev
             if e.get("cat") in ("cuda_runtime", "cuda_driver")
             and "correlation" in e.get("args", {})}
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    counted: set[int] = set()
    for k in ev:
        if k.get("cat") != "kernel":
            continue
        call = calls.get(k["args"].get("correlation"))
        if call is None or not lo <= call["ts"] < hi:
            continue
        op = ops.get(call["args"].get("External id"))
        if op is None or op["name"] not in GEMMS:
            continue
        dims = op["args"]["Input Dims"]
        a, b = dims[GEMMS[op["name"]]], dims[GEMMS[op["name"]] + 1]
        key = (op["name"], json.dumps(dims, separators=(",", ":")))
        out[key][1] += round(k["dur"] * 1000)
        if id(op) not in counted:
            counted.add(id(op))
            out[key][0] += 2 * a[0] * a[1] * b[1]
    return {k: (v[0], v[1]) for k, v in out.items()}


@pytest.mark.parametrize("variant", ["transformer-fp32", "transformer-tf32", "transformer-bf16"])
def test_achieved_tflops_per_gemm_shape_equal_an_independent_sweep(variant: str) -> None:
    path = _trace(variant)
    tl = load(path)
    window = (int(tl.steps["start"].min()), int(tl.steps["end"].max()))
    rows = efficiency(tl, window).rows
    sweep = _sweep(path)
    gemm = rows[rows["op"].isin(list(GEMMS))]
    assert len(gemm) == len(sweep) >= 5
    for r in gemm.itertuples():
        flops, ns = sweep[(r.op, r.input_dims)]
        assert r.flops == flops
        assert r.time_ns == pytest.approx(ns, abs=r.kernels)  # µs text -> ns rounding
        assert r.tflops == pytest.approx(flops / (ns / 1e9) / 1e12, rel=1e-6)


def test_precision_headline_on_the_fp32_run_only() -> None:
    lines = {v: analyze(load(_trace(v))).headlines
             for v in ("transformer-fp32", "transformer-tf32", "transformer-bf16")}
    assert any(h.startswith("fp32 GEMMs run without tensor cores") for h in
               lines["transformer-fp32"])
    for v in ("transformer-tf32", "transformer-bf16"):
        assert not any("without tensor cores" in h for h in lines[v]), v


def _predicted_ms(target: str) -> float:
    tl = load(_trace("transformer-fp32"))
    window = (int(tl.steps["start"].min()), int(tl.steps["end"].max()))
    f = efficiency(tl, window).finding
    assert f is not None and f.steps == 3
    per_step = f.per_step(f.kernel_ns - (f.tf32_saving_ns if target == "tf32"
                                         else f.bf16_saving_ns))
    assert per_step is not None
    return per_step / 1e3


def test_fp32_kernel_time_per_step_is_its_unprofiled_step() -> None:
    """The base of the prediction: the fp32 loop is GPU-bound, so its kernel time per
    profiled step is its unprofiled step (46.6 ms measured)."""
    tl = load(_trace("transformer-fp32"))
    window = (int(tl.steps["start"].min()), int(tl.steps["end"].max()))
    f = efficiency(tl, window).finding
    assert f is not None
    base = f.per_step(f.kernel_ns)
    assert base is not None
    assert base / 1e3 == pytest.approx(_unprofiled_ms("transformer-fp32"), rel=0.05)


def test_precision_tf32_predicted_from_fp32_within_20pct_of_the_measured_tf32_step() -> None:
    """Predicted 15.0 ms against 17.4 ms measured unprofiled (-14%): the TF32 GEMM kernels
    reach a lower share of their roof (54%) than the fp32 ones did of theirs (71%)."""
    assert _predicted_ms("tf32") == pytest.approx(_unprofiled_ms("transformer-tf32"), rel=0.20)


def test_precision_bf16_predicted_from_fp32_within_20pct_of_the_measured_bf16_step() -> None:
    """Predicted 10.8 ms against 10.0 ms measured unprofiled (+7.5%). The GEMMs' prediction is
    all but exact (2.42 ms per step predicted, 2.44 measured); the rest of the error is the
    attention kernel: autocast switches it to cuDNN's, at three times the fp32 kernel's share
    of its roof, which the model (keeping the share) does not foresee."""
    assert _predicted_ms("bf16") == pytest.approx(_unprofiled_ms("transformer-bf16"), rel=0.20)
