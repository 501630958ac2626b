"""`traceprobe analyze`, in-process: exit codes, output, files, and bad input.

The tiny trace (``tiny_trace``) has figures worked out by hand below; the
corpus tests run on third-party traces in ../shared/corpus/hta (skipped where
that folder is absent).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from tracebuild import TraceBuilder  # tests/tracebuild.py
from traceprobe.cli import COMMANDS, cli, main
from traceprobe.render.csv import FILES

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "hta"  # beside the checkout


def run(*args: Any) -> Any:
    """Invoke the CLI in-process; returns click's Result (stdout, stderr apart)."""
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def assert_one_line_error(result: Any, code: int, *names: str) -> str:
    """THEN exit ``code``, and stderr is one line: ``traceprobe: error: ...`` naming ``names``."""
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    err = result.stderr
    assert "Traceback" not in err and "Traceback" not in result.stdout
    assert err.endswith("\n") and err.count("\n") == 1, repr(err)
    assert err.startswith("traceprobe: error: "), err
    for name in names:
        assert name in err, (name, err)
    assert result.stdout == ""
    return err


# ----------------------------------------------------------------------------- help


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_with_an_example(name):
    """GIVEN each registered command WHEN asking for --help THEN it explains itself with an
    Example block (commands whose module is not written yet are skipped)."""
    module = COMMANDS[name][0]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not written yet")
    command = cli.get_command(click.Context(cli), name)
    assert command is not None and command.help, name
    assert "Example:" in command.help, name
    result = run(name, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout


def test_analyze_help_documents_exit_codes():
    out = run("analyze", "--help").stdout
    assert "traceprobe analyze run.pt.trace.json.gz" in out
    for code in ("0  the report was written", "3  a trace could not be read",
                 "4  the output exists (use --force)"):
        assert code in out
    for option in ("--format [text|json|markdown|html]", "--output FILE", "--force", "--step N|all",
                   "--device D", "--csv DIR", "--jobs N", "--top N"):
        assert option in out, option


def test_top_level_help_lists_analyze():
    result = run("--help")
    assert result.exit_code == 0 and "analyze" in result.stdout


# ----------------------------------------------------------------------------- the tiny trace
#
# GPU 0, stream 7:   A [10, 20)  B [30, 40)          launched at 0 and 3
# GPU 0, stream 20:  HtoD copy [15, 25), 4096 bytes
# GPU 1, stream 7:   C [15, 35)                      launched at 6
# host:              three 2 µs cudaLaunchKernel, cudaDeviceSynchronize [8, 42)
#
# window [0, 42) µs: span 42. GPU 0 busy [10, 25) ∪ [30, 40) = 25 µs, idle 17;
# GPU 1 busy 20, idle 22. Both busy [15, 25) ∪ [30, 35) = 15 µs; either [10, 40) = 30.
# Copy [15, 25) under kernel A [10, 20): hidden 5, exposed 5.
# Launch latency 10, 27, 9 µs: mean 46/3, p50 10, max 27.
# Serial: streams 20 + 10 + 20 = 50 µs of work in a 30 µs GPU span: 5/3.


def tiny_trace(path: Path, rank: int | None = None) -> Path:
    t = TraceBuilder(**({"distributedInfo": {"rank": rank, "world_size": 2}}
                        if rank is not None else {}))
    t.device_properties(0, 1)
    t.launch("A", cpu_ts=0, cpu_dur=2, gpu_ts=10, gpu_dur=10, device=0, stream=7)
    t.launch("B", cpu_ts=3, cpu_dur=2, gpu_ts=30, gpu_dur=10, device=0, stream=7)
    t.memcpy("Memcpy HtoD (Pinned -> Device)", ts=15, dur=10, device=0, stream=20, bytes=4096)
    t.launch("C", cpu_ts=6, cpu_dur=2, gpu_ts=15, gpu_dur=20, device=1, stream=7)
    t.runtime("cudaDeviceSynchronize", ts=8, dur=34)
    return t.write(path)


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    return tiny_trace(tmp_path / "tiny.pt.trace.json.gz")


needs_loader = pytest.mark.skipif(
    importlib.util.find_spec("traceprobe.load.pipeline") is None
    or importlib.util.find_spec("traceprobe.report") is None,
    reason="traceprobe.load.pipeline / traceprobe.report are not written yet",
)


@needs_loader
def test_json_figures_of_the_tiny_trace(tiny):
    """GIVEN the tiny trace WHEN analysed as JSON THEN the hand-worked figures come out."""
    result = run("analyze", tiny, "--format", "json")
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    r = json.loads(result.stdout)
    assert r["schema"] == "traceprobe.report/1" and r["trace"] == str(tiny)
    assert r["span_us"] == 42.0 and r["gpu_span_us"] == 30.0
    assert r["counts"]["kernels"] == 3 and r["counts"]["memcpys"] == 1
    dev = {d["device"]: d for d in r["devices"]}
    assert (dev[0]["busy_us"], dev[0]["idle_us"]) == (25.0, 17.0)
    assert (dev[1]["busy_us"], dev[1]["idle_us"]) == (20.0, 22.0)
    assert dev[0]["utilization"] == pytest.approx(25 / 42)
    pair = r["overlap"]["cross_device"][0]
    assert (pair["devices"], pair["overlap_us"], pair["either_us"]) == ([0, 1], 15.0, 30.0)
    assert pair["fraction_of_min"] == 0.75
    copy_all = next(c for c in r["overlap"]["copy_compute"]
                    if c["device"] == 0 and c["direction"] == "all")
    assert (copy_all["memcpy_us"], copy_all["hidden_us"], copy_all["exposed_us"]) == (10, 5, 5)
    assert copy_all["bytes"] == 4096
    lat = r["host"]["launch_latency"]
    assert lat["count"] == 3 and lat["mean_us"] == pytest.approx(46 / 3)
    assert (lat["p50_us"], lat["max_us"]) == (10.0, 27.0)
    assert r["serial"]["serial_us"] == 50.0
    assert r["serial"]["speedup_vs_span"] == pytest.approx(5 / 3)


@needs_loader
def test_text_report_of_the_tiny_trace(tiny):
    result = run("analyze", tiny)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith(f"traceprobe: {tiny}\n")
    assert "\x1b[" not in out  # not a terminal: no colour
    assert "window: whole trace, 42.0 µs long; GPU activity spans 30.0 µs" in out
    assert "  0 & 1    15.0 µs      30.0 µs      50.0%             75.0%" in out


@needs_loader
def test_colour_only_on_a_terminal(tiny, tmp_path, monkeypatch):
    """GIVEN stdout is a colour terminal THEN text is coloured there, and never in a file."""
    from traceprobe.cli import analyze as command

    monkeypatch.setattr(command, "_color_terminal", lambda: True)
    assert "\x1b[1m" in run("analyze", tiny).stdout
    assert "\x1b[" not in run("analyze", tiny, "-f", "json").stdout
    out = tmp_path / "r.txt"
    assert run("analyze", tiny, "-o", out).exit_code == 0
    assert "\x1b[" not in out.read_text(encoding="utf-8")


@needs_loader
def test_markdown_and_format_from_output_suffix(tiny, tmp_path):
    md = tmp_path / "r.md"
    js = tmp_path / "r.json"
    assert run("analyze", tiny, "-o", md).exit_code == 0
    assert run("analyze", tiny, "-o", js).exit_code == 0
    assert md.read_text(encoding="utf-8").startswith(f"## traceprobe: `{tiny}`")
    assert json.loads(js.read_text())["span_us"] == 42.0
    txt = tmp_path / "r.txt"
    assert run("analyze", tiny, "-o", txt, "--format", "json").exit_code == 0
    assert json.loads(txt.read_text())["span_us"] == 42.0  # --format wins over the suffix


@needs_loader
def test_device_and_top(tiny):
    result = run("analyze", tiny, "-f", "json", "--device", "1", "--top", "1")
    r = json.loads(result.stdout)
    assert [d["device"] for d in r["devices"]] == [1]
    assert [k["name"] for k in r["top_kernels"]] == ["C"]


@needs_loader
def test_steps(tmp_path):
    """GIVEN two ProfilerSteps WHEN --step 2 THEN the window is that step's; --step all adds
    one object per step."""
    t = TraceBuilder()
    t.step(1, ts=0, dur=20)
    t.step(2, ts=20, dur=20)
    t.kernel("k1", ts=5, dur=10)
    t.kernel("k2", ts=22, dur=4)
    path = t.write(tmp_path / "steps.json")
    r = json.loads(run("analyze", path, "-f", "json", "--step", "2").stdout)
    assert r["window"] == {"start_us": 20.0, "end_us": 40.0, "step": 2, "basis": "step",
                           "start_ns": 20_000, "end_ns": 40_000}
    assert r["devices"][0]["busy_us"] == 4.0
    r = json.loads(run("analyze", path, "-f", "json", "--step", "all").stdout)
    assert [s["window"]["step"] for s in r["steps"]] == [1, 2]
    assert [s["devices"][0]["busy_us"] for s in r["steps"]] == [10.0, 4.0]
    assert "Profiler steps" in run("analyze", path, "--step", "all").stdout


@needs_loader
def test_unknown_step_is_a_usage_error(tiny):
    assert_one_line_error(run("analyze", tiny, "--step", "7"), 2, str(tiny), "ProfilerStep#7")


def test_bad_step_value_is_a_usage_error(tiny):
    result = run("analyze", tiny, "--step", "last")
    assert result.exit_code == 2
    assert "'last' is neither a step number nor 'all'" in result.stderr


@needs_loader
def test_several_traces(tiny, tmp_path):
    """GIVEN two files (or their directory) of ranks 0 and 1 of one job THEN one JSON object
    holds both, the job and cross_trace."""
    job = tmp_path / "job"
    job.mkdir()
    tiny = tiny_trace(job / "rank0.pt.trace.json.gz", rank=0)
    other = tiny_trace(job / "rank1.pt.trace.json.gz", rank=1)
    r = json.loads(run("analyze", tiny, other, "-f", "json", "--jobs", "1").stdout)
    assert list(r) == ["schema", "traces", "cross_trace", "runs"]
    assert r["schema"] == "traceprobe.reports/1"  # its own name: not one trace's shape
    assert {t["schema"] for t in r["traces"]} == {"traceprobe.report/1"}
    assert [(x["job"], x["traces"]) for x in r["runs"]] == [(True, [0, 1])]
    assert [t["trace"] for t in r["traces"]] == [str(tiny), str(other)]  # in the order given
    pairs = r["cross_trace"]["pairs"]
    same = next(p for p in pairs if p["a"]["device"] == 0 and p["b"]["device"] == 0)
    assert same["overlap_us"] == 25.0  # identical traces on one clock overlap fully
    from_dir = json.loads(run("analyze", job, "-f", "json").stdout)
    assert len(from_dir["traces"]) == 2
    # the same traces without distributedInfo are separate runs: not compared
    runs = tmp_path / "runs"
    runs.mkdir()
    plain = [tiny_trace(runs / f"w{i}.pt.trace.json.gz") for i in range(2)]
    sep = json.loads(run("analyze", *plain, "-f", "json").stdout)
    assert [x["job"] for x in sep["runs"]] == [False] and sep["cross_trace"]["pairs"] == []
    assert "Across traces" not in run("analyze", *plain).stdout
    text = run("analyze", tiny, other).stdout
    assert text.startswith("traceprobe: 2 traces") and "Across traces" in text
    assert "== [0] " in text and "== [1] " in text
    md = run("analyze", tiny, other, "-f", "markdown").stdout
    assert md.startswith("# traceprobe: 2 traces") and "## Across traces" in md


@needs_loader
def test_same_file_twice_is_one_trace(tiny):
    r = json.loads(run("analyze", tiny, tiny, "-f", "json").stdout)
    assert r["trace"] == str(tiny)


# ----------------------------------------------------------------------------- output files


def test_output_exists_without_force(tiny, tmp_path):
    """GIVEN an existing --output WHEN no --force THEN exit 4 and the file is unchanged."""
    out = tmp_path / "report.txt"
    out.write_text("keep me")
    result = run("analyze", tiny, "--output", out)
    err = assert_one_line_error(result, 4, str(out))
    assert err == (
        f"traceprobe: error: File already exists, will not overwrite without --force: {out}\n"
    )
    assert out.read_text() == "keep me"


@needs_loader
def test_output_with_force_replaces(tiny, tmp_path):
    out = tmp_path / "report.json"
    out.write_text("old")
    result = run("analyze", tiny, "--output", out, "--force")
    assert result.exit_code == 0 and result.stdout == ""
    assert json.loads(out.read_text())["span_us"] == 42.0
    assert sorted(os.listdir(tmp_path)) == ["report.json", "tiny.pt.trace.json.gz"]


def test_output_into_missing_directory(tiny, tmp_path):
    result = run("analyze", tiny, "-o", tmp_path / "no" / "r.txt")
    assert_one_line_error(result, 4, "does not exist; create it first")


@needs_loader
def test_csv(tiny, tmp_path):
    out = tmp_path / "frames"
    result = run("analyze", tiny, "--csv", out, "-o", tmp_path / "r.txt")
    assert result.exit_code == 0, result.stderr
    assert sorted(os.listdir(out)) == sorted(FILES)
    gpu = (out / "gpu.csv").read_text().splitlines()
    assert len(gpu) == 5  # header + 3 kernels + 1 copy
    devices = (out / "devices.csv").read_text().splitlines()
    assert devices[0].startswith("trace,step,span_us,device,name,busy_us")
    assert devices[1].startswith(f"{tiny},,42.0,0,NVIDIA H200,25.0")
    again = run("analyze", tiny, "--csv", out)
    assert_one_line_error(again, 4, str(out / "gpu.csv"))
    assert run("analyze", tiny, "--csv", out, "--force").exit_code == 0


# ----------------------------------------------------------------------------- bad input


def _bad_inputs(tmp: Path) -> dict[str, Path]:
    good = json.dumps(TraceBuilder().document() | {"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
         "args": {"device": 0, "stream": 7}}] * 50}).encode()
    files = {
        "empty.json": b"",
        "not_json.json": b"this is not json\n",
        "truncated.json": good[: good.index(b'"dur"')],  # inside the first event: nothing to keep
        "truncated.json.gz": gzip.compress(good)[:40],
        "no_events.json": b'{"schemaVersion": 1, "deviceProperties": []}',
        "numbers.json": b"[1, 2, 3]",
        "no_ts.json": b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "dur": 1,'
                      b' "pid": 0, "tid": 7}]}',
    }
    out = {}
    for name, data in files.items():
        (tmp / name).write_bytes(data)
        out[name] = tmp / name
    return out


