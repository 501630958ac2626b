"""No input makes traceprobe crash, lie or destroy a file (issue 9): one test per finding.

Every input is built here from a tiny hand-made trace or a committed recording; each
test states what a user would see: the exit code (README "Exit codes"), one stderr line
naming the file, or a stated warning in the report, never silent wrong figures.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracebuild import TraceBuilder
from traceprobe.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "sample_traces" / "h200x2" / "two-devices" / "parallel"


def run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def one_line(result: Any, code: int, *words: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    err = result.stderr
    assert "Traceback" not in err and err.count("\n") == 1, repr(err)
    for w in words:
        assert w in err, err
    return err


def small(path: Path, **top: Any) -> Path:
    """Two kernels on GPU 0 and a ProfilerStep around them."""
    t = TraceBuilder(**top)
    t.step(1, ts=0, dur=100)
    t.kernel("a", ts=10, dur=20)
    t.kernel("b", ts=40, dur=20)
    return t.write(path)


def write(path: Path, events: list[dict], **top: Any) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, **top, "traceEvents": events}))
    return path


def report(path: Path, *extra: Any) -> tuple[dict, str]:
    r = run("analyze", path, "-f", "json", *extra)
    assert r.exit_code == 0, r.stderr
    return json.loads(r.stdout), r.stderr


def kernel(ts: Any, dur: Any = 10, **args: Any) -> dict:
    return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": {"device": 0, "stream": 7, **args}}


# --------------------------------------------------------------------------- data loss


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_analyze_never_writes_over_its_input(tmp_path, how):
    trace = small(tmp_path / "t.json")
    before = trace.read_bytes()
    names = {"same": trace.name, "symlink": "link.json", "hardlink": "hard.json"}
    out = tmp_path / names[how]
    if how == "symlink":
        out.symlink_to(trace)
    elif how == "hardlink":
        os.link(trace, out)
    one_line(run("analyze", trace, "-o", out, "--force"), 4, "is an input")
    assert trace.read_bytes() == before


def test_compare_and_verify_never_write_over_an_input(tmp_path):
    a, b = small(tmp_path / "a.json"), small(tmp_path / "b.json")
    before = b.read_bytes()
    one_line(run("compare", a, b, "-o", b, "--force"), 4, "is an input")
    assert b.read_bytes() == before
    rec = tmp_path / "rec"
    shutil.copytree(SAMPLE.parent, rec / "two-devices")
    trace = next((rec / "two-devices" / "parallel").glob("*.json.gz"))
    before = trace.read_bytes()
    one_line(run("verify", rec, "-o", trace, "--force"), 4, "is an input")
    assert trace.read_bytes() == before


def test_tensorboard_output_is_checked_before_loading(tmp_path):
    # GIVEN scalars already beside a trace that cannot even be read
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    (tmp_path / "traceprobe").mkdir()
    (tmp_path / "traceprobe" / "events.out.tfevents.1.host.1.traceprobe").write_bytes(b"x")
    # THEN the output is refused first (exit 4), before the trace is read (which would be 3)
    one_line(run("analyze", bad, "--tensorboard"), 4, "already holds traceprobe scalars")


# --------------------------------------------------------------------------- one-line errors


@pytest.mark.parametrize("value", [1e30, "1e30", 9.3e15, -1e300])
def test_huge_timestamps_are_one_line_errors(tmp_path, value):
    path = write(tmp_path / "t.json", [kernel(1), kernel(value)])
    one_line(run("analyze", path), 3, str(path), "out-of-range ts")


def test_an_end_past_int64_is_a_one_line_error(tmp_path):
    path = write(tmp_path / "t.json", [kernel(1), kernel(9_000_000_000_000_000, 1e15)])
    one_line(run("analyze", path), 3, str(path), "int64")


@pytest.mark.parametrize("where", ["args", "unknown", "deviceProperties"])
def test_deep_nesting_is_a_one_line_error(tmp_path, where):
    deep = "[" * 100_000 + "]" * 100_000
    ev = '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1'
    if where == "args":
        text = '{"traceEvents":[' + ev + ',"args":{"x":' + deep + "}}]}"
    elif where == "unknown":
        text = '{"traceEvents":[' + ev + ',"extra":' + deep + "}]}"
    else:
        text = '{"deviceProperties":' + deep + ',"traceEvents":[' + ev + "}]}"
    path = tmp_path / "deep.json"
    path.write_text(text)
    one_line(run("analyze", path), 3, str(path), "nested too deeply")


def test_list_valued_args_are_not_devices(tmp_path):
    # GIVEN kernels whose device, stream and correlation are lists
    path = write(tmp_path / "t.json", [kernel(1, device=[0, 1], stream=[7], correlation=[1]),
                                       kernel(20)])
    r, err = report(path)
    # THEN the list is no device (GPU -1, with a warning: not a guess from pid), the other
    # kernel stays on GPU 0
    assert sorted(d["device"] for d in r["devices"]) == [-1, 0]
    assert any("no device" in w for w in r["warnings"]) and "no device" in err


def test_odd_top_level_values_are_ignored_not_fatal(tmp_path):
    path = write(tmp_path / "t.json", [kernel(1)], deviceProperties=5)
    r, _ = report(path)
    assert r["devices"][0]["busy_us"] == 10.0


def test_a_huge_step_number_is_no_step(tmp_path):
    step = {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#99999999999999999999",
            "pid": 1, "tid": 1, "ts": 0, "dur": 50}
    path = write(tmp_path / "t.json", [step, kernel(1)])
    r, _ = report(path)
    assert r["counts"]["steps"] == 0 and r["window"]["basis"] == "events"


def test_the_same_trace_twice_with_tensorboard(tmp_path):
    pytest.importorskip("tensorboard")
    trace = small(tmp_path / "t.json")
    r = run("analyze", trace, trace, "--tensorboard", "-o", tmp_path / "r.txt")
    assert r.exit_code == 0, r.stderr


def test_verify_metadata_of_the_wrong_shape(tmp_path):
    rec = tmp_path / "rec" / "w" / "v"
    rec.mkdir(parents=True)
    (rec / "traceprobe.meta.jsonc").write_text('{"traces": 5}')
    one_line(run("verify", tmp_path / "rec"), 3, "traceprobe.meta.jsonc", "not a list")


def test_stdout_on_a_full_disk_is_one_line_exit_4(tmp_path):
    trace = small(tmp_path / "t.json")
    with open("/dev/full", "w") as full:
        p = subprocess.run([sys.executable, "-m", "traceprobe.cli", "analyze", str(trace)],
                           stdout=full, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert p.returncode == 4, p.stderr
    assert "Traceback" not in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_a_path_component_over_255_bytes(tmp_path):
    trace = small(tmp_path / "t.json")
    long = tmp_path / ("x" * 300 + ".json")
    one_line(run("analyze", trace, "-o", long), 4, "over 255 bytes")
    one_line(run("analyze", long), 3)


# --------------------------------------------------------------------------- no silent lies


def test_missing_or_null_dur_is_stated(tmp_path):
    evs = [kernel(1), kernel(20)]
    del evs[0]["dur"]
    evs[1]["dur"] = None
    r, err = report(write(tmp_path / "t.json", evs))
    assert any("2 complete ('X') event(s) have no dur" in w for w in r["warnings"])
    assert "have no dur" in err


def test_negative_dur_is_stated(tmp_path):
    r, _ = report(write(tmp_path / "t.json", [kernel(1, -5), kernel(20)]))
    assert any("1 event(s) have a negative dur" in w for w in r["warnings"])


def test_a_stray_timestamp_is_stated(tmp_path):
    # GIVEN epoch-scale kernels and one at ts 0 (no steps, no profiler span)
    r, _ = report(write(tmp_path / "t.json", [kernel(0), kernel(1.7e15), kernel(1.7e15 + 20)]))
    # THEN the report says the window is mostly one empty gap
    assert any("stray timestamp" in w for w in r["warnings"])


def test_begin_end_kernels_are_stated(tmp_path):
    be = [{"ph": ph, "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts,
           "args": {"device": 0, "stream": 7}} for ph, ts in (("B", 1), ("E", 9))]
    r, _ = report(write(tmp_path / "t.json", [*be, kernel(20)]))
    assert any("2 begin/end ('B'/'E') event(s) are not analysed" in w for w in r["warnings"])


def test_a_folder_takes_every_json_trace(tmp_path):
    small(tmp_path / "w.1.pt.trace.json")
    small(tmp_path / "rank1.json")
    r = run("analyze", tmp_path, "-f", "json")
    assert r.exit_code == 0, r.stderr
    assert len(json.loads(r.stdout)["traces"]) == 2


def test_a_device_the_trace_lacks_is_a_usage_error(tmp_path):
    trace = small(tmp_path / "t.json")
    one_line(run("analyze", trace, "--device", 99), 2, "no GPU 99", "GPUs in the trace: 0")


def test_a_fractional_device_is_not_rounded_into_another(tmp_path):
    path = write(tmp_path / "t.json", [kernel(1, device=0.9), kernel(20, device=1)])
    r, _ = report(path)
    assert sorted(d["device"] for d in r["devices"]) == [-1, 1]
    assert any("no device" in w for w in r["warnings"])


@pytest.mark.parametrize("n", [2, 30_000])
def test_a_duplicate_trace_events_key_is_refused(tmp_path, n):
    events = json.dumps([kernel(i * 20) for i in range(n)])
    path = tmp_path / "dup.json"
    second = json.dumps(kernel(5))
    path.write_text('{"traceEvents": ' + events + ', "traceEvents": [' + second + "]}")
    one_line(run("analyze", path), 3, str(path), '"traceEvents" appears 2 times')


def test_the_window_is_the_profiled_steps(tmp_path):
    # GIVEN an annotation long after the last step, and start-up before the first
    t = TraceBuilder()
    t.cpu("overhead", "Activity Buffer Request", ts=0, dur=2000)
    t.step(1, ts=3000, dur=100)
    t.kernel("a", ts=3010, dur=50)
    t.cpu("user_annotation", "late", ts=3050, dur=13_000_000)
    r, _ = report(t.write(tmp_path / "t.json"))
    # THEN the window is the step, and says so
    assert r["window"]["basis"] == "steps"
    assert (r["window"]["start_us"], r["window"]["end_us"]) == (3000.0, 3100.0)
    assert r["devices"][0]["utilization"] == pytest.approx(0.5)


def test_without_steps_the_window_is_the_profiler_span(tmp_path):
    t = TraceBuilder()
    t.cpu("overhead", "Activity Buffer Request", ts=0, dur=2000)
    t.add(cat="Trace", name="PyTorch Profiler", pid=1, tid=1, ts=0, dur=3200)
    t.kernel("a", ts=3000, dur=100)
    t.cpu("user_annotation", "after stop", ts=3050, dur=13_000_000)
    r, _ = report(t.write(tmp_path / "t.json"))
    assert r["window"]["basis"] == "profiler"
    assert (r["window"]["start_us"], r["window"]["end_us"]) == (3000.0, 3200.0)
    assert r["devices"][0]["utilization"] == pytest.approx(0.5)


# --------------------------------------------------------------------------- diagnosis


def test_a_cut_inside_a_number_is_salvaged_not_malformed(tmp_path):
    text = json.dumps({"traceEvents": [kernel(1), kernel(20)]})
    path = tmp_path / "cut.json"
    path.write_text(text[: text.rindex('"ts": 20') + 7])  # ends with `"ts": 2`
    r, err = report(path)
    assert r["salvaged"]["events_kept"] == 1 and "cut short" in err


def test_a_symlink_loop_says_so(tmp_path):
    loop = tmp_path / "loop.json"
    loop.symlink_to(tmp_path / "loop.json")
    one_line(run("analyze", loop), 3, "loop of symbolic links")


def test_output_under_a_file_says_so(tmp_path):
    trace = small(tmp_path / "t.json")
    one_line(run("analyze", trace, "-o", trace / "out.json"), 4, "is a file, not a directory")


def test_verify_a_file_says_so(tmp_path):
    trace = small(tmp_path / "t.json")
    one_line(run("verify", trace), 2, "is a file")


def test_control_characters_in_names_are_read(tmp_path):
    text = json.dumps({"traceEvents": [kernel(1)]}).replace('"name": "k"', '"name": "k\x01\x1b"')
    path = tmp_path / "ctl.json"
    path.write_text(text)
    r, _ = report(path)
    assert r["counts"]["kernels"] == 1
    assert any("control characters" in w for w in r["warnings"])


# --------------------------------------------------------------------------- salvage, folders


def test_salvage_is_a_notice_a_headline_and_json(tmp_path):
    raw = gzip.decompress(next(SAMPLE.glob("*.json.gz")).read_bytes())
    path = tmp_path / "killed.json"
    path.write_bytes(raw[: len(raw) // 2])
    r, err = report(path)
    kept = r["salvaged"]["events_kept"]
    assert err.count("\n") == 1 and f"analysing the {kept:,} complete events" in err
    assert r["headlines"][0].startswith("The trace was cut short")
    one_line(run("analyze", path, "--strict"), 3, str(path), "drop --strict")


def test_one_bad_file_in_a_folder(tmp_path):
    small(tmp_path / "rank0.json")
    small(tmp_path / "rank1.json")
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    # THEN the good files are reported, one line names the bad one, exit 3 (CI notices)
    r = run("analyze", tmp_path, "-f", "json")
    assert r.exit_code == 3 and r.stderr.count("\n") == 1 and "config.json" in r.stderr
    assert len(json.loads(r.stdout)["traces"]) == 2
    # AND --skip-bad makes it exit 0, still naming the file
    r = run("analyze", tmp_path, "-f", "json", "--skip-bad")
    assert r.exit_code == 0 and "config.json" in r.stderr


# --------------------------------------------------------------------------- HTA


def test_hta_reads_a_recorded_folder_as_its_traces():
    """HTA takes every *.json and *.gz of a folder as a rank's trace: record's metadata
    must not be one of them (it used to displace rank 0's real trace)."""
    pytest.importorskip("hta")
    names = [n for n in os.listdir(SAMPLE) if n.endswith((".json", ".gz"))]
    assert names == [next(SAMPLE.glob("*.pt.trace.json.gz")).name]
    from traceprobe.hta_bridge import _quiet

    with _quiet():
        from hta.trace_analysis import TraceAnalysis

        analysis = TraceAnalysis(trace_dir=str(SAMPLE))
    from traceprobe.load import load

    kernels = len(load(next(SAMPLE.glob("*.json.gz"))).kernels)
    df = analysis.t.get_trace(0)
    assert int((df["cat"] == analysis.t.symbol_table.sym_index["kernel"]).sum()) == kernels


def test_hta_failing_keeps_the_report(tmp_path, monkeypatch):
    pytest.importorskip("hta")
    import hta.trace_analysis

    class Broken:
        def __init__(self, trace_dir: str) -> None:
            raise AssertionError("HTA could not parse")

    monkeypatch.setattr(hta.trace_analysis, "TraceAnalysis", Broken)
    trace = small(tmp_path / "t.json")
    r = run("analyze", trace, "--hta", "-f", "json")
    assert r.exit_code == 0, r.stderr
    d = json.loads(r.stdout)
    assert "HTA could not parse" in d["hta"]["error"] and d["devices"]
    assert "warning" in r.stderr and str(trace) in r.stderr


def test_compare_and_check_say_a_trace_was_salvaged(tmp_path):
    raw = gzip.decompress(next(SAMPLE.glob("*.json.gz")).read_bytes())
    cut = tmp_path / "killed.json"
    cut.write_bytes(raw[: len(raw) // 2])
    whole = tmp_path / "whole.json"
    whole.write_bytes(raw)
    r = run("compare", whole, cut)
    assert r.exit_code == 0 and "notice" in r.stderr and str(cut) in r.stderr
    r = run("check", cut, "--expect", "kernels >= 0")
    assert "notice" in r.stderr and str(cut) in r.stderr, r.stderr
