"""The loader's batch cutting and column extraction against the plain json module.

EventStream cuts the text into batches (looking for the cut in the newest chunk first, in
the whole text when there is none there) and Collector.add extracts every column of a
batch in a few passes; both are checked here against a slow, simple reading of the same
text with ``json`` and ``decimal``, event by event.
"""

from __future__ import annotations

import gzip
import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from traceprobe.load.columns import collect
from traceprobe.load.read import EventStream, read_events
from traceprobe.load.schema import GPU_CATEGORIES, SKIPPED_CATEGORIES

ROOT = Path(__file__).resolve().parents[2]
REAL = [
    sorted((ROOT / "sample_traces" / "h200x2" / "ddp" / "train").glob(
        "vm_0.*.pt.trace.json.gz"))[0],
    next((ROOT / "sample_traces" / "h200" / "real-loops" / "transformer-fp32-modules").glob(
        "*.pt.trace.json.gz")),
    next((ROOT / "sample_traces" / "h200" / "many-steps").glob("*.pt.trace.json.gz")),
]


def _ns(v: Any) -> int:
    """µs (a Decimal from json) to ns, half away from zero: the loader's documented rule."""
    return int((v * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def _int(v: Any) -> int:
    """A whole JSON number as an int, anything else -1 (the loader's missing value)."""
    if isinstance(v, Decimal) and v == v.to_integral_value():
        return int(v)
    return -1


def _plain(v: Any) -> Any:
    """json's Decimals back to ints and floats, in nested lists."""
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, Decimal):
        return int(v) if v == v.to_integral_value() else float(v)
    return v


def _events(text: bytes) -> list[dict[str, Any]]:
    doc = json.loads(text, parse_float=Decimal, parse_int=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def _mixed(n: int) -> bytes:
    """CPU ops, runtime calls, kernels, copies, flows and skipped spans, with long names,
    nested args, odd whitespace and fraction digits of every length."""
    evs: list[str] = []
    for i in range(n):
        ts = f"{1712195495519 + i * 7}.{'0123'[: i % 4]}".rstrip(".")
        long = "x" * (i * 37 % 900)
        kind = i % 6
        if kind == 0:
            evs.append(f'{{"ph":"X","cat":"cpu_op","name":"aten::op{i % 13} {long}",'
                       f'"pid":{7 + i % 2},"tid":{70 + i % 3},"ts":{ts},'
                       f'"dur":{i % 50}.{i % 1000:03d},'
                       f'"args":{{"External id":{i},"Input Dims":[[{i % 5},3],[]],'
                       f'"Input type":["float",""],"Concrete Inputs":["","{i % 3}"]}}}}')
        elif kind == 1:
            evs.append(f'{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":7,'
                       f'"tid":70,"ts":{ts},"dur":3,'
                       f'"args":{{"External id":{i},"correlation":{i + 100000}}}}}')
        elif kind == 2:
            evs.append(f'{{"ph":"X","cat":"kernel","name":"void k<{i % 11}>() {long}","pid":0,'
                       f'"tid":{7 + i % 2},"ts":{ts},"dur":{i % 9}.5,"args":{{"device":{i % 2},'
                       f'"stream":{7 + i % 2},"correlation":{i + 99999},"External id":{i - 2},'
                       f'"grid":[{i % 4},1,1],"block":[128,1,1],"registers per thread":32,'
                       f'"shared memory":{i % 3 * 1024},"blocks per SM":{i % 7}.25,'
                       f'"warps per SM":4,"est. achieved occupancy %":{i % 100}}}}}')
        elif kind == 3:
            evs.append(f'{{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pinned -> Device)",'
                       f'"pid":0,"tid":9,"ts":{ts},"dur":2,"args":{{"device":0,"stream":9,'
                       f'"correlation":{i + 99998},"bytes":{i * 4096}}}}}')
        elif kind == 4:
            evs.append(f'{{"ph":"s","id":{i},"pid":7,"tid":70,"ts":{ts},"cat":"ac2g",'
                       f'"name":"ac2g"}}')
        else:
            evs.append(f'{{"ph":"X","cat":"gpu_user_annotation","name":"a{i}","pid":0,'
                       f'"tid":7,"ts":{ts},"dur":1}}')
    seps = [",", " ,\n", ",\t ", "\n,\n  "]
    body = "".join(e + (seps[i % 4] if i < n - 1 else "") for i, e in enumerate(evs))
    return ('{"schemaVersion": 1, "traceEvents": [\n' + body + '\n], "traceName": "t"}').encode()


def _check_columns(text: bytes, cols: Any) -> None:
    """Every CPU and GPU row, in file order, as json and decimal read it."""
    cpu: list[tuple[Any, ...]] = []
    gpu: list[tuple[Any, ...]] = []
    for e in _events(text):
        if e.get("ph") != "X" or e.get("cat", "") in SKIPPED_CATEGORIES:
            continue
        a = e.get("args", {})
        ext = _int(a.get("External id", a.get("external id", -1)))
        start = _ns(e["ts"])
        end = start + max(_ns(e.get("dur", Decimal(0))), 0)
        row = (e.get("cat", ""), e["name"], start, end, _int(a.get("correlation", -1)), ext)
        if e.get("cat", "") in GPU_CATEGORIES:
            gpu.append((*row, _int(a.get("device", -1)), _int(a.get("stream", -1)),
                        _int(a.get("bytes", -1))))
        else:
            dims = a.get("Input Dims")
            cpu.append((*row, int(e["pid"]), int(e["tid"]),
                        None if dims is None else _plain(dims)))
    c, g = cols.cpu, cols.gpu
    have_cpu = [
        (cols.cats[c["cat"][i]], cols.names[c["name"][i]], int(c["start"][i]), int(c["end"][i]),
         int(c["correlation"][i]), int(c["external_id"][i]), int(c["pid"][i]), int(c["tid"][i]),
         json.loads(cols.texts[c["input_dims"][i]]) if c["input_dims"][i] else None)
        for i in range(len(c.get("start", [])))
    ]
    assert have_cpu == cpu
    have_gpu = [
        (cols.cats[g["cat"][i]], cols.names[g["name"][i]], int(g["start"][i]), int(g["end"][i]),
         int(g["correlation"][i]), int(g["external_id"][i]), int(g["device"][i]),
         int(g["stream"][i]), int(g["bytes"][i]))
        for i in range(len(g.get("start", [])))
    ]
    assert have_gpu == gpu


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.parent.name)
def test_real_traces_columns_match_the_json_module(path: Path) -> None:
    """GIVEN real H200 traces WHEN collected THEN every CPU and GPU row (times to the ns,
    names, ids, devices, streams, bytes, input dims) is json's reading of that event."""
    cols = collect(read_events(path), str(path))
    assert len(cols.cpu["start"]) > 100 and len(cols.gpu["start"]) > 20
    _check_columns(gzip.decompress(path.read_bytes()), cols)


@pytest.mark.parametrize("chunk", [1, 97, 4096, 50_000, 1 << 22])
@pytest.mark.parametrize("batch_bytes", [64, 3000, 1 << 20])
def test_batches_cut_anywhere_give_json_s_events(chunk: int, batch_bytes: int) -> None:
    """GIVEN a mixed trace arriving in chunks of any size (names longer than a chunk, so
    some chunks hold no cut and the cut falls in the text before them) WHEN it is read in
    batches of any size THEN the events and their columns are json's, in file order."""
    text = _mixed(600)
    chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    stream = EventStream(iter(chunks), "mixed.json", batch_bytes=batch_bytes)
    calls: list[tuple[int, bool]] = []  # (bytes before the newest chunk, a cut found)
    real = stream._batch

    def spy(head: bytes, buf: bytes, consumed: int, listform: bool) -> Any:
        out = real(head, buf, consumed, listform)
        calls.append((len(head), out[0] is not None))
        return out

    stream._batch = spy  # type: ignore[method-assign]
    names = [e.name for batch in stream for e in batch]
    if (chunk, batch_bytes) == (97, 64):  # some chunks lie inside a long name: no cut there
        assert any(h and not ok for h, ok in calls) and any(h and ok for h, ok in calls)
    assert names == [e["name"] for e in _events(text)]
    assert stream.header.traceName == "t" and stream.event_count == 600
    stream = EventStream(iter(chunks), "mixed.json", batch_bytes=batch_bytes)
    cols = collect(stream, "mixed.json")
    if max(batch_bytes, chunk) < len(text):
        assert cols.batches > 1
    _check_columns(text, cols)


def test_ts_and_dur_are_exact_and_each_named_when_bad() -> None:
    """GIVEN ts and dur converted together WHEN one dur is junk THEN the error is about the
    dur (not the ts), and a good batch's times are the decimal ones to the ns."""
    from traceprobe.errors import TraceError

    evs = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1,
            "ts": f"1712195495519689.{i:03d}", "dur": f"{i}.0005"} for i in range(50)]
    text = json.dumps({"traceEvents": evs})
    for e in evs:  # the numbers unquoted, exactly as written
        text = text.replace(f'"{e["ts"]}"', e["ts"]).replace(f'"{e["dur"]}"', e["dur"])
    text = text.encode()
    cols = collect(EventStream([text], "t.json"), "t.json")
    want = [(_ns(Decimal(e["ts"])), _ns(Decimal(e["ts"])) + _ns(Decimal(e["dur"]))) for e in evs]
    assert list(zip(cols.cpu["start"].tolist(), cols.cpu["end"].tolist(), strict=True)) == want
    bad = text.replace(b'"dur": 7.0005', b'"dur": "seven"')
    with pytest.raises(TraceError, match=r"non-numeric or out-of-range dur .*traceEvents\[7\]"):
        collect(EventStream([bad], "t.json"), "t.json")
    assert np.all(cols.cpu["end"] >= cols.cpu["start"])


