"""Windows that only touch: half-open ``[start, end)`` at step and trace boundaries.

Two bugs planted by a reviewer survived the whole suite (issue 16); each check below protects
one of them, and a companion test plants the bug again (a one-token change to the real
function's source, applied with monkeypatch) and shows the check fails on it:

- a step that only touches the analysed window's edge counted as inside it
  (``counts.steps`` 2 instead of 1), and with it events that end where the window starts;
- two traces whose windows only touch (``[0,10)`` and ``[10,20)``) listed as an
  overlapping pair by ``cross_trace`` instead of skipped.
"""

from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

import traceprobe.report.build as build
import traceprobe.timeline as timeline_mod
from frames import kernel, op, timeline
from traceprobe.metrics import overlap as overlap_mod
from traceprobe.report import analyze, analyze_many, check


def _two_touching_steps():
    """Step 1 is [0,3000), step 2 [3000,7000); one kernel ends at 3000, one starts there."""
    return timeline(
        gpu=[kernel(1000, 3000, "a"), kernel(3000, 3400, "b"), kernel(6000, 6100, "c")],
        cpu=[op(0, 7000, "aten::linear")],
        steps=[(1, 0, 3000), (2, 3000, 7000)],
    )


def check_touching_steps_are_outside(analyze_: Callable[..., Any]) -> None:
    """Each step's report holds its own step only, and no event that merely touches it."""
    tl = _two_touching_steps()
    one, two = analyze_(tl, step=1), analyze_(tl, step=2)
    # hand count: step 1 holds kernel a [1000,3000) only; step 2 holds b [3000,3400), c
    assert (one.counts.steps, two.counts.steps) == (1, 1), "a touching step counted as inside"
    assert (one.counts.kernels, two.counts.kernels) == (1, 2), "a touching kernel counted"
    assert (one.device(0).busy_ns, two.device(0).busy_ns) == (2000, 400 + 100)
    per_step = analyze_(tl, step="all").steps
    assert [s.counts.steps for s in per_step] == [1, 1]
    assert [s.counts.kernels for s in per_step] == [1, 2]
    for r in (one, two, *per_step):
        check(r)


def check_touching_traces_are_skipped(analyze_many_: Callable[..., Any]) -> None:
    """Windows [0,10) and [10,20) share no instant: skipped, not a 0 ns pair. The traces are
    ranks 0 and 1 of one two-rank job (one folder): cross_trace compares only those."""
    job = {"world_size": 2}
    t0 = timeline(gpu=[kernel(0, 10)], source="run/r0.json", rank=0, **job)
    t1 = timeline(gpu=[kernel(10, 20, device=1)], source="run/r1.json", rank=1, **job)
    m = analyze_many_([t0, t1])
    assert [(r.window.start_ns, r.window.end_ns) for r in m.reports] == [(0, 10), (10, 20)]
    assert m.cross_trace.pairs == (), "touching trace windows listed as an overlapping pair"
    assert [s.traces for s in m.cross_trace.skipped] == [(0, 1)]
    # one nanosecond of shared window makes them a pair (busy overlap: [9,10), 1 ns)
    t1b = timeline(gpu=[kernel(9, 20, device=1)], source="run/r1.json", rank=1, **job)
    m2 = analyze_many_([t0, t1b])
    assert [(p.a.trace, p.b.trace, p.overlap_ns) for p in m2.cross_trace.pairs] == [(0, 1, 1)]
    assert m2.cross_trace.skipped == ()


def test_a_step_touching_the_window_edge_is_not_inside_it() -> None:
    check_touching_steps_are_outside(analyze)


def test_traces_whose_windows_only_touch_are_skipped_by_cross_trace() -> None:
    check_touching_traces_are_skipped(analyze_many)


def _planted(module: ModuleType, name: str, old: str, new: str) -> Callable[..., Any]:
    """``module.name`` rebuilt from its source with ``old`` replaced by ``new`` (one bug)."""
    src = textwrap.dedent(inspect.getsource(getattr(module, name)))
    assert src.count(old) == 1, f"{module.__name__}.{name} changed: update the planted bug {old!r}"
    space: dict[str, Any] = {}
    exec(compile(src.replace(old, new), f"<planted {name}>", "exec"), vars(module).copy(), space)
    return space[name]  # type: ignore[no-any-return]


def test_the_step_check_fails_when_touching_steps_count_as_inside(monkeypatch) -> None:
    # the surviving mutant of issue 16: keep rows with start <= hi and end >= lo
    bad = _planted(timeline_mod, "_clip_frame", "(s < hi) & (e > lo)", "(s <= hi) & (e >= lo)")
    monkeypatch.setattr(timeline_mod, "_clip_frame", bad)
    with pytest.raises(AssertionError, match="touching"):
        check_touching_steps_are_outside(analyze)


def test_the_cross_trace_check_fails_when_touching_windows_pair(monkeypatch) -> None:
    # the surviving mutant of issue 16: windows that share only an edge count as intersecting
    old = "max(lo_i, lo_j) >= min(hi_i, hi_j)"
    bad = _planted(overlap_mod, "cross_trace", old, old.replace(">=", ">"))
    monkeypatch.setattr(build, "cross_trace", bad)
    with pytest.raises(AssertionError, match="touching trace windows"):
        check_touching_traces_are_skipped(analyze_many)


