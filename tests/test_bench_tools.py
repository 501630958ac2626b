"""scripts/enlarge_trace.py makes valid, exactly shifted k-fold copies (no timing here).

The tiny trace has epoch-scale timestamps with nanosecond fractions written as exact
JSON text (a float64 would not hold them), linked runtime/kernel pairs with flow
events, ops with External ids, two profiler steps and metadata events.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from decimal import Decimal
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from tracebuild import TraceBuilder  # tests/tracebuild.py

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
T0 = Decimal("1712195495519689.047")  # µs since the epoch, with ns digits


def load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    assert spec and spec.loader
    if name in sys.modules:
        return sys.modules[name]
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def enlarge_trace() -> ModuleType:
    return load_script("enlarge_trace")


def tiny_trace(path: Path) -> Path:
    t = TraceBuilder(distributedInfo={"rank": 0, "world_size": 1})
    t.device_properties(0)
    t.add(ph="M", name="process_name", pid=1000, tid=0, ts=T0, args={"name": "python"})
    t.add(ph="M", name="thread_name", pid=0, tid=7, ts=T0, args={"name": "stream 7"})
    t.step(3, ts=T0, dur=Decimal("100.5"))
    t.step(4, ts=T0 + Decimal("100.5"), dur=Decimal("99.25"))
    for i, (cpu, gpu) in enumerate([(Decimal("1.001"), Decimal("5.002")), (150, 160)]):
        op = t.op("aten::mm", ts=T0 + cpu - 1, dur=3, **{"External id": 40 + i})
        r, k = t.launch(
            "gemm",
            cpu_ts=T0 + cpu,
            cpu_dur=Decimal("1.5"),
            gpu_ts=T0 + gpu,
            gpu_dur=Decimal("20.125"),
        )
        k["args"]["External id"] = op["args"]["External id"]
        r["args"]["External id"] = op["args"]["External id"]
        c = k["args"]["correlation"]
        t.add(ph="s", id=c, pid=1000, tid=1000, ts=r["ts"], cat="ac2g", name="ac2g")
        t.add(ph="f", id=c, pid=0, tid=7, ts=k["ts"], cat="ac2g", name="ac2g", bp="e")
    t.memcpy("Memcpy HtoD (Pageable -> Device)", ts=T0 + 190, dur=Decimal("9.999"))
    t.add(ph="i", s="g", name="Iteration Start: PyTorch Profiler", pid=1000, tid=1000, ts=T0)
    data = msgspec.json.Encoder(decimal_format="number").encode(t.document())
    path.write_bytes(gzip.compress(data) if path.name.endswith(".gz") else data)
    return path


def exact(path: Path) -> dict[str, Any]:
    """The trace, every float the Decimal of its text (stdlib json: also a validity check)."""
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=Decimal)


def non_meta(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if e.get("ph") != "M"]


def end(e: dict[str, Any]) -> Decimal:
    return Decimal(e["ts"]) + Decimal(e.get("dur", 0))


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_enlarge_copies_exactly(tmp_path: Path, enlarge_trace: ModuleType, suffix: str) -> None:
    # GIVEN the tiny trace and k = 3
    src = tiny_trace(tmp_path / f"src{suffix}")
    k = 3
    dst = tmp_path / f"out.x3{suffix}"
    # WHEN enlarged
    info = enlarge_trace.enlarge(src, dst, k)
    # THEN the output is valid JSON with the same top level, and records what it did
    a, b = exact(src), exact(dst)
    assert b["deviceProperties"] == a["deviceProperties"]
    assert b["distributedInfo"] == a["distributedInfo"]
    assert b["traceprobeEnlarged"] == {"source": src.name, "copies": 3, "shift_us": info.shift_us}
    # metadata once, everything else k times, in order: copy 0, copy 1, ...
    ev_a, ev_b = non_meta(a), non_meta(b)
    meta_a = [e for e in a["traceEvents"] if e.get("ph") == "M"]
    assert [e for e in b["traceEvents"] if e.get("ph") == "M"] == meta_a
    assert len(ev_b) == k * len(ev_a)
    assert info.events_out == len(b["traceEvents"]) == len(meta_a) + k * len(ev_a)
    # the shift is the span rounded up to the next whole microsecond
    span = max(end(e) for e in ev_a) - min(Decimal(e["ts"]) for e in ev_a)
    assert span == Decimal("199.999")  # from T0 to the memcpy's end, T0 + 190 + 9.999
    assert info.shift_us == 200
    n = len(ev_a)
    for c in range(k):
        for orig, copy in zip(ev_a, ev_b[c * n : (c + 1) * n], strict=True):
            # timestamps moved by exactly c * shift, every digit kept; durations kept
            assert copy["ts"] == orig["ts"] + c * info.shift_us
            assert type(copy["ts"]) is type(orig["ts"])
            assert copy.get("dur") == orig.get("dur")
            assert copy["ph"] == orig["ph"] and copy.get("cat") == orig.get("cat")
    # the text itself: the first copy's ns digits are in the file as written
    text = gzip.decompress(dst.read_bytes()) if suffix == ".json.gz" else dst.read_bytes()
    assert b'"ts":1712195495520090.048' in text  # T0 + 2 * 200 + 1.001
    # copies do not overlap
    for c in range(1, k):
        prev, cur = ev_b[(c - 1) * n : c * n], ev_b[c * n : (c + 1) * n]
        assert min(Decimal(e["ts"]) for e in cur) > max(end(e) for e in prev)


def test_enlarge_renumbers_ids_and_steps(tmp_path: Path, enlarge_trace: ModuleType) -> None:
    src = tiny_trace(tmp_path / "src.json.gz")
    k = 3
    enlarge_trace.enlarge(src, tmp_path / "out.json.gz", k)
    ev = non_meta(exact(tmp_path / "out.json.gz"))
    n = len(ev) // k
    copies = [ev[c * n : (c + 1) * n] for c in range(k)]
    # profiler steps continue the numbering: 3,4 | 5,6 | 7,8
    steps = [[e["name"] for e in cp if e["name"].startswith("ProfilerStep#")] for cp in copies]
    assert steps == [
        ["ProfilerStep#3", "ProfilerStep#4"],
        ["ProfilerStep#5", "ProfilerStep#6"],
        ["ProfilerStep#7", "ProfilerStep#8"],
    ]
    seen_corr: set[int] = set()
    seen_ext: set[int] = set()
    for cp in copies:
        runtime = [e for e in cp if e.get("cat") == "cuda_runtime"]
        kernels = [e for e in cp if e.get("cat") == "kernel"]
        flows_s = [e for e in cp if e.get("ph") == "s"]
        flows_f = [e for e in cp if e.get("ph") == "f"]
        corr = [e["args"]["correlation"] for e in runtime]
        # links hold within the copy: launch -> kernel, flow start/finish -> both
        assert [e["args"]["correlation"] for e in kernels] == corr
        assert [e["id"] for e in flows_s] == corr
        assert [e["id"] for e in flows_f] == corr
        ext = [e["args"]["External id"] for e in cp if e.get("cat") == "cpu_op"]
        assert [e["args"]["External id"] for e in kernels] == ext
        assert [e["args"]["External id"] for e in runtime] == ext
        # and are fresh: no id is shared with another copy
        assert seen_corr.isdisjoint(corr) and seen_ext.isdisjoint(ext)
        seen_corr.update(corr)
        seen_ext.update(ext)


def test_enlarge_k1_is_the_same_trace(tmp_path: Path, enlarge_trace: ModuleType) -> None:
    src = tiny_trace(tmp_path / "src.json")
    enlarge_trace.enlarge(src, tmp_path / "one.json", 1)
    a, b = exact(src), exact(tmp_path / "one.json")
    meta = [e for e in a["traceEvents"] if e["ph"] == "M"]
    assert b["traceEvents"] == meta + non_meta(a)


def test_enlarge_cli(tmp_path: Path, enlarge_trace: ModuleType, capsys: Any) -> None:
    src = tiny_trace(tmp_path / "src.json.gz")
    assert enlarge_trace.main([str(src), str(tmp_path / "o.json"), "-k", "2"]) == 0
    assert "copies 200 us apart" in capsys.readouterr().err
    assert len(non_meta(exact(tmp_path / "o.json"))) == 2 * len(non_meta(exact(src)))
    with pytest.raises(ValueError, match="k must be >= 1"):
        enlarge_trace.enlarge(src, tmp_path / "z.json", 0)


def test_bench_write_docs_replaces_only_the_marked_section(tmp_path: Path) -> None:
    bench = load_script("bench")
    doc = tmp_path / "B.md"
    doc.write_text("# B\n\nintro\n\n<!-- bench:start -->\nold\n<!-- bench:end -->\n\nafter\n")
    bench.write_docs(doc, "| new | table |\n")
    assert doc.read_text() == (
        "# B\n\nintro\n\n<!-- bench:start -->\n| new | table |\n<!-- bench:end -->\n\nafter\n"
    )
    (tmp_path / "none.md").write_text("no markers\n")
    with pytest.raises(SystemExit, match="bench:start"):
        bench.write_docs(tmp_path / "none.md", "x")


def test_bench_measure_reads_the_childs_peak_rss_and_failure(tmp_path: Path) -> None:
    bench = load_script("bench")
    grow = "b = bytearray(300 * 2**20); b[::4096] = bytes(len(b[::4096]) * [1])"
    r = bench.measure([sys.executable, "-c", grow], tmp_path)
    assert r.rc == 0 and r.seconds > 0
    assert 300 <= r.peak_rss_mb < 1000  # the child's own high-water mark, not the parent's
    bad = bench.measure([sys.executable, "-c", "import sys; sys.exit('broken: fix me')"], tmp_path)
    assert bad.rc == 1 and bad.err_tail == "broken: fix me"
    missing = bench.measure([str(tmp_path / "no-such-program")], tmp_path)
    assert missing.rc == 127 and "cannot start" in missing.err_tail


def test_bench_measure_does_not_inherit_the_parents_rss(tmp_path: Path) -> None:
    # ru_maxrss survives exec on Linux: a child forked from this (now large) process
    # would report this process's RSS; the launcher keeps the measurement the child's own
    bench = load_script("bench")
    ballast = bytearray(400 * 2**20)
    ballast[::4096] = bytes(len(ballast[::4096]) * [1])
    r = bench.measure([sys.executable, "-c", "pass"], tmp_path)
    assert r.rc == 0 and r.peak_rss_mb < 100
    del ballast


@pytest.mark.parametrize("row", ["analyze-alone", "traceprobe"])
def test_bench_traceprobe_rows_run_on_a_real_trace(tmp_path: Path, row: str) -> None:
    """GIVEN a committed trace WHEN a bench row that runs traceprobe is measured THEN it
    succeeds (the analyze-without-critical-path row patches a traceprobe function, so a
    change of that function's signature would break the row, not the suite)."""
    bench = load_script("bench")
    trace = next((SCRIPTS.parent / "sample_traces" / "h200x2" / "copy").glob("*/*.json.gz"))
    argv = bench.argv_for(row, trace, tmp_path, bench.DEFAULT_TRACEPROBE_CMD)
    r = bench.measure(argv, tmp_path)
    assert r.rc == 0, r.err_tail
