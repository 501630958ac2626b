"""Issue 24, injection and format: what a trace or a file name holds cannot drive a terminal,
a spreadsheet or the shape of an error message; SIGTERM leaves no half-written output."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from tracebuild import TraceBuilder
from traceprobe.cli import cli

ESCAPES = "\x1b[2J\x1b]0;owned\x07"
BAD = ["\x00", "\x07", "\x1b", "\x9b", "\r", "\u202e"]


def run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def hostile(tmp_path: Path) -> Path:
    t = TraceBuilder()
    t.step(1, ts=0, dur=200)
    for i, name in enumerate([f"gemm{ESCAPES}", "=cmd|' /C calc'!A0", "+1", "-x", "@y",
                              "rtl\u202eevil\r\x9b"]):
        t.launch(name, cpu_ts=1 + i, cpu_dur=1, gpu_ts=10 + 20 * i, gpu_dur=10)
    t.op(f"aten::mm{ESCAPES}", ts=1, dur=50)
    return t.write(tmp_path / "t.json")


def test_no_escape_reaches_a_human_format(tmp_path: Path) -> None:
    p = hostile(tmp_path)
    for fmt in ("text", "markdown", "html"):
        out = run("analyze", p, "-f", fmt).stdout
        assert "gemm\\u001b[2J\\u001b]0;owned\\u0007" in out, fmt
        assert not any(c in out for c in BAD), fmt
    for cmd in (("whatif", p), ("compare", p, p)):
        out = run(*cmd).stdout
        assert not any(c in out for c in BAD), cmd


def test_json_keeps_the_names_exactly(tmp_path: Path) -> None:
    p = hostile(tmp_path)
    names = {k["name"] for k in json.loads(run("analyze", p, "-f", "json").stdout)["top_kernels"]}
    assert f"gemm{ESCAPES}" in names and "rtl\u202eevil\r\x9b" in names


def test_csv_cells_are_never_formulas(tmp_path: Path) -> None:
    p = hostile(tmp_path)
    out = tmp_path / "csv"
    assert run("analyze", p, "--csv", out).exit_code == 0
    with open(out / "gpu.csv", newline="", encoding="utf-8") as f:
        names = [row["name"] for row in csv.DictReader(f)]
    assert "'=cmd|' /C calc'!A0" in names and "'+1" in names and "'-x" in names
    assert "'@y" in names
    assert not any(n[:1] in "=+-@" for n in names)
    assert not any(c in (out / "gpu.csv").read_text(encoding="utf-8") for c in BAD)


def test_a_file_name_with_a_newline_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "a\ntraceprobe: error: forged"
    r = run("analyze", bad)
    assert r.exit_code == 3 and r.stderr.count("\n") == 1, r.stderr
    assert "\\u000atraceprobe: error: forged" in r.stderr


def test_click_usage_errors_are_one_traceprobe_line() -> None:
    for args in (["analyze", "--bogus"], ["analyze"], ["nope"], ["whatif", "x", "--step"]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2, (args, r.output)
        assert r.stderr.startswith("traceprobe: error: ") and r.stderr.count("\n") == 1, r.stderr
        assert "--help'." in r.stderr


def test_sigterm_while_writing_csv_leaves_nothing(tmp_path: Path) -> None:
    """GIVEN SIGTERM arrives while the CSV files are written THEN exit 143 and neither the
    folder nor a hidden scratch folder (.frames.*.tmp) is left."""
    p = hostile(tmp_path)
    out = tmp_path / "frames"
    code = textwrap.dedent(f"""
        import os, signal, sys
        import pandas as pd
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        real, calls = pd.DataFrame.to_csv, []
        def to_csv(self, *a, **k):
            calls.append(1)
            if len(calls) == 3:
                os.kill(os.getpid(), signal.SIGTERM)
            return real(self, *a, **k)
        pd.DataFrame.to_csv = to_csv
        from traceprobe.cli import main
        sys.exit(main(["analyze", {str(p)!r}, "--csv", {str(out)!r}]))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 143, r.stderr
    assert not out.exists()
    assert not [q.name for q in tmp_path.iterdir() if q.name.startswith(".")]
