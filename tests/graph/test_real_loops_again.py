"""docs/WHATIF.md's "The real loops recorded again" and "The profiler's cost measured on
micro-loops": every number against the recordings (timing.json, calibration.json, the traces),
computed here without the table script's functions."""

from __future__ import annotations

import gzip
import json
import re
import statistics
from pathlib import Path

import pytest

from traceprobe.graph import whatif
from traceprobe.graph.overhead import profiler_cost
from traceprobe.load import load

REPO = Path(__file__).resolve().parents[2]
ROOTS = [REPO / "sample_traces" / "h200" / d for d in ("real-loops", "real-loops-2",
                                                       "real-loops-3")]
CAL = REPO / "sample_traces" / "h200" / "profiler-cost"
pytestmark = pytest.mark.skipif(not (all(r.is_dir() for r in ROOTS) and CAL.is_dir()),
                                reason="the real-loop recordings are not here")
GEMMS = "gemm|xmma|cutlass|nvjet|fmha|flash"
CONVS = "gemm|xmma|cudnn|conv|grad|fprop|nchw|nhwc"


def _section(title: str) -> str:
    text = (REPO / "docs" / "WHATIF.md").read_text()
    return text.split(title, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def _tables(title: str) -> list[list[list[str]]]:
    out: list[list[list[str]]] = []
    rows: list[list[str]] = []
    for line in _section(title).splitlines() + [""]:
        if line.startswith("| `"):
            rows.append([c.strip() for c in line.split("|")[1:-1]])
        elif rows and not line.startswith("|"):
            out.append(rows)
            rows = []
    return out


def _timing(root: Path, v: str) -> float:
    return json.loads((root / v / "timing.json").read_text())["ms_per_step_median"]


def _trace(root: Path, v: str) -> Path:
    return next((root / v).glob("*.pt.trace.json*"))


def _num(cell: str) -> float:
    return float(cell.split()[0].rstrip("x%"))


def test_each_variant_in_every_recording() -> None:
    variants, _ = _tables("## The real loops recorded again")
    assert len(variants) == sum(1 for d in ROOTS[-1].iterdir() if (d / "timing.json").is_file()
                                and _timing(ROOTS[-1], d.name) is not None)
    for v, *cells in variants:
        name = v.strip("`")
        ts = [_timing(r, name) for r in ROOTS]
        for cell, t in zip(cells[:3], ts, strict=True):
            assert _num(cell) == pytest.approx(t, abs=0.006)
        assert _num(cells[3]) == pytest.approx((max(ts) / min(ts) - 1) * 100, abs=0.06)


def _kernel_ms(path: Path, rx: str) -> float:
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    steps = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                and str(e.get("name", "")).startswith("ProfilerStep#"))
    return sum(float(e["dur"]) for e in events if e.get("ph") == "X" and e.get("cat") ==
               "kernel" and re.search(rx, str(e.get("name", "")))) / steps


def _predicted_error(root: Path, slow: str, scen: str, fast: str) -> float:
    label = scen.strip("`")
    if label.startswith("kernels:"):
        rx = GEMMS if label.endswith("GEMMS") else CONVS
        f = _kernel_ms(_trace(root, slow), rx) / _kernel_ms(_trace(root, fast), rx)
        label = f"kernels:{rx}={f:.3g}"
    elif label == "dataloader:workers":
        label = "dataloader:workers=8"
    res = whatif(load(_trace(root, slow)), ["no-profiler", label], step="all")
    pred = statistics.median(w.predicted_period_us for w in res.windows) / 1000
    meas = _timing(root, fast)
    return (pred - meas) / meas * 100


def test_each_pair_in_every_recording_and_the_moved_ones_named() -> None:
    """Speedups from timing.json; errors through the public whatif API with its default
    no-profiler (the first two recordings' traces have no measured host time: estimated;
    the third's have: calibrated); the pairs named as moved are those whose speedup spread
    by more than 20%, and every other pair is within 20% in the third recording."""
    _, pairs = _tables("## The real loops recorded again")
    assert len(pairs) == 9
    text = _section("## The real loops recorded again")
    moved, steady_errors = set(), []
    for slow, scen, fast, *cells in pairs:
        a, b = slow.strip("`"), fast.strip("`")
        speeds = [_timing(r, a) / _timing(r, b) for r in ROOTS]
        for cell, m in zip(cells[:3], speeds, strict=True):
            assert _num(cell) == pytest.approx(m, abs=0.006)
        spread = max(speeds) / min(speeds) - 1
        assert _num(cells[3]) == pytest.approx(spread * 100, abs=0.5)
        errors = [_predicted_error(r, a, scen, b) for r in ROOTS]
        for cell, e in zip(cells[4:], errors, strict=True):
            assert _num(cell) == pytest.approx(e, abs=0.3)
        if spread > 0.20:
            moved.add(f"{slow} → {fast}")
        else:
            steady_errors.append(errors[-1])
    said = text.split("spread by more than 20% over the 3 recordings on ", 1)[1]
    said = said.split(": the same script", 1)[0]
    assert set(said.split(", ")) == moved
    assert steady_errors and all(abs(e) <= 20 for e in steady_errors)
    assert "in the third recording each of their rows is within 20%" in text


def test_the_calibration_table_against_its_recording() -> None:
    (rows,) = _tables("### The profiler's cost measured on micro-loops")
    cal = json.loads((CAL / "calibration.json").read_text())
    assert [r[0].strip("`") for r in rows] == list(cal["loops"])
    for name, events, unprof, prof, cost, est in rows:
        loop = cal["loops"][name.strip("`")]
        tl = load(_trace(CAL, name.strip("`")))
        lo, hi = int(tl.steps["start"].min()), int(tl.steps["end"].max())
        cpu = tl.cpu[(tl.cpu["start"] >= lo) & (tl.cpu["end"] <= hi)
                     & tl.cpu["kind"].isin(["cpu_op", "cuda_runtime", "cuda_driver"])]
        per_iter = len(cpu) / (len(tl.steps) * cal["iters_per_block"])
        shown = sum(float(p.split()[1]) for p in events.split(", "))
        assert shown == pytest.approx(per_iter, rel=1e-3)
        fast = min(loop["unprofiled_ns"], loop["unprofiled_after_ns"])
        assert [float(x) for x in unprof.split(" – ")] == pytest.approx(
            sorted([loop["unprofiled_ns"], loop["unprofiled_after_ns"]]), abs=0.5)
        assert float(prof) == pytest.approx(loop["profiled_ns"], abs=0.5)
        assert float(cost) == pytest.approx(loop["profiled_ns"] - fast, abs=1)
        assert float(est.split()[0]) == pytest.approx(profiler_cost(tl).ns * per_iter, abs=1)
