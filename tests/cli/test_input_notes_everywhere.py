"""Every command that reads a trace says when it salvaged it or read it leniently, in every
output format (issue 24): analyze (text, Markdown, HTML, JSON), whatif, compare, verify,
annotate."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracebuild import TraceBuilder
from traceprobe.cli import cli

REPO = Path(__file__).resolve().parents[2]
WARNING = "1 event(s) have no ph or one the trace format does not define"


def run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def lenient(tmp_path: Path, name: str = "t.json") -> Path:
    t = TraceBuilder()
    t.step(1, ts=0, dur=100)
    t.launch("gemm", cpu_ts=1, cpu_dur=2, gpu_ts=5, gpu_dur=40)
    t.add(ph="Z", cat="kernel", name="z", pid=0, tid=7, ts=50, dur=1, args={})
    return t.write(tmp_path / name)


def stray(tmp_path: Path) -> Path:
    """A report-level warning (a stray timestamp), not the loader's."""
    t = TraceBuilder()
    t.kernel("early", ts=0, dur=10)
    for i in range(5):
        t.kernel("k", ts=5e6 + 100 * i, dur=50)
    return t.write(tmp_path / "stray.json")


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_analyze_says_it_in_every_format(tmp_path: Path, fmt: str) -> None:
    for p, words in ((lenient(tmp_path), WARNING), (stray(tmp_path), "stray timestamp")):
        r = run("analyze", p, "-f", fmt)
        assert r.exit_code == 0, r.output
        assert words in r.stdout, (fmt, p.name)


def test_whatif_says_it(tmp_path: Path) -> None:
    p = lenient(tmp_path)
    for fmt in ("text", "markdown", "json"):
        r = run("whatif", p, "-f", fmt)
        assert r.exit_code == 0 and WARNING in r.stdout, fmt
        assert f"traceprobe: warning: {p}: {WARNING}" in r.stderr


def test_compare_says_it(tmp_path: Path) -> None:
    a, b = lenient(tmp_path, "a.json"), lenient(tmp_path, "b.json")
    assert "A read leniently: " + WARNING in run("compare", a, b).stdout
    d = json.loads(run("compare", a, b, "-f", "json").stdout)
    assert any(w.startswith(WARNING) for w in d["b"]["warnings"])


def test_annotate_says_it(tmp_path: Path) -> None:
    p = lenient(tmp_path)
    r = run("annotate", p, "-o", tmp_path / "out.json")
    assert r.exit_code == 0 and f"traceprobe: warning: {p}: {WARNING}" in r.stderr


def test_verify_says_a_cut_short_trace(tmp_path: Path) -> None:
    """GIVEN a recorded variant whose trace is cut short THEN its verdict carries a notice in
    text, Markdown and JSON, and stderr says it (old: "holds" became "cannot tell" silently)."""
    src = REPO / "sample_traces" / "cpu" / "copy" / "blocking"
    rec = tmp_path / "rec" / "copy" / "blocking"
    shutil.copytree(src, rec)
    (trace,) = rec.glob("*.pt.trace.json.gz")
    raw = gzip.decompress(trace.read_bytes())
    trace.write_bytes(gzip.compress(raw[: int(len(raw) * 0.8)]))
    for fmt in ("text", "markdown", "json"):
        r = run("verify", tmp_path / "rec", "-f", fmt)
        assert r.exit_code == 0, r.output
        assert "cut short" in r.stdout or "ends mid-document" in r.stdout, fmt
        assert "traceprobe: notice: " in r.stderr
    d = json.loads(run("verify", tmp_path / "rec", "-f", "json").stdout)
    (v,) = d["verdicts"]
    assert v["notices"][0].startswith(f"notice: {trace}")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_check_says_it_in_its_output(tmp_path: Path, fmt: str) -> None:
    p = lenient(tmp_path)
    r = run("check", p, "-e", "kernels >= 1", "-f", fmt)
    assert r.exit_code == 0, r.output
    if fmt == "json":
        notes = json.loads(r.stdout)["traces"][0]["input_notes"]
        assert any(WARNING in n for n in notes)
    else:
        assert WARNING in r.stdout
    assert f"traceprobe: warning: {p}: {WARNING}" in r.stderr
