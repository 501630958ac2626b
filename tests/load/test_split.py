"""One file decoded by several processes (traceprobe.split) gives exactly the sequential result.

GIVEN / WHEN / THEN on hand-built traces whose strings and nested values hold the
very text the cuts look for ("}, {"), so that some guessed cuts are wrong.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import replace

import pytest
from hypothesis import given, note, settings
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
    """The merged Columns of ``parts`` parts, or None where the split gives up the
    documented way (:class:`split.Unsplittable`); any other exception fails the test."""
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
    except split.Unsplittable:  # the one expected failure: the loader then loads sequentially
        return None


def sequential(data: bytes):
    return timeline(kineto.collect(EventStream([data], "<t>"), "<t>"))


def same(a, b) -> None:
    for name in ("gpu", "cpu", "steps"):
        assert getattr(a, name).equals(getattr(b, name)), name
    how = ("parallel",)  # how it was loaded, not what
    assert {k: v for k, v in a.meta.extra.items() if k not in how} == {
        k: v for k, v in b.meta.extra.items() if k not in how
    }
    assert replace(a.meta, extra={}) == replace(b.meta, extra={})


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
    # WHEN it is decoded in parts (only Unsplittable may stop it: in_parts lets the rest raise)
    cols = in_parts(data, parts, batch_bytes)
    note(f"split {'gave up' if cols is None else 'merged'}")
    # THEN, where it merged, it is exactly the sequential result
    if cols is not None:
        same(timeline(cols), sequential(data))


def test_plain_names_always_merge():
    # GIVEN names without JSON punctuation (every "}, {" is between events)
    # WHEN split in every way THEN the split never gives up (so the property above is
    # not vacuous: the merged path is the one exercised on ordinary text)
    data = document(events(40))
    for parts in (2, 3, 4):
        for batch_bytes in (1, 57, 400):
            assert in_parts(data, parts, batch_bytes) is not None, (parts, batch_bytes)


def test_start_with_two_jobs_equals_load_for_one_big_file(tmp_path):
    # GIVEN a gzipped trace of several MB (several batches), rank and tail keys included
    path = tmp_path / "big.json.gz"
    path.write_bytes(gzip.compress(document(events(12_000))))
    # WHEN it is loaded by two workers at once, and in this process
    with loader.start([path], jobs=2) as loading:
        (parallel,) = loading.result()
    # THEN the two are the same, and the parallel path is the one that was taken
    same(parallel, loader.load(path))
    assert parallel.meta.rank == 2 and parallel.meta.trace_name == "after.json"
    assert parallel.meta.extra["parallel"] == {"parts": 2, "merged": True}
    assert loading.fallbacks == 0


def test_a_bug_in_the_merge_raises_instead_of_falling_back(tmp_path, monkeypatch):
    # GIVEN a file that splits, and a merge that fails the way a typo would
    path = tmp_path / "big.json.gz"
    path.write_bytes(gzip.compress(document(events(12_000))))

    def broken(parts):
        raise AttributeError("'Columns' object has no attribute 'rowz'")

    monkeypatch.setattr(split, "merge", broken)
    # WHEN it is loaded by two workers THEN the bug surfaces (no silent sequential reload)
    with pytest.raises(AttributeError, match="rowz"):
        with loader.start([path], jobs=2) as loading:
            loading.result()


def test_start_falls_back_when_the_cuts_are_wrong(tmp_path):
    # GIVEN a multi-MB trace whose first event's name, over a MB of "}, {", holds the
    # first guessed cut (BATCH_BYTES into the events)
    path = tmp_path / "tricky.json"
    path.write_bytes(document(events(3, name_of=lambda i: TRICKY * 90_000)))
    # WHEN it is loaded by two workers THEN the result is still exact
    with loader.start([path], jobs=2) as loading:
        (tl,) = loading.result()
    same(tl, loader.load(path))
    # AND the fallback is counted and says why
    assert loading.fallbacks == 1
    assert tl.meta.extra["parallel"]["merged"] is False
    assert "does not parse" in tl.meta.extra["parallel"]["fallback"]


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