BAD = ["empty.json", "not_json.json", "truncated.json", "truncated.json.gz", "no_events.json",
       "numbers.json", "no_ts.json"]


@needs_loader
@pytest.mark.parametrize("name", BAD)
def test_bad_input_is_one_line_exit_3(tmp_path, name):
    """GIVEN a damaged trace WHEN analysed THEN exit 3 with one line naming the file."""
    path = _bad_inputs(tmp_path)[name]
    assert_one_line_error(run("analyze", path), 3, str(path))


@needs_loader
def test_missing_path_exit_3(tmp_path):
    missing = tmp_path / "nope.json"
    assert_one_line_error(run("analyze", missing), 3, str(missing), "no such file")


@needs_loader
def test_bad_file_among_good_ones_names_the_bad_one(tiny, tmp_path):
    # GIVEN a good trace and a bad one WHEN analysed together
    bad = _bad_inputs(tmp_path)["truncated.json.gz"]
    for jobs in ("1", "2"):
        result = run("analyze", tiny, bad, "--jobs", jobs)
        # THEN the good one is reported, one stderr line names the bad one, exit 3 (CI notices)
        assert result.exit_code == 3, result.stderr
        assert result.stderr.count("\n") == 1 and str(bad) in result.stderr
        assert "Traceback" not in result.stderr
        assert str(tiny) in result.stdout and str(bad) not in result.stdout


