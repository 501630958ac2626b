"""Device, stream and overlap figures of many windows at once (``f(..., windows)``) are, window by
window, the figures of ``Timeline.window(lo, hi)`` alone, bit for bit (busy sets included).

Each window's figures are also checked against a slow reference written here from the
definitions (docs/FIGURES.md) with the interval primitives, one device at a time: the
windowed code shares none of its grouping with it.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from frames import comm, copy, kernel, memset, timeline
from hyp import examples
from traceprobe.intervals import Spans, coverage, max_depth, overlap, spans, union
from traceprobe.metrics import fraction
from traceprobe.metrics.devices import (
    ALL_PAIRS_UPTO,
    DeviceBusy,
    StreamBusy,
    StreamPair,
    device_busy,
    stream_busy,
    stream_concurrency,
)
from traceprobe.metrics.grouping import Windows, rows_of
from traceprobe.metrics.overlap import (
    CommCompute,
    CopyCompute,
    DevicePair,
    comm_compute,
    copy_compute,
    cross_device,
    multi_device_ns,
    serial,
)
from traceprobe.timeline import COPY_KINDS, Timeline

ROOT = Path(__file__).resolve().parents[2]


def same(a: Any, b: Any, path: str = "") -> None:
    """Equal values of equal types, recursively, internal fields (busy sets) included."""
    if isinstance(a, Spans) or isinstance(b, Spans):
        assert isinstance(a, Spans) and isinstance(b, Spans), path
        for x, y in zip(a, b, strict=True):
            assert x.dtype == y.dtype == np.int64 and np.array_equal(x, y), (path, a, b)
        return
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b), path
        for f in dataclasses.fields(a):
            same(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
        return
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            same(a[k], b[k], f"{path}.{k}")
        return
    if isinstance(a, tuple | list):
        assert type(a) is type(b) and len(a) == len(b), (path, a, b)
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            same(x, y, f"{path}[{i}]")
        return
    assert type(a) is type(b), (path, a, b)
    if isinstance(a, float) and math.isnan(a):
        assert math.isnan(b), path
    else:
        assert a == b, (path, a, b)


# -- the slow reference: one window, one device (or stream, or pair) at a time ----------------


def ref_devices(gpu, devices, span, names) -> tuple[DeviceBusy, ...]:
    out = []
    for d in devices:
        rows = gpu[gpu["device"] == d]
        s, e = rows["start"].to_numpy(), rows["end"].to_numpy()
        kind = rows["kind"].to_numpy()
        per = {k: spans(s[kind == k], e[kind == k]) for k in ("kernel", "memcpy", "memset")}
        busy = spans(s, e)
        out.append(DeviceBusy(
            d, names.get(d), busy.length, per["kernel"].length, per["memcpy"].length,
            per["memset"].length, span - busy.length, fraction(busy.length, span),
            int(e.max() - s.min()) if len(rows) else 0, int((kind == "kernel").sum()),
            int((kind == "memcpy").sum()), int((kind == "memset").sum()),
            int(rows["stream"].nunique()), busy=busy, kernel=per["kernel"]))
    return tuple(out)


def ref_streams(gpu, devices) -> tuple[StreamBusy, ...]:
    out = []
    for (d, sid), rows in sorted(gpu[gpu["device"].isin(devices)].groupby(["device", "stream"])):
        s, e, kind = rows["start"].to_numpy(), rows["end"].to_numpy(), rows["kind"].to_numpy()
        busy = spans(s, e)
        out.append(StreamBusy(
            int(d), int(sid), busy.length, int((kind == "kernel").sum()),
            int((kind == "memcpy").sum()), int((kind == "memset").sum()),
            spans(s[kind == "kernel"], e[kind == "kernel"]).length,
            spans(s[kind == "memcpy"], e[kind == "memcpy"]).length,
            coverage(s, e, 2).length, busy=busy))
    return tuple(out)


def ref_concurrency(streams, devices):
    out = []
    for d in devices:
        mine = [x for x in streams if x.device == d]
        s = np.concatenate([x.busy.starts for x in mine] or [np.empty(0, np.int64)])
        e = np.concatenate([x.busy.ends for x in mine] or [np.empty(0, np.int64)])
        pairs = tuple(StreamPair((a.stream, b.stream), overlap(a.busy, b.busy))
                      for i, a in enumerate(mine) for b in mine[i + 1 :])
        assert len(mine) <= ALL_PAIRS_UPTO  # the top-pairs case is its own test below
        out.append((d, len(mine), coverage(s, e, 2).length, max_depth(s, e), pairs))
    return tuple(out)


def ref_copies(gpu, busy) -> tuple[CopyCompute, ...]:
    out = []
    for dev in busy:
        rows = gpu[(gpu["kind"] == "memcpy") & (gpu["device"] == dev.device)]
        for direction in ("all", *COPY_KINDS):
            sub = rows if direction == "all" else rows[rows["copy_kind"] == direction]
            if direction != "all" and sub.empty:
                continue
            c = spans(sub["start"].to_numpy(), sub["end"].to_numpy())
            h = overlap(c, dev.kernel)
            pageable = (sub["src_kind"] == "Pageable") | (sub["dst_kind"] == "Pageable")
            out.append(CopyCompute(dev.device, direction, c.length, h, c.length - h,
                                   fraction(h, c.length), len(sub),
                                   int(sub["bytes"].clip(lower=0).sum()), int(pageable.sum())))
    return tuple(out)


def ref_comm(gpu, devices) -> tuple[CommCompute, ...]:
    out = []
    for d in devices:
        k = gpu[(gpu["kind"] == "kernel") & (gpu["device"] == d)]
        if not k["comm"].any():
            continue
        c = spans(k.loc[k["comm"], "start"], k.loc[k["comm"], "end"])
        h = overlap(c, spans(k.loc[~k["comm"], "start"], k.loc[~k["comm"], "end"]))
        out.append(CommCompute(d, c.length, h, c.length - h, fraction(h, c.length)))
    return tuple(out)


def ref_cross(busy) -> tuple[DevicePair, ...]:
    out = []
    for i, a in enumerate(busy):
        for b in busy[i + 1 :]:
            both = overlap(a.busy, b.busy)
            either = union(a.busy, b.busy).length
            out.append(DevicePair((a.device, b.device), both, either, fraction(both, either),
                                  fraction(both, min(a.busy.length, b.busy.length))))
    return tuple(out)


# -- running everything, both ways ---------------------------------------------------------


def gpu_span(gpu) -> int:
    return int(gpu["end"].max() - gpu["start"].min()) if len(gpu) else 0


def one_window(tl: Timeline, lo: int, hi: int, devices, names) -> dict[str, Any]:
    """Every function of the set on ``tl.window(lo, hi)`` alone (``Windows.one``)."""
    gpu = tl.window(lo, hi).gpu
    one = Windows.one(lo, hi)
    busy = device_busy(gpu, devices, one, names)
    streams = stream_busy(gpu, devices, one)
    cols = {
        "busy": busy, "streams": streams, "concurrency": stream_concurrency(streams, devices, one),
        "cross": cross_device(busy, one), "multi": multi_device_ns(busy, one),
        "copies": copy_compute(gpu, busy, one), "comm": comm_compute(gpu, devices, one),
        "serial": serial(busy, streams, [gpu_span(gpu)], one),
    }
    assert all(len(v) == 1 for v in cols.values())
    return {k: v[0] for k, v in cols.items()}


def all_windows(tl: Timeline, bounds, devices, names) -> list[dict[str, Any]]:
    """Every function on the timeline cut at ``bounds``, split per window."""
    gpu = tl.cut(bounds).gpu
    n = len(bounds)
    win = gpu["win"].to_numpy()
    spans_ = [gpu_span(gpu[win == i]) for i in range(n)]
    windows = Windows.of(bounds)
    busy = device_busy(gpu, devices, windows, names)
    streams = stream_busy(gpu, devices, windows)
    cols = {
        "busy": busy, "streams": streams,
        "concurrency": stream_concurrency(streams, devices, windows),
        "cross": cross_device(busy, windows), "multi": multi_device_ns(busy, windows),
        "copies": copy_compute(gpu, busy, windows),
        "comm": comm_compute(gpu, devices, windows),
        "serial": serial(busy, streams, spans_, windows),
    }
    assert all(len(v) == n for v in cols.values())
    return [{k: v[i] for k, v in cols.items()} for i in range(n)]


def check_against_reference(tl: Timeline, lo: int, hi: int, devices, names, got) -> None:
    gpu = tl.window(lo, hi).gpu
    busy = ref_devices(gpu, devices, hi - lo, names)
    same(got["busy"], busy)
    same(got["streams"], ref_streams(gpu, devices))
    conc = tuple((c.device, c.streams, c.concurrent_ns, c.max_concurrent, c.pairs)
                 for c in got["concurrency"])
    same(conc, ref_concurrency(got["streams"], devices))
    assert not any(c.pairs_omitted for c in got["concurrency"])
    same(got["copies"], ref_copies(gpu, busy))
    same(got["comm"], ref_comm(gpu, devices))
    same(got["cross"], ref_cross(busy))
    multi = coverage(np.concatenate([b.busy.starts for b in busy] or [np.empty(0, np.int64)]),
                     np.concatenate([b.busy.ends for b in busy] or [np.empty(0, np.int64)]),
                     2).length if len(busy) >= 2 else 0
    assert got["multi"] == multi
    s = got["serial"]
    assert s.serial_ns == sum(x.busy_ns for x in got["streams"])
    assert s.busy_union_ns == union(*(b.busy for b in busy)).length
    assert s.gpu_span_ns == gpu_span(gpu)


# -- random timelines and window sets --------------------------------------------------------

SPAN = 60
KINDS = ["kernel", "kernel", "comm", "HtoD", "DtoH", "DtoD", "PtoP", "odd-copy", "memset"]

events = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, SPAN), st.integers(0, 25),
              st.sampled_from([0, 1]), st.sampled_from([7, 8, 9]), st.booleans(),
              st.integers(-1, 4096)),
    max_size=14,
)
# arbitrary windows: overlapping, out of order, empty, outside the events
bounds = st.lists(
    st.tuples(st.integers(-5, SPAN + 5), st.integers(0, 40)).map(lambda t: (t[0], t[0] + t[1])),
    min_size=1, max_size=6,
)
# sorted windows that may touch but never overlap (the shape of ProfilerSteps)
steps_like = st.lists(st.tuples(st.integers(0, 10), st.integers(0, 15)), min_size=1,
                      max_size=6).map(
    lambda gl: [(sum(g + w for g, w in gl[:i]) + gl[i][0] - 5,
                 sum(g + w for g, w in gl[:i]) + gl[i][0] - 5 + gl[i][1]) for i in range(len(gl))]
)
device_sets = st.sampled_from([[0], [1], [0, 1], [1, 0], [0, 1, 5], []])


def row(kind: str, s: int, d: int, dev: int, stream: int, pageable: bool, nbytes: int):
    where = {"device": dev, "stream": stream}
    if kind == "kernel":
        return kernel(s, s + d, **where)
    if kind == "comm":
        return comm(s, s + d, **where)
    if kind == "memset":
        return memset(s, s + d, **where)
    extra = {"src_kind": "Pageable"} if pageable else {}
    if kind == "odd-copy":
        extra["copy_kind"] = ""  # a copy of unknown direction counts under "all" only
    return copy(s, s + d, "HtoD" if kind == "odd-copy" else kind, bytes=nbytes, **where, **extra)


@settings(max_examples=examples(100), deadline=None)
@given(events, st.one_of(steps_like, bounds), device_sets)
def test_each_window_is_the_window_alone(evs, wins, devices) -> None:
    """GIVEN kernels (comm or not), copies of every direction, memsets on two devices and three
    streams, and windows that touch, overlap, are empty or out of order
    WHEN every figure of the set is computed for all windows at once
    THEN window i's figures are those of window(lo_i, hi_i) alone, and the reference's."""
    tl = timeline(gpu=[row(*e) for e in evs])
    names = {0: "GPU zero"}
    for (lo, hi), got in zip(wins, all_windows(tl, wins, devices, names), strict=True):
        same(got, one_window(tl, lo, hi, devices, names))
        check_against_reference(tl, lo, hi, devices, names, got)


def test_an_uncut_frame_is_one_window() -> None:
    """GIVEN a frame with no win column THEN the windowed functions see one window."""
    tl = timeline(gpu=[kernel(0, 10), copy(5, 20, stream=8), comm(0, 4, device=1)])
    gpu = tl.gpu
    one = Windows.one(0, 40)
    [busy] = device_busy(gpu, [0, 1], one, {})
    assert [b.busy_ns for b in busy] == [20, 4] and busy[0].idle_ns == 20
    [streams] = stream_busy(gpu, [0, 1], one)
    assert [(s.device, s.stream) for s in streams] == [(0, 7), (0, 8), (1, 7)]
    [(c,)] = comm_compute(gpu, [0, 1], one)
    assert (c.device, c.comm_ns, c.hidden_ns) == (1, 4, 0)


def test_touching_streams_never_run_at_once() -> None:
    """GIVEN stream 8 starting exactly when stream 7 ends, and a copy when a kernel ends
    THEN (half-open intervals) no window has two streams at once nor a hidden copy."""
    tl = timeline(gpu=[kernel(0, 10), kernel(10, 20, stream=8), copy(20, 30, stream=9),
                       kernel(30, 35, device=1), kernel(35, 40, device=0)])
    wins = [(0, 20), (5, 15), (0, 40), (15, 40)]
    for (lo, hi), got in zip(wins, all_windows(tl, wins, [0, 1], {}), strict=True):
        same(got, one_window(tl, lo, hi, [0, 1], {}))
        assert [c.max_concurrent for c in got["concurrency"]] == [1, int(hi > 30)]
        assert [c.concurrent_ns for c in got["concurrency"]] == [0, 0]
        assert all(c.hidden_ns == 0 for c in got["copies"]) and got["multi"] == 0


def test_many_streams_in_many_windows_list_top_pairs() -> None:
    """GIVEN more streams than ALL_PAIRS_UPTO busy in one window and three in another
    THEN the first lists its top pairs (as the one-window function does), the second all."""
    n = ALL_PAIRS_UPTO + 5
    gpu = [kernel(i, 100 + i, stream=100 + i) for i in range(n)]  # all overlap in [0, 100)
    gpu += [kernel(200, 260, stream=1), kernel(230, 300, stream=2), kernel(250, 251, stream=3)]
    tl = timeline(gpu=gpu)
    wins = [(0, 150), (150, 400)]
    first, second = (got["concurrency"] for got in all_windows(tl, wins, [0], {}))
    same(first, one_window(tl, 0, 150, [0], {})["concurrency"])
    same(second, one_window(tl, 150, 400, [0], {})["concurrency"])
    assert first[0].pairs_omitted and first[0].streams == n and first[0].max_concurrent == n
    assert not second[0].pairs_omitted
    assert [(p.streams, p.overlap_ns) for p in second[0].pairs] == [
        ((1, 2), 30), ((1, 3), 1), ((2, 3), 1)]


def _traces_with_steps() -> list[Path]:
    return sorted(ROOT.glob("sample_traces/**/*.json.gz"))


@pytest.mark.parametrize("path", _traces_with_steps(), ids=lambda p: p.parent.name)
def test_sample_traces_cut_at_their_steps(path: Path) -> None:
    """GIVEN a recorded trace cut at its ProfilerSteps THEN each step's figures are the step
    window's alone (all devices, and the first device only)."""
    from traceprobe.load.pipeline import load

    tl = load(path)
    wins = list(zip(tl.steps["start"].tolist(), tl.steps["end"].tolist(), strict=True))
    if not wins:
        pytest.skip("no ProfilerSteps")
    names = {d: tl.meta.device_name(d) for d in tl.devices}
    for devices in {tuple(tl.devices), tuple(tl.devices[:1])}:
        for (lo, hi), got in zip(wins, all_windows(tl, wins, list(devices), names), strict=True):
            same(got, one_window(tl, lo, hi, list(devices), names))
            if all(c.streams <= ALL_PAIRS_UPTO for c in got["concurrency"]):
                check_against_reference(tl, lo, hi, list(devices), names, got)


