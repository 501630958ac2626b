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
    r = _run(str(SEQ), "-s", "no-host-sync", "--keep-profiler", "-o", str(out))
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
    r = _run(str(SEQ), "-s", "no-host-sync", "--keep-profiler")
    assert r.exit_code == 0
    assert "no-host-sync would save" in r.output and "bound by GPU" in r.output
    m = _run(str(SEQ), "--format", "markdown", "--keep-profiler")
    assert m.exit_code == 0 and m.output.startswith("# what if: no change")


def test_the_default_predicts_the_unprofiled_loop(tmp_path):
    """GIVEN no --keep-profiler THEN no-profiler (estimated) comes first and a note says so;
    the prediction is the library's under the same scenarios; a no-profiler:NS of one's own
    replaces the default; --keep-profiler keeps the profiled host."""
    from traceprobe.graph import whatif
    from traceprobe.load import load

    out = tmp_path / "w.json"
    assert _run(str(SEQ), "-s", "no-host-sync", "-o", str(out)).exit_code == 0
    d = json.loads(out.read_text())
    assert d["scenarios"] == ["no-host-sync"] and d["baseline"] == ["no-profiler"]
    assert any(n.startswith("no-profiler applied to both sides by default") for n in d["notes"])
    assert any("estimated from the trace" in n for n in d["notes"])
    lib = whatif(load(SEQ), ["no-profiler", "no-host-sync"])
    assert d["windows"][0]["predicted_us"] == lib.windows[0].predicted_us
    # the base is the profiler-free replay too: the speedup is the change's alone
    null = whatif(load(SEQ), ["no-profiler"])
    w = d["windows"][0]
    assert w["period_us"] == null.windows[0].predicted_period_us
    assert w["speedup"] == null.windows[0].predicted_period_us / w["predicted_period_us"]
    assert w["period_us"] < lib.windows[0].period_us  # the profiled period is not the base
    own = tmp_path / "own.json"
    assert _run(str(SEQ), "-s", "no-profiler:100", "-o", str(own)).exit_code == 0
    d = json.loads(own.read_text())
    assert d["scenarios"] == ["no-profiler:100"] and d["baseline"] == []
    assert not any("by default" in n for n in d["notes"])
    r = _run(str(SEQ), "--keep-profiler", "-f", "json")
    assert json.loads(r.output)["scenarios"] == [] and json.loads(r.output)["baseline"] == []
    assert "--keep-profiler" in _run("--help").output


def test_usage_errors():
    r = _run(str(SEQ), "-s", "bogus")
    assert r.exit_code == 2 and "unknown scenario 'bogus'" in r.output
    r = _run(str(SEQ), "--step", "9")
    assert r.exit_code == 2 and "no ProfilerStep#9" in r.output
    r = _run(str(SEQ), "--step", "x")
    assert r.exit_code == 2
    r = _run("/nonexistent/trace.json")
    assert r.exit_code in (2, 3) and "Traceback" not in r.output


def test_json_is_written_in_pieces_as_json_dumps_writes_it(tmp_path):
    """GIVEN the JSON written a piece at a time (whatif.py's _batches; --step all's is
    ~30 MB on the benchmark trace) THEN the file is, byte for byte, json.dumps of its own
    content (indent 2, non-ASCII kept) and a newline, to stdout too; and pieces of any size
    join to the text."""
    from traceprobe.cli.whatif import _batches

    out = tmp_path / "w.json"
    assert _run(str(SEQ), "-s", "no-host-sync", "-o", str(out)).exit_code == 0
    text = out.read_text(encoding="utf-8")
    assert text == json.dumps(json.loads(text), indent=2, ensure_ascii=False) + "\n"
    assert _run(str(SEQ), "-s", "no-host-sync", "-f", "json").output == text
    parts = [["a", "bé", "", "cd" * 5], ["\n"]]
    for size in (1, 3, 100):
        got = list(_batches(parts, size))
        assert b"".join(got).decode() == "abé" + "cd" * 5 + "\n"
        assert all(len(p.decode()) < size + 10 for p in got)
