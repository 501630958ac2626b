"""Issue 24's loader findings: each input once silently dropped, misread or crashing is now a
warning (read leniently), a one-line refusal, or read right. Hand-built traces, exact counts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracebuild import TraceBuilder
from traceprobe.cli import cli
from traceprobe.errors import TraceError
from traceprobe.load import pipeline as loader
from traceprobe.report import analyze


def run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def warnings_of(path: Path) -> list[str]:
    return list(loader.load(path).meta.extra.get("warnings", ()))


def base(n: int = 10) -> TraceBuilder:
    t = TraceBuilder()
    t.step(1, ts=0, dur=1000)
    for i in range(n):
        t.kernel(f"k{i}", ts=10 + 50 * i, dur=40)
    return t


def test_a_2021_stream_number_beyond_int64_is_no_crash(tmp_path: Path) -> None:
    """GIVEN a 2021-format kernel whose tid is "stream 99999999999999999999999" THEN it loads
    (the old code: OverflowError, exit 70); the stream is unknown (-1)."""
    doc = {"traceEvents": [
        {"ph": "X", "cat": "Kernel", "name": "k", "pid": 0, "ts": 10, "dur": 5,
         "tid": "stream 99999999999999999999999", "args": {"device": 0, "correlation": 1}},
        {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1,
         "dur": 2, "args": {"correlation": 1}}]}
    p = tmp_path / "t.json"
    p.write_text(json.dumps(doc))
    r = run("analyze", p)
    assert r.exit_code == 0, r.output
    assert loader.load(p).gpu["stream"].tolist() == [-1]


def test_unknown_or_missing_ph_and_missing_cat_are_named(tmp_path: Path) -> None:
    """GIVEN 10 kernels plus one with ph 'Z', two with 'x', one with no ph and one with no cat
    THEN the 10 are analysed and two warnings count the others (old: not a word)."""
    t = base()
    t.add(ph="Z", cat="kernel", name="z", pid=0, tid=7, ts=600, dur=5, args={"device": 0})
    for ts in (610, 620):
        t.add(ph="x", cat="kernel", name="x", pid=0, tid=7, ts=ts, dur=5, args={"device": 0})
    del t.add(cat="kernel", name="n", pid=0, tid=7, ts=630, dur=5, args={})["ph"]
    t.kernel("nocat", ts=640, dur=5)["cat"] = ""
    p = t.write(tmp_path / "t.json")
    w = warnings_of(p)
    assert any(s.startswith("4 event(s) have no ph or one the trace format does not define "
                            "(none 1, 'Z' 1, 'x' 2)") for s in w), w
    assert any(s.startswith("1 complete ('X') event(s) have no cat") for s in w), w
    rep = analyze(loader.load(p))
    assert rep.devices[0].busy_ns == 10 * 40_000
    assert any("have no cat" in s for s in rep.warnings)


def test_known_phases_other_than_x_are_silent(tmp_path: Path) -> None:
    t = base()
    for ph in ("i", "s", "f", "M", "C"):
        t.add(ph=ph, cat="x", name="m", pid=1, tid=1, ts=5)
    assert not any("ph" in s for s in warnings_of(t.write(tmp_path / "t.json")))


def test_device_true_is_unknown_not_gpu_1(tmp_path: Path) -> None:
    """GIVEN args.device true (pid 1) among device-0 kernels THEN it is GPU -1 with a warning,
    as the documented rule says (old: read as GPU 1 by numpy's bool-to-int)."""
    t = base(3)
    e = t.kernel("b", ts=500, dur=5)
    e["pid"], e["args"]["device"] = 1, True
    p = t.write(tmp_path / "t.json")
    tl = loader.load(p)
    assert sorted(set(tl.gpu["device"].tolist())) == [-1, 0]
    assert any("1 GPU activity has no device" in s for s in warnings_of(p))


@pytest.mark.parametrize("value", ["abc", -5, 1e30, True])
def test_copy_bytes_that_are_no_size_are_named(tmp_path: Path, value: Any) -> None:
    t = base(2)
    t.memcpy("Memcpy HtoD (Pinned -> Device)", ts=500, dur=10, bytes=value)
    t.memcpy("Memcpy HtoD (Pinned -> Device)", ts=520, dur=10, bytes=4096)
    p = t.write(tmp_path / "t.json")
    assert any(s.startswith("1 copy or memset has no usable args.bytes") for s in warnings_of(p))
    rep = analyze(loader.load(p)).to_dict()
    (rate,) = rep["copies"]
    assert (rate["copies"], rate["bytes"]) == (2, 4096)


def test_a_rocm_size_taken_from_the_call_is_said(tmp_path: Path) -> None:
    t = base(1)
    t.runtime("hipMemcpyWithStream", ts=400, dur=30, correlation=77, size=8192)
    del t.memcpy("Memcpy HtoD", ts=410, dur=10, correlation=77)["args"]["bytes"]
    p = t.write(tmp_path / "t.json")
    assert any("size from the args.size of the hipMemcpy* call" in s for s in warnings_of(p))
    assert loader.load(p).gpu.query("kind == 'memcpy'")["bytes"].tolist() == [8192]


def steps_trace(tmp_path: Path, extra: list[tuple[int, float, float]]) -> Path:
    t = TraceBuilder()
    for i in range(4):
        t.step(i, ts=100 * i, dur=100)
    for n, ts, dur in extra:
        t.step(n, ts=ts, dur=dur)
    for i in range(20):
        t.kernel("k", ts=5 + 25 * i, dur=10)
    return t.write(tmp_path / "t.json")


@pytest.mark.parametrize(("extra", "warning"), [
    ([(1, 400, 100)], "1 ProfilerStep event(s) repeat a step number (e.g. ProfilerStep#1)"),
    ([(4, 300, 200)], "1 ProfilerStep event(s) start inside another step"),
])
def test_repeated_or_nested_steps_do_not_shrink_the_window(tmp_path: Path, extra: Any,
                                                           warning: str) -> None:
    """GIVEN 4 steps then a 5th that repeats #1 (or starts inside #3) and runs to 500 µs, and
    20 kernels over 0..500 µs THEN the default window covers all 20 (old: 16), with a warning."""
    p = steps_trace(tmp_path, extra)
    rep = analyze(loader.load(p))
    assert (rep.window.start_ns, rep.window.end_ns) == (0, 500_000)
    assert rep.devices[0].busy_ns == 20 * 10_000
    assert any(s.startswith(warning) for s in rep.warnings), rep.warnings


def test_a_span_beyond_int64_is_refused(tmp_path: Path) -> None:
    """GIVEN kernels at -9.2e15 and +9.2e15 µs (each inside the range) THEN exit 3, one line
    (old: a negative window and utilization, exit 0)."""
    t = TraceBuilder()
    t.kernel("a", ts=-9.2e15, dur=1)
    t.kernel("b", ts=9.2e15, dur=1)
    p = t.write(tmp_path / "t.json")
    r = run("analyze", p)
    assert r.exit_code == 3 and r.stderr.count("\n") == 1
    assert "more than int64 nanoseconds hold" in r.stderr


def test_an_unreadable_subfolder_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                             ) -> None:
    """GIVEN a folder whose subfolder cannot be listed (os.scandir refuses it: root reads any
    folder, so the refusal is simulated) THEN one error names it (old: skipped silently)."""
    base(1).write(tmp_path / "a.json")
    (tmp_path / "locked").mkdir()
    base(1).write(tmp_path / "locked" / "b.json")
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(TraceError, match="locked: cannot read this folder inside"):
        loader.find_traces(tmp_path)


def test_folders_follow_links_once_and_skip_hidden(tmp_path: Path) -> None:
    base(1).write(tmp_path / "a.json")
    (tmp_path / "sub").mkdir()
    base(1).write(tmp_path / "sub" / "b.json.gz")
    (tmp_path / "sub" / "up").symlink_to(tmp_path)  # a loop
    (tmp_path / ".hidden").mkdir()
    base(1).write(tmp_path / ".hidden" / "c.json")
    (tmp_path / "notes.txt").write_text("x")
    names = [p.relative_to(tmp_path).as_posix() for p in loader.find_traces(tmp_path)]
    assert names == ["a.json", "sub/b.json.gz"]