@pytest.mark.parametrize("chunk", [1, 13, 4096, 1 << 22])
def test_only_top_level_trace_events_keys_count(chunk: int) -> None:
    """GIVEN "traceEvents" keys nested inside events (in the batches and in the last
    events) WHEN read THEN the trace loads as json reads it; GIVEN a second top-level key
    (or one nested in a top-level value), before or after an array read in many batches,
    THEN it is refused."""
    from traceprobe.errors import TraceError

    def read(text: bytes) -> list[str]:
        chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
        return [e.name for b in EventStream(iter(chunks), "t.json", batch_bytes=256) for e in b]

    ev = ('{{"ph":"X","cat":"cpu_op","name":"op{0}","pid":1,"tid":1,"ts":{0},"dur":1,'
          '"args":{{"traceEvents": [{{"traceEvents": {0}}}]}}}}')
    events = ", ".join(ev.format(i) for i in range(40))
    nested = ('{"traceEvents": [' + events + '], "traceName": "x"}').encode()
    assert read(nested) == [e["name"] for e in _events(nested)]
    for dup in ('{"traceEvents": [' + events + '], "traceEvents": []}',
                '{"traceName": {"traceEvents": 1}, "traceEvents": [' + events + "]}",
                '{"traceEvents": [' + events + '],\n"a": {"traceEvents": 1}, "traceEvents": []}'):
        with pytest.raises(TraceError, match='"traceEvents" appears'):
            read(dup.encode())
