"""One file decoded by several processes (traceprobe.split) gives exactly the sequential result.

GIVEN / WHEN / THEN on hand-built traces whose strings and nested values hold the
very text the cuts look for ("}, {"), so that some guessed cuts are wrong.
"""

from __future__ import annotations

import gzip
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from traceprobe.errors import TraceError
from traceprobe.load import columns as kineto
from traceprobe.load import pipeline as loader
from traceprobe.load import split
from traceprobe.load.frames import timeline
from traceprobe.load.read import EventStream

TRICKY = '}, {"x": 1}, {'


def events(n: int, name_of=lambda i: f"op{i % 7}", nested: object = None) -> list[dict]:
    out = []
    for i in range(n):
        args = {"External id": i, "Input Dims": [[1, 2], [3]]}
        if nested is not None:
            args["nested"] = nested
        out.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": name_of(i),
                "pid": 1,
                "tid": 1,
                "ts": 1000 + 3 * i,
                "dur": 2,
                "args": args,
            }
        )
        if i % 5 == 0:
            out.append(
                {
                    "ph": "X",
                    "cat": "kernel",
                    "name": f"k{i % 3}",
                    "pid": 0,
                    "tid": 7,
                    "ts": 1001.5 + 3 * i,
                    "dur": 1,
                    "args": {"device": 0, "stream": 7, "correlation": i, "External id": i},
                }
            )
        if i % 4 == 0:
            out.append(
                {
                    "ph": "f",
                    "id": i,
                    "pid": 0,
                    "tid": 7,
                    "ts": 1002 + 3 * i,
                    "cat": "ac2g",
                    "name": "ac2g",
                    "bp": "e",
                }
            )
    out.append(
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": 1,
            "tid": 1,
            "ts": 900,
            "dur": 10**6,
        }
    )
    out.append({"ph": "X", "cat": "Trace", "name": "x", "pid": 1, "tid": 1, "ts": 0, "dur": 5})
    return out


def document(evs: list[dict]) -> bytes:
    doc = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 2},
        "traceEvents": evs,
        "traceName": "after.json",
        "baseTimeNanoseconds": 17,
    }
    return json.dumps(doc, indent=1).encode()


def in_parts(data: bytes, parts: int, batch_bytes: int, chunk: int = 1000):
    """The merged Columns of ``parts`` parts, or None where the split gives up."""
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    done = []
    try:
        for p in range(parts):
            stream = split.PartStream(pieces, "<t>", p, parts, batch_bytes=batch_bytes)
            c = kineto.Collector("<t>")
            for k, batch in stream:
                c.add(batch, k)
            cols = c.columns(stream)
            cols.batches = stream.batches
            done.append(cols)
        return split.merge(done)
    except Exception:  # any doubt means: load sequentially
        return None


def sequential(data: bytes):
    return timeline(kineto.collect(EventStream([data], "<t>"), "<t>"))


def same(a, b) -> None:
    for name in ("gpu", "cpu", "steps"):
        assert getattr(a, name).equals(getattr(b, name)), name
    assert a.meta == b.meta


@pytest.mark.parametrize("parts", [2, 3])
@pytest.mark.parametrize("batch_bytes", [1, 200, 2000, 10**6])
def test_parts_merge_into_the_sequential_timeline(parts, batch_bytes):
    # GIVEN a Kineto-like trace with top-level keys before and after the events
    data = document(events(60))
    # WHEN it is decoded in parts, every part taking every n-th batch
    cols = in_parts(data, parts, batch_bytes)
    # THEN (no "}, {" but between events: every guessed cut is right) it equals one decode
    assert cols is not None
    same(timeline(cols), sequential(data))
    assert cols.event_count == len(events(60))


@pytest.mark.parametrize(
    "name_of, nested",
    [
        (lambda i: TRICKY * 50, None),  # cuts inside strings
        (lambda i: "op", [{"x": 1}, {"y": [{"z": 2}, {"w": 3}]}] * 30),  # inside nested values
    ],
)
def test_a_cut_inside_a_value_makes_the_split_give_up(name_of, nested):
    # GIVEN events full of "}, {" that is not between events
    data = document(events(40, name_of=name_of, nested=nested))
    # WHEN it is decoded in parts with small batches
    # THEN the split refuses rather than guess (the loader then decodes sequentially)
    assert in_parts(data, 2, 500) is None


@settings(max_examples=60, deadline=None)
@given(
    names=st.lists(st.text(alphabet='}{,: "\\\nab', max_size=12), min_size=1, max_size=30),
    nested=st.sampled_from([None, [{"a": TRICKY}], [{"x": 1}, {"y": 2}]]),
    parts=st.integers(2, 4),
    batch_bytes=st.integers(1, 400),
)
def test_whatever_the_text_a_merged_split_is_exact(names, nested, parts, batch_bytes):
    # GIVEN any names, including JSON punctuation, and nested values
    data = document(events(len(names), name_of=lambda i: names[i], nested=nested))
    # WHEN split decoding succeeds
    cols = in_parts(data, parts, batch_bytes)
    # THEN it is exactly the sequential result
    if cols is not None:
        same(timeline(cols), sequential(data))


def test_start_with_two_jobs_equals_load_for_one_big_file(tmp_path):
    # GIVEN a gzipped trace of several MB (several batches), rank and tail keys included
    path = tmp_path / "big.json.gz"
    path.write_bytes(gzip.compress(document(events(12_000))))
    # WHEN it is loaded by two workers at once, and in this process
    with loader.start([path], jobs=2) as loading:
        (parallel,) = loading.result()
    # THEN the two are the same
    same(parallel, loader.load(path))
    assert parallel.meta.rank == 2 and parallel.meta.trace_name == "after.json"


def test_start_falls_back_when_the_cuts_are_wrong(tmp_path):
    # GIVEN a multi-MB trace whose strings are full of "}, {"
    path = tmp_path / "tricky.json"
    path.write_bytes(document(events(3000, name_of=lambda i: TRICKY * 40)))
    # WHEN it is loaded by two workers THEN the result is still exact
    with loader.start([path], jobs=2) as loading:
        (tl,) = loading.result()
    same(tl, loader.load(path))


def test_start_reports_the_sequential_error_for_a_damaged_file(tmp_path):
    # GIVEN a multi-MB trace with a non-numeric ts far into the file
    evs = events(12_000)
    evs[-100]["ts"] = "soon"
    path = tmp_path / "bad.json"
    path.write_bytes(document(evs))
    # WHEN it is loaded by two workers
    with pytest.raises(TraceError) as split_err:
        with loader.start([path], jobs=2) as loading:
            loading.result()
    # THEN the message is the one a sequential load gives (the index counts the whole file)
    with pytest.raises(TraceError) as seq_err:
        loader.load(path)
    assert str(split_err.value) == str(seq_err.value)
    assert "traceEvents[" in str(split_err.value)