def test_rows_of_makes_what_init_makes() -> None:
    """GIVEN columns THEN rows_of's instances equal, hash, print and replace like __init__'s;
    a missing field or columns of different lengths are refused."""
    busy = spans([0, 5], [3, 9])
    made = rows_of(StreamBusy, device=[0, 1], stream=[7, 8], busy_ns=[7, 0], kernels=[1, 0],
                   memcpys=[0, 2], memsets=[0, 0], kernel_ns=[7, 0], memcpy_ns=[0, 0],
                   self_overlap_ns=[0, 0], busy=[busy, busy])
    want = [StreamBusy(0, 7, 7, 1, 0, 0, 7, 0, 0, busy=busy),
            StreamBusy(1, 8, 0, 0, 2, 0, 0, 0, 0, busy=busy)]
    assert made == want and [repr(x) for x in made] == [repr(x) for x in want]
    assert [hash(x) for x in made] == [hash(x) for x in want]
    assert dataclasses.replace(made[0], stream=9) == dataclasses.replace(want[0], stream=9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made[0].stream = 3  # type: ignore[misc]
    with pytest.raises(TypeError, match="give exactly its fields"):
        rows_of(StreamPair, streams=[(1, 2)])
    with pytest.raises(ValueError, match="differ in length"):
        rows_of(StreamPair, streams=[(1, 2)], overlap_ns=[1, 2])