@needs_loader
def test_bad_input_leaves_no_output(tmp_path):
    bad = _bad_inputs(tmp_path)["empty.json"]
    out = tmp_path / "r.json"
    assert_one_line_error(run("analyze", bad, "-o", out, "--csv", tmp_path / "csv"), 3, str(bad))
    assert not out.exists() and not (tmp_path / "csv").exists()


@needs_loader
def test_main_returns_the_exit_code(tmp_path, capsys):
    """The console script exits with what main() returns: errors must not come back as 0."""
    bad = _bad_inputs(tmp_path)["not_json.json"]
    assert main(["analyze", str(bad)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("traceprobe: error: ") and str(bad) in err and err.count("\n") == 1
    assert main(["analyze", str(tmp_path / "missing.json")]) == 3
    assert main(["analyze", "--step", "x", str(bad)]) == 2


# ----------------------------------------------------------------------------- real traces


def corpus(name: str) -> Path:
    path = CORPUS / name
    if not path.is_file():
        pytest.skip(f"third-party trace corpus not here: {path}")
    return path


@needs_loader
@pytest.mark.parametrize("name", [
    "amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "critical_path_alexnet_benchmark_result_2869224_1695835535_trace.json.gz",
    "critical_path_cuda_event_sync_multi_stream_event_sync_trace.json.gz",
    "triton_example_triton_example.json.gz",
    "ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "nccl_parser_config_nccl_data.json.gz",
    "negative_queue_length_values_check_rank0.json.gz",
])
def test_corpus_traces_render_in_every_format(name, tmp_path):
    """GIVEN a real trace THEN every format renders, and the JSON holds its own invariants."""
    path = corpus(name)
    result = run("analyze", path, "-f", "json")
    assert result.exit_code == 0, result.stderr
    r = json.loads(result.stdout)  # also: no NaN (json.loads accepts it, so check below)
    assert "NaN" not in result.stdout and "Infinity" not in result.stdout
    assert r["trace"] == str(path)
    for d in r["devices"]:
        assert 0 <= d["busy_us"] <= r["span_us"] + 1e-6
        assert d["busy_us"] + d["idle_us"] == pytest.approx(r["span_us"])
    for fmt in ("text", "markdown"):
        out = run("analyze", path, "-f", fmt, "--top", "3")
        assert out.exit_code == 0 and r["trace"] in out.stdout
    csv_dir = tmp_path / "csv"
    assert run("analyze", path, "--csv", csv_dir, "-o", tmp_path / "r.txt").exit_code == 0
    from traceprobe.load import load  # the CSV holds every event; the report counts its window

    assert len((csv_dir / "gpu.csv").read_text().splitlines()) == 1 + len(load(path).gpu)


@needs_loader
def test_corpus_two_ranks(tmp_path):
    """GIVEN the two ranks of one job THEN one report with both and their overlap."""
    r0 = corpus("trace_filter_sampled_rank-0.json.gz")
    r1 = corpus("trace_filter_sampled_rank-1.json.gz")
    result = run("analyze", r0, r1, "-f", "json")
    assert result.exit_code == 0, result.stderr
    r = json.loads(result.stdout)
    assert [t["trace"] for t in r["traces"]] == [str(r0), str(r1)]
    for p in r["cross_trace"]["pairs"]:
        assert 0 <= p["overlap_us"] <= p["either_us"]
    text = run("analyze", r0, r1).stdout
    assert "[0] " + str(r0) in text and "[1] " + str(r1) in text


@needs_loader
def test_reader_closing_the_pipe_early_is_not_an_error(tmp_path):
    """`traceprobe analyze big.json | head -1`: no BrokenPipeError traceback, exit 0."""
    t = TraceBuilder()
    for i in range(3000):  # a report longer than a pipe buffer
        t.kernel(f"kernel_{i}", ts=i * 10, dur=5, stream=7 + i % 50)
    path = t.write(tmp_path / "many.json")
    code = "import sys; from traceprobe.cli import main; sys.exit(main(sys.argv[1:]))"
    proc = subprocess.Popen([sys.executable, "-c", code, "analyze", str(path), "--top", "3000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline().startswith(b"traceprobe: ")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err
