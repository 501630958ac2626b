"""The sets of time pictures draw (traceprobe.metrics.bands): each band's length is the report's
figure for it, on every sample trace (whole report and every step), and by hand on a tiny one."""

from __future__ import annotations

from pathlib import Path

import pytest

from frames import comm, copy, kernel, timeline
from traceprobe.load.pipeline import load
from traceprobe.metrics.bands import activity, overlap_bands
from traceprobe.metrics.grouping import Windows
from traceprobe.report import Report, analyze

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted(p for p in (ROOT / "sample_traces").rglob("*.pt.trace.json*")
                if p.stat().st_size < 3_000_000)


def figures(r: Report) -> dict[tuple, int]:
    """The report's lengths that a band draws, keyed as :func:`lengths` keys the bands."""
    devices = [d.device for d in r.devices]
    out: dict[tuple, int] = {("gpu_idle", d.device): d.idle_ns for d in r.devices}
    if len(devices) >= 2:
        out[("multi_device", None)] = r.overlap.multi_device_ns
    for c in r.overlap.copy_compute:
        if c.direction == "all" and c.copies:
            out[("copy_hidden", c.device)] = c.hidden_ns
    for s in r.overlap.streams:
        if s.streams >= 2:
            out[("streams_concurrent", s.device)] = s.concurrent_ns
    if len(devices) >= 3:
        out |= {("device_pair", p.devices): p.overlap_ns for p in r.overlap.cross_device}
    return out


def lengths(bands) -> dict[tuple, int]:
    return {(b.kind, b.pair if b.kind == "device_pair" else b.device): b.length for b in bands}


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.parent.name + "/" + p.name[:14])
def test_band_lengths_are_the_reports_figures(path: Path) -> None:
    """GIVEN a recorded trace WHEN its report (and every step's) is made THEN the bands over
    the report's window, from the same frames, measure what the report says."""
    tl = load(path)
    r = analyze(tl, step="all")
    devices = [d.device for d in r.devices]
    lo, hi = r.window.start_ns, r.window.end_ns
    (whole,) = overlap_bands(tl.window(lo, hi).gpu, devices, Windows.one(lo, hi), idle=True,
                             pairs_upto=99)
    assert lengths(whole) == figures(r)
    if r.steps:
        bounds = [(s.window.start_ns, s.window.end_ns) for s in r.steps]
        per_step = overlap_bands(tl.cut(bounds).gpu, devices, Windows.of(bounds), idle=True,
                                 pairs_upto=99)
        for step, bands in zip(r.steps, per_step, strict=True):
            want = figures(step)
            if step.window.end_ns == step.window.start_ns:  # no idle band in no time
                want = {k: v for k, v in want.items() if k[0] != "gpu_idle"}
            assert lengths(bands) == want, step.window.step


def test_bands_by_hand() -> None:
    """GIVEN GPU 0: kernels [0,10) [20,30) on stream 7, a copy [5,25) on stream 8; GPU 1: a
    comm kernel [8,22) THEN ≥2 GPUs busy is [8,22) (the copy fills GPU 0's gap), the copy
    hidden under GPU 0's kernels [5,10)+[20,25), its ≥2 streams [5,10)+[20,25), and GPU 0
    idle nothing of [0,30) but GPU 1 idle [0,8)+[22,30)."""
    tl = timeline(gpu=[kernel(0, 10), kernel(20, 30), copy(5, 25, stream=8),
                       comm(8, 22, device=1)])
    (bands,) = overlap_bands(tl.gpu, [0, 1], Windows.one(0, 30), idle=True)
    got = {(b.kind, b.device): (b.spans.starts.tolist(), b.spans.ends.tolist()) for b in bands}
    assert got == {
        ("multi_device", None): ([8], [22]),
        ("copy_hidden", 0): ([5, 20], [10, 25]),
        ("streams_concurrent", 0): ([5, 20], [10, 25]),
        ("gpu_idle", 0): ([], []),
        ("gpu_idle", 1): ([0, 22], [8, 30]),
    }
    lanes = {(a.device, a.stream): {k: (p.starts.tolist(), p.ends.tolist())
                                    for k, p in a.pieces.items()} for a in activity(tl.gpu)}
    assert lanes == {(0, 7): {"kernel": ([0, 20], [10, 30])},
                     (0, 8): {"memcpy": ([5], [25])},
                     (1, 7): {"comm": ([8], [22])}}
