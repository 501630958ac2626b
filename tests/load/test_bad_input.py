"""Bad input: every way a trace can be unreadable gives one TraceError line.

Each message names the file, says what is wrong and what to do; none carries a
raw traceback from msgspec, gzip or json.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from tracebuild import TraceBuilder
from traceprobe.errors import TraceError
from traceprobe.load import pipeline as loader


def big_trace_text(n: int = 40_000) -> bytes:
    """A trace large enough to be decoded in several batches."""
    t = TraceBuilder()
    for i in range(n):
        t.kernel(f"kernel_{i % 50}", ts=i * 2, dur=1)
    return json.dumps(t.document(), indent=1).encode()


def load_error(path: Path | str) -> TraceError:
    with pytest.raises(TraceError) as info:
        loader.load(path)
    return info.value


def assert_good_message(err: TraceError, path: Path | str, *words: str) -> None:
    msg = str(err)
    assert str(path) in msg, msg
    assert "Traceback" not in msg and "\n" not in msg, msg
    assert err.fix, msg  # says what to do
    assert err.exit_code == 3
    for w in words:
        assert w in msg, msg


# --------------------------------------------------------------------------- the file


def test_missing_file(tmp_path):
    # GIVEN a path that does not exist WHEN loaded THEN the message says so
    path = tmp_path / "nope.json"
    assert_good_message(load_error(path), path, "no such file", "check the path")


def test_empty_file(tmp_path):
    path = tmp_path / "empty.json"
    path.write_bytes(b"")
    assert_good_message(load_error(path), path, "empty", "re-export")


def test_unreadable_file(tmp_path, monkeypatch):
    # GIVEN a file the process may not read (simulated: tests often run as root)
    path = tmp_path / "secret.json"
    path.write_text("{}")
    real_open = Path.open

    def deny(self, *a, **kw):
        if self == path:
            raise PermissionError(13, "Permission denied")
        return real_open(self, *a, **kw)

    monkeypatch.setattr(Path, "open", deny)
    assert_good_message(load_error(path), path, "permission denied")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file_for_real(tmp_path):
    path = tmp_path / "secret.json"
    path.write_text("{}")
    path.chmod(0)
    assert_good_message(load_error(path), path, "permission denied")


def test_empty_gzip(tmp_path):
    path = tmp_path / "empty.json.gz"
    path.write_bytes(gzip.compress(b""))
    assert_good_message(load_error(path), path, "gzip file holds no data")


def test_truncated_gzip_is_salvaged(tmp_path):
    # GIVEN a gzip file cut short, small and large
    for n in (200, 40_000):
        path = tmp_path / f"cut{n}.json.gz"
        data = gzip.compress(big_trace_text(n))
        path.write_bytes(data[: len(data) // 2])
        # WHEN loaded THEN the complete events are kept (tests/load/test_salvage.py: exactly which)
        salvaged = loader.load(path).meta.extra["salvaged"]
        assert 0 < salvaged["events_kept"] < n
        assert "gzip stream ends early" in salvaged["reason"]


def test_truncated_gzip_before_any_event(tmp_path):
    # GIVEN a gzip file cut inside its first few bytes of JSON (no event complete)
    path = tmp_path / "cut.json.gz"
    data = gzip.compress(big_trace_text(200))
    path.write_bytes(data[:12])
    # THEN there is nothing to salvage: the gzip error
    assert_good_message(load_error(path), path, "gzip data is truncated", "gzip -t")


def test_corrupt_gzip(tmp_path):
    path = tmp_path / "bad.json.gz"
    data = bytearray(gzip.compress(big_trace_text(2_000)))
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    path.write_bytes(bytes(data))
    assert_good_message(load_error(path), path, "gzip data is")


# --------------------------------------------------------------------------- the JSON


def test_not_json(tmp_path):
    path = tmp_path / "notes.json"
    path.write_text("hello, this is not a trace\n")
    assert_good_message(load_error(path), path, "not JSON")


def test_html_saved_as_trace(tmp_path):
    path = tmp_path / "page.pt.trace.json.gz"
    path.write_bytes(gzip.compress(b"<!DOCTYPE html><html></html>"))
    assert_good_message(load_error(path), path, "not JSON")


def test_malformed_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"traceEvents": [}')
    assert_good_message(load_error(path), path, "not valid JSON")


@pytest.mark.parametrize("where", [0.05, 0.5, 0.99])
def test_malformed_json_in_a_large_trace_gives_the_byte(tmp_path, where):
    # GIVEN a large trace (decoded in batches) with one broken byte early, midway or late
    data = bytearray(big_trace_text())
    at = data.index(b'"ph"', int(len(data) * where))
    data[at] = ord("?")
    path = tmp_path / "broken.json"
    path.write_bytes(bytes(data))
    # THEN the message gives that byte's offset in the file
    assert_good_message(load_error(path), path, "not valid JSON", f"(byte {at})")


def test_truncated_json_without_a_complete_event(tmp_path):
    # GIVEN a trace cut before its first event ends
    t = TraceBuilder()
    t.kernel("k", ts=1, dur=1)
    text = json.dumps(t.document()).encode()
    path = tmp_path / "small.json"
    path.write_bytes(text[: len(text) * 2 // 3])
    # THEN there is nothing to salvage: one line that says so
    assert_good_message(load_error(path), path, "truncated JSON", "interrupted")


def test_truncated_json_is_salvaged(tmp_path):
    # GIVEN a large trace (many batches) cut in the middle, plain and inside gzip
    text = big_trace_text()
    for name, data in (
        ("large.json", text[: len(text) * 2 // 3]),
        ("cut.json.gz", gzip.compress(text[: len(text) // 2])),
    ):
        path = tmp_path / name
        path.write_bytes(data)
        salvaged = loader.load(path).meta.extra["salvaged"]
        assert 0 < salvaged["events_kept"] < 40_000
        assert "JSON text ends mid-document" in salvaged["reason"]


def test_object_without_trace_events(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model": "resnet", "lr": 0.1}))
    assert_good_message(
        load_error(path), path, 'without "traceEvents"', "model, lr", "not a Chrome trace"
    )


def test_trace_events_not_a_list(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": 5}')
    assert_good_message(load_error(path), path, '"traceEvents" is an int')


def test_top_level_list_of_numbers(tmp_path):
    path = tmp_path / "numbers.json"
    path.write_text("[1, 2, 3]")
    assert_good_message(
        load_error(path), path, "top-level list holds an int at index 0", "not event objects"
    )


def test_top_level_scalar(tmp_path):
    path = tmp_path / "s.json"
    path.write_text('"just a string"')
    assert_good_message(load_error(path), path, "top-level JSON value is a str")


def test_non_object_event_in_a_large_trace_names_its_index(tmp_path):
    # GIVEN a trace whose 30001st event is a number
    t = TraceBuilder()
    for i in range(40_000):
        t.kernel("k", ts=i, dur=1)
    t.events[30_000] = 7  # type: ignore[call-overload]
    path = tmp_path / "t.json"
    path.write_text(json.dumps(t.document(), indent=1))
    assert_good_message(load_error(path), path, "traceEvents[30000] is an int")


def test_event_field_of_the_wrong_type(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": "ok",
                        "pid": 0,
                        "tid": 7,
                        "ts": 1,
                        "dur": 1,
                    },
                    {"ph": "X", "cat": "kernel", "name": 5, "pid": 0, "tid": 7, "ts": 1, "dur": 1},
                ]
            }
        )
    )
    assert_good_message(load_error(path), path, "traceEvents[1].name", "Expected `str`")


# --------------------------------------------------------------------------- the events


def test_events_without_ts(tmp_path):
    # GIVEN two complete events without ts (a metadata event may lack it: that is fine)
    path = tmp_path / "nots.json"
    path.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "x"}},
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": "k",
                        "pid": 0,
                        "tid": 7,
                        "ts": 1,
                        "dur": 1,
                    },
                    {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "dur": 1},
                    {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "dur": 1},
                ]
            }
        )
    )
    # THEN the message counts them and names the first by index and name
    assert_good_message(
        load_error(path), path, "2 complete ('X') event(s) have no ts", "traceEvents[2] 'gemm'"
    )


def test_event_without_ts_deep_in_a_large_trace(tmp_path):
    t = TraceBuilder()
    for i in range(40_000):
        t.kernel("k", ts=i, dur=1)
    del t.events[35_000]["ts"]
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps(t.document(), indent=1).encode()))
    assert_good_message(
        load_error(path), path, "1 complete ('X') event(s) have no ts", "traceEvents[35000]"
    )


def test_non_numeric_ts_and_dur(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": "k",
                        "pid": 0,
                        "tid": 7,
                        "ts": "soon",
                        "dur": 1,
                    }
                ]
            }
        )
    )
    assert_good_message(load_error(path), path, "missing, non-numeric or out-of-range ts")
    path.write_text(
        json.dumps(
            {
                "traceEvents": [
                    {
                        "ph": "X",
                        "cat": "kernel",
                        "name": "k",
                        "pid": 0,
                        "tid": 7,
                        "ts": 1,
                        "dur": [1],
                    }
                ]
            }
        )
    )
    assert_good_message(load_error(path), path, "non-numeric or out-of-range dur", "dur=[1]")


# --------------------------------------------------------------------------- directories


def test_directory_without_traces(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    for call in (loader.find_traces, loader.load, loader.load_many):
        with pytest.raises(TraceError) as info:
            call(tmp_path)
        assert_good_message(info.value, tmp_path, "no trace files", "tensorboard_trace_handler")


def test_missing_path_in_load_many(tmp_path):
    with pytest.raises(TraceError) as info:
        loader.load_many([tmp_path / "gone"])
    assert_good_message(info.value, tmp_path / "gone", "no such file or directory")


def test_no_paths_at_all():
    with pytest.raises(TraceError, match="no trace paths given"):
        loader.load_many([])
