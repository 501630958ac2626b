"""Stream concurrency with many streams: one sweep, top pairs only (docs/FIGURES.md).

The sweep's top pairs are checked against the slow pairwise computation (every pair's
``|busy(a) ∩ busy(b)|`` by :func:`traceprobe.intervals.overlap`), on random streams.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceprobe.intervals import overlap, spans
from traceprobe.metrics.devices import (
    ALL_PAIRS_UPTO,
    TOP_PAIRS,
    StreamBusy,
    stream_concurrency,
    top_pairs,
)
from traceprobe.metrics.grouping import Windows


def stream(device: int, sid: int, starts: list[int], durs: list[int]) -> StreamBusy:
    s = np.array(starts, np.int64)
    busy = spans(s, s + np.array(durs, np.int64))
    return StreamBusy(device, sid, busy.length, len(starts), 0, 0, busy.length, 0, 0, busy=busy)


def brute_top(streams: list[StreamBusy], n: int) -> list[tuple[tuple[int, int], int]]:
    pairs = [
        ((a.stream, b.stream), overlap(a.busy, b.busy))
        for i, a in enumerate(streams)
        for b in streams[i + 1 :]
    ]
    return sorted((p for p in pairs if p[1] > 0), key=lambda p: (-p[1], p[0]))[:n]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 200), st.integers(1, 40)), min_size=1, max_size=6),
        min_size=2,
        max_size=12,
    )
)
def test_top_pairs_equal_the_pairwise_computation(raw):
    # GIVEN random streams (intervals may touch and overlap within a stream)
    streams = [
        stream(0, 10 + i, [a for a, _ in iv], [d for _, d in iv]) for i, iv in enumerate(raw)
    ]
    # WHEN the sweep finds the top pairs THEN they are the slow computation's, overlap and order
    got = [(p.streams, p.overlap_ns) for p in top_pairs(streams, 5)]
    want = brute_top(streams, 5)
    assert [ns for _, ns in got] == [ns for _, ns in want]
    assert got == want


def test_past_the_budget_no_pairs_are_listed():
    # GIVEN 100 streams all busy at once THEN 4950 pair additions exceed a budget of 100
    streams = [stream(0, i, [0], [10]) for i in range(100)]
    assert top_pairs(streams, 10, budget=100) == ()
    assert len(top_pairs(streams, 10)) == 10


def test_many_streams_list_only_the_top_pairs():
    # GIVEN more streams on one device than ALL_PAIRS_UPTO, one pair overlapping most
    n = ALL_PAIRS_UPTO + 8
    streams = [stream(0, i, [i * 100], [50]) for i in range(n)]  # disjoint
    streams[3] = stream(0, 3, [10**6], [60])
    streams[5] = stream(0, 5, [10**6 + 10], [30])
    [[sc]] = stream_concurrency([streams], [0], Windows.one(0, 10**6))
    # THEN pairs are the ones that overlapped, most first, and the report says pairs are omitted
    assert sc.pairs_omitted and len(sc.pairs) <= TOP_PAIRS
    assert [(p.streams, p.overlap_ns) for p in sc.pairs] == [((3, 5), 30)]
    assert sc.concurrent_ns == 30 and sc.max_concurrent == 2


@pytest.mark.parametrize("count", [10_000])
def test_ten_thousand_streams_go_through_one_sweep(count):
    # GIVEN 10,000 streams (the scale of CUDA graphs and NCCL channels), each with 2 kernels
    rng = np.random.default_rng(0)
    streams = [
        stream(0, i, sorted(rng.integers(0, 10**6, 2).tolist()), [100, 100]) for i in range(count)
    ]
    # WHEN analysed THEN it completes (a pairwise table would be 50 million merges)
    [[sc]] = stream_concurrency([streams], [0], Windows.one(0, 10**6))
    assert sc.streams == count and sc.pairs_omitted
    assert 0 < len(sc.pairs) <= TOP_PAIRS
