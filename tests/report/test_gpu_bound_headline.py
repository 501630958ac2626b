"""The GPU-bound headline: said when the critical path is bound by the GPU, with its share."""

from __future__ import annotations

import re
from pathlib import Path

from traceprobe import analyze
from traceprobe.load import load

REPO = Path(__file__).resolve().parents[2]


def test_a_gpu_bound_loop_says_so_with_its_share_and_kernel_classes() -> None:
    r = analyze(load(next(REPO.glob("sample_traces/h200/real-loops/transformer-fp32/*.gz"))))
    cp = r.critical_path
    assert cp["bound_by"] == "GPU"
    line = next(h for h in r.headlines if h.startswith("The GPU bounds the critical path"))
    gpu = sum(cp["breakdown"][k] for k in ("kernel", "communication", "copy", "sync_wait"))
    assert f"{100 * gpu / cp['length_us']:.1f}% of it is GPU work" in line
    # GEMMs (sgemm / xmma gemm, not the cutlass attention kernels) fill most of the kernel time
    segs = [s for s in cp["segments"] if s["kind"] in ("kernel", "communication", "copy")]
    total = sum(s["end_us"] - s["start_us"] for s in segs)
    gemm = sum(s["end_us"] - s["start_us"] for s in segs
               if re.search("gemm", s["name"]) and "fmha" not in s["name"])
    shown = float(re.search(r"GEMM ([\d.]+)%", line).group(1))  # type: ignore[union-attr]
    assert abs(shown - 100 * gemm / total) < 0.5  # (the class rule also names cublas, nvjet...)
    assert line.index("GEMM") < line.index("elementwise")


def test_a_host_bound_loop_has_no_gpu_bound_headline() -> None:
    r = analyze(load(next(REPO.glob("sample_traces/h200/small-ops/loop/*.gz"))))
    assert r.critical_path["bound_by"] != "GPU"
    assert not any("GPU bounds" in h for h in r.headlines)
