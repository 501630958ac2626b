"""FLOP formulas against ``torch.utils.flop_counter.FlopCounterMode``, an independent count,
op by op: on a CPU workload recorded here (torch CPU; skipped without torch) and on the H200
recordings (their ``flops.json`` is FlopCounterMode's count of one training step, made beside
the traces), step by step.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from traceprobe.efficiency.attribute import attribute
from traceprobe.load import load

REAL = Path(__file__).resolve().parents[2] / "sample_traces" / "h200" / "real-loops"
MATRIX = ("gemm", "convolution", "attention")


def _per_op(tl, window=None) -> dict[str, float]:
    g = attribute(tl, window).groups
    g = g[g["flops"].notna() & g["category"].isin(MATRIX)]
    return {str(k).replace("aten::", "aten."): float(v)
            for k, v in g.groupby("op")["flops"].sum().items() if v}


def _workload(torch) -> None:  # type: ignore[no-untyped-def]
    F = torch.nn.functional  # noqa: N806
    a = torch.randn(8, 16, requires_grad=True)
    b = torch.randn(16, 12, requires_grad=True)
    y = torch.nn.Linear(12, 10)(a @ b)  # mm, addmm and their backward mms
    bm = torch.bmm(torch.randn(3, 4, 5), torch.randn(3, 5, 6))
    bb = torch.baddbmm(torch.randn(3, 4, 6), torch.randn(3, 4, 5), torch.randn(3, 5, 6))
    x = torch.randn(2, 4, 9, 9, requires_grad=True)
    z = torch.nn.Conv2d(4, 6, 3, stride=2, padding=1)(x)
    z = torch.nn.Conv2d(6, 6, 3, padding=2, dilation=2, groups=3, bias=False)(z)
    z = torch.nn.ConvTranspose2d(6, 3, 3, stride=2)(z)
    q = torch.randn(2, 3, 7, 8, requires_grad=True)
    k = torch.randn(2, 3, 5, 8, requires_grad=True)
    v = torch.randn(2, 3, 5, 4, requires_grad=True)
    o = F.scaled_dot_product_attention(q, k, v)  # the CPU math path: bmm
    (y.sum() + z.sum() + o.sum() + bm.sum() + bb.sum()).backward()


def test_cpu_workload_flops_equal_flop_counter_op_by_op(tmp_path: Path) -> None:
    """GIVEN a CPU workload of every matrix op the formulas know (mm, addmm, bmm, baddbmm,
    strided, dilated, grouped and transposed convolutions, attention, and their backward)
    WHEN it is counted by FlopCounterMode and, separately, recorded with record_shapes=True
    THEN the formulas' FLOPs per op name equal FlopCounterMode's."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile
    from torch.utils.flop_counter import FlopCounterMode

    torch.manual_seed(0)
    with FlopCounterMode(display=False) as counter:
        _workload(torch)
    expected = {str(k): float(v) for k, v in counter.get_flop_counts()["Global"].items() if v}
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        _workload(torch)
    path = tmp_path / "cpu.json"
    prof.export_chrome_trace(str(path))
    got = _per_op(load(path))
    assert {"aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten.convolution",
            "aten.convolution_backward"} <= set(expected)
    assert got == expected


def _recordings() -> list[Path]:
    return sorted(p.parent for p in REAL.glob("*/flops.json"))


@pytest.mark.parametrize("folder", _recordings(), ids=lambda p: p.name)
def test_h200_recordings_flops_equal_flop_counter_each_step(folder: Path) -> None:
    """GIVEN an H200 training loop recorded with shapes and FlopCounterMode's count of one of
    its steps (fp32, TF32, bf16 autocast: efficient and cuDNN attention; resnet convolutions)
    THEN each profiled step's FLOPs per op (ops that start in the step) equal that count."""
    expected = {k: float(v) for k, v in json.loads((folder / "flops.json").read_text())[
        "ops"].items() if v}
    tl = load(next(folder.glob("*.pt.trace.json.gz")))
    assert len(tl.steps) == 3
    for _, s in tl.steps.iterrows():
        assert _per_op(tl, (int(s["start"]), int(s["end"]))) == expected, int(s["step"])
