"""`traceprobe whatif`: formats, the JSON schema, usage errors and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from traceprobe.cli import cli

REPO = Path(__file__).resolve().parents[2]
SEQ = next((REPO / "sample_traces" / "h200x2" / "two-devices" / "sequential").glob("*.gz"))


def _run(*args: str):
    return CliRunner().invoke(cli, ["whatif", *args])


def test_json_schema_and_prediction(tmp_path):
    out = tmp_path / "w.json"
    r = _run(str(SEQ), "-s", "no-host-sync", "-o", str(out))
    assert r.exit_code == 0, r.output
    d = json.loads(out.read_text())
    assert d["schema"] == "traceprobe.whatif/1"
    assert d["scenarios"] == ["no-host-sync"]
    (w,) = d["windows"]
    assert set(w) >= {"step", "measured_us", "replayed_us", "predicted_us", "speedup",
                      "critical_path"}
    assert w["step"] == 1
    assert w["replayed_us"] == w["measured_us"]
    # the two GPUs' halves (about 130 ms each) overlap: close to half the step
    assert 0.45 < w["predicted_us"] / w["measured_us"] < 0.55
    assert w["speedup"] == w["measured_us"] / w["predicted_us"]
    assert w["critical_path"]["length_us"] == w["predicted_us"]
    # existing output is not overwritten
    again = _run(str(SEQ), "-o", str(out))
    assert again.exit_code == 4


def test_text_and_markdown():
    r = _run(str(SEQ), "-s", "no-host-sync")
    assert r.exit_code == 0
    assert "no-host-sync would save" in r.output and "bound by GPU" in r.output
    m = _run(str(SEQ), "--format", "markdown")
    assert m.exit_code == 0 and m.output.startswith("# what if: no change")


def test_usage_errors():
    r = _run(str(SEQ), "-s", "bogus")
    assert r.exit_code == 2 and "unknown scenario 'bogus'" in r.output
    r = _run(str(SEQ), "--step", "9")
    assert r.exit_code == 2 and "no ProfilerStep#9" in r.output
    r = _run(str(SEQ), "--step", "x")
    assert r.exit_code == 2
    r = _run("/nonexistent/trace.json")
    assert r.exit_code in (2, 3) and "Traceback" not in r.output
