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
FIRST = REPO / "sample_traces" / "h200" / "real-loops"
SECOND = REPO / "sample_traces" / "h200" / "real-loops-2"
CAL = REPO / "sample_traces" / "h200" / "profiler-cost"
pytestmark = pytest.mark.skipif(not (FIRST.is_dir() and SECOND.is_dir() and CAL.is_dir()),
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


def test_each_variant_in_both_recordings() -> None:
    variants, _ = _tables("## The real loops recorded again")
    assert len(variants) == sum(1 for d in SECOND.iterdir() if (d / "timing.json").is_file()
                                and _timing(SECOND, d.name) is not None)
    for v, a, b, change, _pa, _pb in variants:
        name = v.strip("`")
        ta, tb = _timing(FIRST, name), _timing(SECOND, name)
        assert _num(a) == pytest.approx(ta, abs=0.006)
        assert _num(b) == pytest.approx(tb, abs=0.006)
        assert _num(change) == pytest.approx((tb - ta) / ta * 100, abs=0.06)


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


def test_each_pair_in_both_recordings_and_the_moved_ones_named() -> None:
    _, pairs = _tables("## The real loops recorded again")
    assert len(pairs) == 9
    text = _section("## The real loops recorded again")
    moved = set()
    for slow, scen, fast, s1, s2, change, e1, e2 in pairs:
        a, b = slow.strip("`"), fast.strip("`")
        m1 = _timing(FIRST, a) / _timing(FIRST, b)
        m2 = _timing(SECOND, a) / _timing(SECOND, b)
        assert _num(s1) == pytest.approx(m1, abs=0.006)
        assert _num(s2) == pytest.approx(m2, abs=0.006)
        assert _num(change) == pytest.approx((m2 - m1) / m1 * 100, abs=0.5)
        if abs(m2 - m1) / m1 > 0.20:
            moved.add(f"{slow} → {fast}")
        assert _num(e2) == pytest.approx(_predicted_error(SECOND, a, scen, b), abs=0.3)
        assert _num(e1) == pytest.approx(_predicted_error(FIRST, a, scen, b), abs=0.3)
    said = text.split("moved by more than 20% between the two recordings on ", 1)[1]
    said = said.split(": the same script", 1)[0]
    assert set(said.split(", ")) == moved


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