# -- the int64 edges of timestamp conversion (survivors of scripts/mutants.py) ----------------


def test_timestamps_at_the_int64_nanosecond_edges() -> None:
    from traceprobe.load.read import us_to_ns

    top, bottom = 2**63 - 1, -(2**63) + 1  # the ns range traceprobe accepts
    texts = [
        b"9223372036854775.807",  # the largest: exact
        b"9223372036854775.808",  # one ns beyond: not a number traceprobe can hold
        b"9223372036854775.999",
        b"9223372036854774.999",  # the largest whole µs the fast path takes, and more digits
        b"9223372036854774.9995",  # rounds up to ...775.000 µs
        b"-9223372036854775.807",
        b"-9223372036854775.808",  # -2**63 ns: outside (the range is symmetric)
    ]
    ns, status = us_to_ns(texts)
    assert list(zip(ns.tolist(), status.tolist(), strict=True)) == [
        (top, 0),
        (0, 2),
        (0, 2),
        (9223372036854774999, 0),
        (9223372036854775000, 0),
        (bottom, 0),
        (0, 2),
    ]


def test_absent_and_junk_timestamps_are_zero_ns_with_their_status() -> None:
    from traceprobe.load.read import us_to_ns

    texts = [b"", b"null", b" null ", b'"x"', b'"12', b'12"', b"1.2.3", b"nan", b'"7.5"', b"7"]
    ns, status = us_to_ns(texts)
    # 1 = absent, 2 = not a number (a quote must open and close it), 0 = converted
    assert status.tolist() == [1, 1, 1, 2, 2, 2, 2, 2, 0, 0]
    assert ns.tolist() == [0, 0, 0, 0, 0, 0, 0, 0, 7_500, 7_000]


# -- launches onto an idle stream: the first kernel's own stream, strictly earlier starts -------


def test_idle_stream_is_judged_on_the_first_kernels_own_stream() -> None:
    from frames import runtime

    # GIVEN one launch (correlation 1 at t=2) whose kernels ran on GPU 1 at 5 (the first) and
    # on GPU 0 at 30, where GPU 0 stream 7 was busy [10, 50) before it; a second launch
    # (correlation 2 at t=60) whose kernel starts at 70 on a stream where a copy also starts
    # at 70 (same instant: not ahead of it)
    tl = timeline(
        gpu=[
            kernel(10, 50, "long"),
            kernel(30, 35, "k1", correlation=1),
            kernel(5, 8, "k1", device=1, correlation=1),
            kernel(70, 75, "k2", stream=9, correlation=2),
            {"kind": "memcpy", "name": "Memcpy HtoD", "start": 70, "end": 72, "stream": 9,
             "copy_kind": "HtoD", "src_kind": "Pinned", "dst_kind": "Device", "bytes": 8},
        ],
        cpu=[runtime(2, 3, correlation=1), runtime(60, 61, correlation=2)],
    )
    lat = analyze(tl).host.launch_latency
    # THEN both are launches onto an idle stream: 5 - 2 = 3 and 70 - 60 = 10 (FIGURES.md)
    assert (lat.count, lat.unqueued_count, lat.unqueued_max_ns) == (2, 2, 10)
    assert lat.unqueued_p50_ns == 6.5


# -- boundaries of the host figures (survivors of scripts/mutants.py on metrics/host.py) -------


def test_launch_latency_counts_correlation_zero_and_a_zero_delay() -> None:
    from frames import runtime

    # GIVEN correlation id 0 (a valid id: -1 means none) launched at 4, its kernel at 4 (0 ns
    # later), and correlation 3 launched at 10, its kernel at 16
    tl = timeline(
        gpu=[kernel(4, 6, correlation=0), kernel(16, 18, correlation=3)],
        cpu=[runtime(4, 5, correlation=0), runtime(10, 11, correlation=3)],
    )
    lat = analyze(tl).host.launch_latency
    # THEN both count: latencies 0 and 6
    assert (lat.count, lat.mean_ns, lat.max_ns) == (2, 3.0, 6)


def test_a_launch_is_queued_behind_the_latest_ending_earlier_activity() -> None:
    from frames import runtime

    # GIVEN stream 7 busy [0,10) then [12,20); a launch at 15 whose kernel starts at 25
    tl = timeline(
        gpu=[kernel(0, 10), kernel(12, 20), kernel(25, 30, correlation=1)],
        cpu=[runtime(15, 16, correlation=1)],
    )
    lat = analyze(tl).host.launch_latency
    # THEN it was queued: [12,20) had not ended at 15 (though [0,10) had)
    assert (lat.count, lat.unqueued_count) == (1, 0)


def test_a_one_nanosecond_gap_between_kernels_is_a_gap() -> None:
    tl = timeline(gpu=[kernel(0, 5), kernel(6, 10), kernel(10, 12)])
    [g] = analyze(tl).host.kernel_gaps
    assert (g.gaps, g.max_ns, g.mean_ns) == (1, 1, 0.5)
