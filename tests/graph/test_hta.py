"""traceprobe's critical path against HTA's critical_path_analysis on one H200 trace
(docs/WHATIF.md explains the differences from HTA's code)."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

import pytest

from traceprobe.graph import critical_paths
from traceprobe.load import load

REPO = Path(__file__).resolve().parents[2]
DAG = next((REPO / "sample_traces" / "h200x2" / "dag" / "serial").glob("*.pt.trace.json.gz"))


def test_against_hta_critical_path():
    pytest.importorskip("hta")
    from hta.trace_analysis import TraceAnalysis

    logging.getLogger("hta").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as d:
        os.symlink(DAG, os.path.join(d, "rank0.pt.trace.json.gz"))
        ta = TraceAnalysis(trace_dir=d)
        cp, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)
    assert ok
    hta = cp.get_critical_path_breakdown()
    tl = load(DAG)
    ours = critical_paths(tl)["steps"][1]
    step_us = float((tl.steps["end"] - tl.steps["start"]).iloc[0]) / 1000
    assert ours["length_us"] == pytest.approx(step_us)
    # HTA's longest path is no longer than the step (no sync events: it ends at a kernel)
    assert float(hta["duration"].sum()) <= step_us
    hta_kernel = float(hta.loc[hta["bound_by"] == "gpu_compute_bound", "duration"].sum())
    assert ours["breakdown"]["kernel"] + ours["breakdown"]["copy"] == pytest.approx(
        hta_kernel, rel=0.02)
    # HTA shortens kernel names (templates, anonymous namespaces dropped): each last part
    # is in a name on our path
    on_hta = set(hta.loc[hta["bound_by"] == "gpu_compute_bound", "s_name"].dropna().astype(str))
    on_ours = {s["name"] for s in ours["segments"] if s["kind"] in ("kernel", "copy")}
    assert on_hta
    assert all(any(h.split("::")[-1] in o for o in on_ours) for h in on_hta), on_hta


def test_against_hta_on_a_real_loop_with_a_backward_thread():
    """transformer-tf32-item (H200; the backward pass on autograd's thread): HTA merges that
    thread into the main one, traceprobe links them by inferred hand-offs. On step 4 both paths
    are mostly GPU compute, ours at least as much of it (HTA's longest path adds CPU edges the
    step does not wait for), and every kernel on HTA's path is on ours."""
    pytest.importorskip("hta")
    from hta.trace_analysis import TraceAnalysis

    path = next((REPO / "sample_traces" / "h200" / "real-loops" / "transformer-tf32-item")
                .glob("*.pt.trace.json.gz"))
    logging.getLogger("hta").setLevel(logging.ERROR)
    with tempfile.TemporaryDirectory() as d:
        os.symlink(path, os.path.join(d, "rank0.pt.trace.json.gz"))
        ta = TraceAnalysis(trace_dir=d)
        cp, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=1)
    assert ok
    hta = cp.get_critical_path_breakdown()
    by = hta.groupby("bound_by")["duration"].sum()
    assert by.idxmax() == "gpu_compute_bound"
    ours = critical_paths(load(path))["steps"][4]
    assert ours["bound_by"] == "GPU"
    assert ours["breakdown"]["kernel"] >= float(by["gpu_compute_bound"])
    on_hta = set(hta.loc[hta["bound_by"] == "gpu_compute_bound", "s_name"].dropna().astype(str))
    on_ours = {s["name"] for s in ours["segments"] if s["kind"] in ("kernel", "copy")}
    assert all(any(h.split("::")[-1] in o for o in on_ours) for h in on_hta)
