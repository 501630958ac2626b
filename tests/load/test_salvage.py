"""A trace cut short keeps exactly its complete events (docs/INPUT.md, "Salvage").

The reference is independent of the loader: Python's ``json`` walks the intact text
element by element and records where each event ends; a cut at byte B must keep
exactly the events that end at or before B, and their frames must equal those of the
same events loaded whole (``from_events``). The trace is a real committed recording,
cut at many offsets, plain and inside the gzip stream (then the intact prefix is what
``zlib`` can inflate from the cut bytes).
"""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path

import pytest

from traceprobe.errors import TraceError
from traceprobe.load import from_events
from traceprobe.load import pipeline as loader
from traceprobe.load.columns import collect
from traceprobe.load.frames import timeline
from traceprobe.load.read import EventStream, FileChunks

ROOT = Path(__file__).resolve().parents[2]
TRACE = next((ROOT / "sample_traces" / "h200x2" / "two-devices" / "parallel").glob("*.json.gz"))
RAW = gzip.decompress(TRACE.read_bytes())


def event_ends(text: bytes) -> tuple[list[dict], list[int]]:
    """The events and, for each, the offset just past its closing brace (json, not msgspec)."""
    s = text.decode("utf-8")
    m = re.search(r'"traceEvents"\s*:\s*\[', s)
    assert m is not None
    dec = json.JSONDecoder()
    i, events, ends = m.end(), [], []
    while True:
        while s[i] in " \t\r\n,":
            i += 1
        if s[i] == "]":
            return events, [len(s[:e].encode()) for e in ends]
        ev, i = dec.raw_decode(s, i)
        events.append(ev)
        ends.append(i)


EVENTS, ENDS = event_ends(RAW)


def frames_equal(a, b) -> None:
    for name in ("gpu", "cpu", "steps"):
        x, y = getattr(a, name).reset_index(drop=True), getattr(b, name).reset_index(drop=True)
        assert x.equals(y), name


def expect_kept(cut_text_len: int) -> int:
    return sum(1 for e in ENDS if e <= cut_text_len)


def check_cut(path: Path, intact: int, batch_bytes: int | None = None) -> None:
    """Load ``path`` (its JSON text is RAW[:intact]) and compare with the reference."""
    n = expect_kept(intact)
    complete = intact >= len(RAW.rstrip())
    if n == 0:
        with pytest.raises(TraceError) as info:
            loader.load(path)
        assert "truncated" in str(info.value) and str(path) in str(info.value)
        return
    if batch_bytes is None:
        tl = loader.load(path)
    else:  # many small batches: the cut lands after whole batches were decoded
        tl = timeline(collect(EventStream(FileChunks(path), str(path), batch_bytes), str(path)))
    salvaged = tl.meta.extra.get("salvaged")
    if complete:
        assert salvaged is None
        return
    assert salvaged is not None, intact
    assert salvaged["events_kept"] == n == tl.meta.event_count
    assert salvaged["bytes_read"] == ENDS[n - 1]
    assert "cut short" in salvaged["reason"]
    frames_equal(tl, from_events(EVENTS[:n], str(path)))


# offsets spread over the text, plus ones at and around event ends and inside numbers
_PLAIN_CUTS = sorted(
    {len(RAW) * k // 23 for k in range(1, 23)}
    | {ENDS[0], ENDS[0] - 1, ENDS[len(ENDS) // 2] + 1, ENDS[-1], ENDS[-1] + 1, len(RAW) - 2}
    | {RAW.index(b'"ts":', len(RAW) // 3) + 7}  # inside a number
)


@pytest.mark.parametrize("cut", _PLAIN_CUTS)
def test_plain_text_cut_anywhere_keeps_every_complete_event(tmp_path, cut):
    # GIVEN the real trace's JSON cut at byte ``cut``
    path = tmp_path / "cut.json"
    path.write_bytes(RAW[:cut])
    # WHEN loaded (one decode, and in batches of 4 KiB) THEN exactly the complete events
    check_cut(path, cut)
    check_cut(path, cut, batch_bytes=4096)


_GZ = gzip.compress(RAW, mtime=0)
_GZIP_CUTS = sorted({len(_GZ) * k // 19 for k in range(1, 19)} | {5, len(_GZ) - 8, len(_GZ) - 3})


@pytest.mark.parametrize("cut", _GZIP_CUTS)
def test_gzip_cut_anywhere_keeps_every_complete_event(tmp_path, cut):
    # GIVEN the gzip file cut at byte ``cut`` (header, deflate data or trailer)
    path = tmp_path / "cut.json.gz"
    path.write_bytes(_GZ[:cut])
    d = zlib.decompressobj(wbits=31)
    try:
        intact = len(d.decompress(_GZ[:cut]) + d.flush())
    except zlib.error:
        intact = 0
    if intact == 0:  # nothing inflates: the gzip error
        with pytest.raises(TraceError) as info:
            loader.load(path)
        assert "gzip" in str(info.value)
        return
    # WHEN loaded THEN the kept events are exactly those the intact prefix completes
    check_cut(path, intact)
    if intact == len(RAW):  # only the trailer is missing: nothing lost, and it says so
        tl = loader.load(path)
        assert "salvaged" not in tl.meta.extra
        assert any("trailer" in w for w in tl.meta.extra["warnings"])


def test_gzip_with_trailing_garbage_or_padding_reads_whole(tmp_path):
    # GIVEN the gzip file followed by NUL padding, or by junk (gzip -dc reads both)
    for tail in (bytes(4096), b"garbage\n"):
        path = tmp_path / "padded.json.gz"
        path.write_bytes(_GZ + tail)
        tl = loader.load(path)
        # THEN every event is there, with a warning that counts the ignored bytes
        assert tl.meta.event_count == len(EVENTS) and "salvaged" not in tl.meta.extra
        assert f"{len(tail):,} bytes after the gzip data were ignored" in tl.meta.extra["warnings"]


def test_split_loading_salvages_like_one_process(tmp_path):
    # GIVEN a cut-short trace loaded by two workers
    path = tmp_path / "cut.json"
    path.write_bytes(RAW[: len(RAW) * 2 // 3])
    with loader.start([path], jobs=2) as loading:
        (tl,) = loading.result()
    # THEN the result is the sequential salvage (the split gives up the documented way)
    ref = loader.load(path)
    frames_equal(tl, ref)
    assert tl.meta.extra["salvaged"] == ref.meta.extra["salvaged"]
