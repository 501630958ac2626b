"""``traceprobe profile`` on unmodified scripts, end to end on the CPU.

Each run is a real subprocess (the script's own output, exit status and signals are
the point), shared between the assertions through module-scoped fixtures. Expected
step numbers come from the schedule (wait + warmup .. + active - 1), never from the
code under test; traces are read back with gzip + json.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip("torch")

from traceprobe.cli import cli  # noqa: E402
from traceprobe.record import meta  # noqa: E402
from traceprobe.record.profile import steps as stp  # noqa: E402
from traceprobe.record.profile import target as tgt  # noqa: E402
from traceprobe.record.registry import Schedule  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
STEP = re.compile(r"ProfilerStep#(\d+)")


def run_profile(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``traceprobe profile ARGS`` in a subprocess. ``--window-after 300``: on a starved CI
    box a script may take more than the default 30 s to its first optimizer step."""
    if "--window-after" not in args:
        args = ("--window-after", "300", *args)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "traceprobe.cli", "profile", *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


def traces(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pt.trace.json.gz"))


def load(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def step_numbers(doc: dict) -> list[int]:
    """ProfilerStep#N numbers of the trace's step ranges (the user_annotation events)."""
    found = {
        int(m.group(1))
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and (m := STEP.fullmatch(str(e.get("name", ""))))
    }
    return sorted(found)


def active_steps(wait: int, warmup: int, active: int) -> list[int]:
    return list(range(wait + warmup, wait + warmup + active))


# -- the examples, unmodified --------------------------------------------------------------
@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    """GIVEN examples/mlp_cpu.py profiled with wait 2, warmup 1, active 2."""
    out = tmp_path_factory.mktemp("mlp") / "runs"
    r = run_profile("-o", str(out), "--wait", "2", "--warmup", "1", "--active", "2", "--",
                    str(EXAMPLES / "mlp_cpu.py"), "--steps", "20")
    return out / "mlp_cpu", r


def test_mlp_example_exit_status_and_its_own_output(mlp):
    folder, r = mlp
    assert r.returncode == 0, r.stderr
    assert "step 10 loss" in r.stdout and "step 20 loss" in r.stdout  # the script's own prints
    assert "profiler_start" not in r.stdout + r.stderr  # Kineto's log lines stay off the console
    assert "USDT" not in r.stdout + r.stderr


def test_mlp_trace_holds_exactly_the_active_optimizer_steps(mlp):
    folder, _ = mlp
    files = traces(folder)
    assert len(files) == 1
    assert re.fullmatch(r"[A-Za-z0-9-]+\.\d+\.pt\.trace\.json\.gz", files[0].name)
    assert step_numbers(load(files[0])) == active_steps(2, 1, 2)


def test_mlp_steps_split_into_phases_that_sum_to_each_step(mlp):
    """The CPU profile of the unmodified script: each recorded step's forward, backward,
    optimizer and DataLoader phases (from the trace's own markers) sum to the step."""
    from traceprobe import report as rp
    from traceprobe.load import load as load_trace

    folder, _ = mlp
    [trace] = traces(folder)
    rows = rp.analyze(load_trace(trace)).to_dict()["step_breakdown"]
    assert len(rows) == 2
    for row in rows:
        ph = {p["name"]: p["us"] for p in row["phases"]}
        assert sum(ph.values()) == pytest.approx(sum(p["us"] for p in row["parts"]), abs=1e-6)
        assert min(ph["forward"], ph["backward"], ph["optimizer"], ph["dataloader"]) > 0, ph


def test_mlp_metadata_says_what_ran_and_how_long(mlp):
    folder, _ = mlp
    m = meta.read(folder / meta.FILENAME)
    assert m["schema"] == meta.SCHEMA and m["kind"] == "profile"
    assert m["target"] == {"kind": "script", "name": str(EXAMPLES / "mlp_cpu.py"),
                           "args": ["--steps", "20"]}
    assert m["exit_status"] == 0 and m["profiler"]["step_source"] == "optimizer"
    assert m["profiler"]["profiled_steps"] == active_steps(2, 1, 2)
    assert m["torch"] and "gpus" in m and m["cuda"] is None or isinstance(m["cuda"], str)
    t = m["timing"]
    # 20 optimizer steps: the first starts the profiler, so 19 ProfilerStep windows complete
    assert len(t["step_wall_s"]) == 19
    assert t["step_phase"][:5] == ["wait", "wait", "warmup", "active", "active"]
    assert set(t["step_phase"][5:]) == {"done"}
    assert 0 < t["profiler_window_s"] < t["script_wall_s"]
    assert t["outside_window_s"] == pytest.approx(t["script_wall_s"] - t["profiler_window_s"],
                                                  abs=1e-5)
    # the ratio of typical steps: outliers (over 3x the median step, listed) are left out
    odd = {o["index"] for o in t["outlier_steps"]}
    rows = [(w, p) for i, (w, p) in enumerate(zip(t["step_wall_s"], t["step_phase"], strict=True))
            if i not in odd]
    active = [w for w, p in rows if p == "active"]
    done = [w for w, p in rows if p == "done"]
    assert t["step_overhead"] == pytest.approx(statistics.median(active) / statistics.median(done),
                                               rel=1e-3)
    assert m["traces"] == [{"file": traces(folder)[0].name,
                            "bytes": traces(folder)[0].stat().st_size, "rank": None}]
    assert m["command"][:2] == ["traceprobe", "profile"]


@pytest.fixture(scope="module")
def hosted(tmp_path_factory):
    """GIVEN examples/mlp_cpu.py profiled with 4 host steps, wait 1, warmup 1, active 2."""
    out = tmp_path_factory.mktemp("hosted") / "runs"
    r = run_profile("-o", str(out), "--host-steps", "4", "--wait", "1", "--warmup", "1",
                    "--active", "2", "--", str(EXAMPLES / "mlp_cpu.py"), "--steps", "20")
    return out / "mlp_cpu", r


def test_host_steps_come_before_the_wait_and_their_median_is_in_the_trace(hosted):
    """THEN steps 1-4 are host steps (the recorded steps move on by 4), the trace's top-level
    traceprobeUnprofiled holds the median of their wall times (the metadata's own step
    walls), and whatif's default no-profiler calibrates on it."""
    folder, r = hosted
    assert r.returncode == 0, r.stderr
    m = meta.read(folder / meta.FILENAME)
    t = m["timing"]
    # the first step is the schedule's one wait step, then the host steps
    assert t["step_phase"][:8] == ["wait", "host", "host", "host", "host", "warmup", "active",
                                   "active"]
    (trace,) = traces(folder)
    doc = load(trace)
    assert step_numbers(doc) == active_steps(1 + 4, 1, 2)
    walls = [w for w, p in zip(t["step_wall_s"], t["step_phase"], strict=True) if p == "host"]
    got = doc["traceprobeUnprofiled"]
    assert got["host_steps"] == 4 == t["host_steps"]
    # (the metadata's walls are rounded to the µs)
    assert got["host_ms"] == pytest.approx(statistics.median(walls) * 1e3, abs=1e-3)
    assert t["host_issue_median_s"] == pytest.approx(statistics.median(walls), abs=1e-6)
    # the unprofiled step time leaves the host steps out (they began on an idle device)
    odd = {o["index"] for o in t["outlier_steps"]}
    done = [w for i, (w, p) in enumerate(zip(t["step_wall_s"], t["step_phase"], strict=True))
            if p == "done" and i not in odd]
    assert t["unprofiled_step_median_s"] == pytest.approx(statistics.median(done), abs=1e-6)
    from traceprobe.graph import whatif
    from traceprobe.load import load as load_trace

    res = whatif(load_trace(trace), ["no-profiler"], step="all")
    assert any(f"calibrated on the recorder's unprofiled host time, {got['host_ms']:.3g} ms"
               in n for n in res.notes)


def test_a_negative_host_steps_is_one_line(tmp_path):
    code, out = _one_line(["-o", str(tmp_path), "--host-steps", "-1", "--",
                           str(EXAMPLES / "mlp_cpu.py")])
    assert code == 2 and "--host-steps must be 0 or more" in out.replace(",", "")


def test_mlp_summary_names_the_trace_and_the_commands(mlp):
    folder, r = mlp
    assert "2 complete steps (ProfilerStep#3-#4)" in r.stdout
    assert "No GPU activity in the window" in r.stdout  # the analyze headline, CPU only
    assert f"traceprobe analyze {folder}" in r.stdout
    assert f"tensorboard --logdir {folder.parent}" in r.stdout


def test_an_existing_run_is_not_overwritten_without_force(mlp):
    folder, _ = mlp
    before = sorted(p.name for p in folder.iterdir())
    r = run_profile("-o", str(folder.parent), "--name", folder.name, "--",
                    str(EXAMPLES / "mlp_cpu.py"))
    assert r.returncode == 4
    assert r.stderr.strip().splitlines() == [
        f"traceprobe: error: Output folder already exists, will not overwrite without --force: "
        f"{folder}; or choose another --name"
    ]  # without --name a second run goes to a numbered sibling (tests/record/)
    assert sorted(p.name for p in folder.iterdir()) == before


def test_convnet_example_profiled_unmodified(tmp_path):
    r = run_profile("-o", str(tmp_path), "--wait", "1", "--warmup", "1", "--active", "3", "--",
                    str(EXAMPLES / "convnet_gpu.py"), "--steps", "8")
    assert r.returncode == 0, r.stderr
    assert "training on" in r.stdout
    [trace] = traces(tmp_path / "convnet_gpu")
    assert step_numbers(load(trace)) == active_steps(1, 1, 3)


# -- many ranks ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ddp(tmp_path_factory):
    """GIVEN examples/ddp_train.py on 2 gloo ranks launched by --nproc-per-node."""
    out = tmp_path_factory.mktemp("ddp")
    r = run_profile("-o", str(out), "--nproc-per-node", "2", "--wait", "1", "--warmup", "1",
                    "--active", "2", "--", str(EXAMPLES / "ddp_train.py"), "--steps", "8")
    return out / "ddp_train", r


def test_two_ranks_give_two_traces_named_by_rank(ddp):
    folder, r = ddp
    assert r.returncode == 0, r.stderr
    files = traces(folder)
    assert [f.name.split(".")[0].rsplit("_", 1)[1] for f in files] == ["0", "1"]
    for f in files:
        doc = load(f)
        assert step_numbers(doc) == active_steps(1, 1, 2)
    assert not list(folder.glob(".rank*"))  # merged into the metadata, then removed
    m = meta.read(folder / meta.FILENAME)
    assert m["world_size"] == 2 and [x["rank"] for x in m["ranks"]] == [0, 1]
    assert sorted(t["rank"] for t in m["traces"]) == [0, 1]


def test_two_rank_traces_analyse_as_ranks_of_one_job(ddp):
    from traceprobe import report
    from traceprobe.load import pipeline

    folder, _ = ddp
    reports = [report.analyze(t) for t in pipeline.load_many(pipeline.find_traces(folder), jobs=1)]
    assert sorted(r.rank for r in reports) == [0, 1]
    r = CliRunner().invoke(cli, ["analyze", str(folder), "-f", "json"])
    assert r.exit_code == 0, r.output
    assert sorted(t["rank"] for t in json.loads(r.output)["traces"]) == [0, 1]


def test_two_ranks_under_the_users_own_torchrun(tmp_path):
    """GIVEN the documented form for one's own launcher: torchrun -m traceprobe.record.profile."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
           "-m", "traceprobe.record.profile", "-o", str(tmp_path), "--window-after", "300",
           "--wait", "1", "--warmup", "1", "--active", "2", "--",
           str(EXAMPLES / "ddp_train.py"), "--steps", "8"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    folder = tmp_path / "ddp_train"
    files = traces(folder)
    assert [f.name.split(".")[0].rsplit("_", 1)[1] for f in files] == ["0", "1"]
    assert all(step_numbers(load(f)) == active_steps(1, 1, 2) for f in files)
    m = meta.read(folder / meta.FILENAME)
    assert [x["rank"] for x in m["ranks"]] == [0, 1] and m["world_size"] == 2
    assert r.stdout.count("traceprobe: `python") == 1  # the last rank to finish sums up


# -- faults ----------------------------------------------------------------------------------
FAILING = """
import torch
model = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(1, 100):
    opt.zero_grad()
    model(torch.randn(8, 16)).sum().backward()
    opt.step()
    print("did step", step, flush=True)
    if step == 5:
        raise RuntimeError("loss is nan at step 5")
"""


@pytest.fixture(scope="module")
def failed(tmp_path_factory):
    """GIVEN a script that raises right after its 5th optimizer step (wait 0, warmup 1,
    active 5): steps #0 warmup, #1-#3 complete, #4 in progress when it raised."""
    d = tmp_path_factory.mktemp("fail")
    script = d / "train_fails.py"
    script.write_text(FAILING)
    r = run_profile("-o", str(d / "out"), "--wait", "0", "--warmup", "1", "--active", "5", "--",
                    str(script))
    return d / "out" / "train_fails", r


def test_failing_script_exit_status_and_traceback_come_back(failed):
    _, r = failed
    assert r.returncode == 1  # python's status for an uncaught exception
    assert "did step 5" in r.stdout
    assert "RuntimeError: loss is nan at step 5" in r.stderr
    assert "traceprobe/record" not in r.stderr  # the traceback is the script's, as python's


def test_failing_script_completed_steps_are_in_a_valid_trace(failed):
    folder, r = failed
    [trace] = traces(folder)
    assert step_numbers(load(trace)) == [1, 2, 3, 4]
    m = meta.read(folder / meta.FILENAME)
    assert m["profiler"]["profiled_steps"] == [1, 2, 3]
    assert m["profiler"]["partial_step"] == 4
    assert m["exit_status"] == 1 and m["ended"] == "exception"
    assert "3 complete steps (ProfilerStep#1-#3) + ProfilerStep#4, in progress" in r.stdout
    assert not [p for p in folder.parent.iterdir() if p.name.startswith(".")]  # no temp left


FOREVER = """
import sys, time, pathlib, torch
model = torch.nn.Linear(16, 16)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
step = 0
while True:
    opt.zero_grad()
    model(torch.randn(8, 16)).sum().backward()
    opt.step()
    step += 1
    if step == 4:
        pathlib.Path(sys.argv[1]).write_text("4")
    time.sleep(0.02)
"""


def test_sigterm_mid_run_leaves_the_steps_so_far_and_returns_143(tmp_path):
    script, mark = tmp_path / "forever.py", tmp_path / "mark"
    script.write_text(FOREVER)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "traceprobe.cli", "profile", "-o", str(tmp_path / "out"),
         "--wait", "0", "--warmup", "1", "--active", "1000", "--", str(script), str(mark)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.time() + 180
    while not mark.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    [trace] = traces(tmp_path / "out" / "forever")
    numbers = step_numbers(load(trace))
    m = meta.read(tmp_path / "out" / "forever" / meta.FILENAME)
    assert m["ended"] == "SIGTERM"
    complete = m["profiler"]["profiled_steps"]
    assert complete[0] == 1 and len(complete) >= 2  # at least steps #1, #2 before the mark
    assert numbers == complete + [complete[-1] + 1]  # and the one in progress
    assert f"{len(complete)} complete steps" in out and "terminated by SIGTERM" in out


# -- no optimizer: time windows; --step-on -------------------------------------------------
NO_OPTIMIZER = """
import pathlib, sys, time, torch
x = torch.randn(64, 64)
out = pathlib.Path(sys.argv[1])
t0 = time.time()
# inference with no optimizer; it runs until its trace is out (a busy machine may take
# seconds for the profiler's start-up), at most two minutes
while time.time() - t0 < 120 and not list(out.glob(".infer.tmp-*/*.pt.trace.json.gz")):
    with torch.profiler.record_function("block"):
        y = x @ x
print("inference done")
"""


def test_no_optimizer_falls_back_to_time_windows_and_says_so(tmp_path):
    script = tmp_path / "infer.py"
    script.write_text(NO_OPTIMIZER)
    r = run_profile("-o", str(tmp_path / "out"), "--window-after", "0.3", "--window-ms", "100",
                    "--wait", "0", "--warmup", "1", "--active", "2", "--", str(script),
                    str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    assert "inference done" in r.stdout
    assert "fell back to time windows of 100 ms" in r.stdout
    [trace] = traces(tmp_path / "out" / "infer")
    assert step_numbers(load(trace)) == [1, 2]
    m = meta.read(tmp_path / "out" / "infer" / meta.FILENAME)
    assert m["profiler"]["step_source"] == "windows" and m["profiler"]["fell_back_to_windows"]
    # the windows are labelled as such downstream: every report of the trace says so
    from traceprobe import report as rp
    from traceprobe.load import load as load_trace

    warns = rp.analyze(load_trace(trace)).warnings
    assert any("time windows of 100 ms" in w for w in warns), warns


def test_step_on_a_record_function_name_in_process(tmp_path):
    """--step-on NAME: each exit of record_function(NAME) is a boundary (Stepper alone)."""
    import torch

    written: list[str] = []
    from traceprobe.record.profile.session import trace_writer

    opts = stp.StepOptions(schedule=Schedule(1, 1, 2, 1), step_on="block")
    s = stp.Stepper(opts, trace_writer(tmp_path, "w", written), tmp_path / "log")
    s.install()
    try:
        x = torch.randn(8, 8)
        for _ in range(7):
            with torch.profiler.record_function("block"):
                x = x @ x / 8
            with torch.profiler.record_function("other"):  # not a boundary
                x = x + 1
    finally:
        s.finish()
    assert len(s.boundaries) == 7 and s.mode == stp.STEP_ON
    assert step_numbers(load(tmp_path / written[0])) == [2, 3]
    assert torch.autograd.profiler.record_function.__exit__.__name__ == "__exit__"


def test_a_late_first_optimizer_step_undoes_the_fallback_to_windows(tmp_path):
    """GIVEN no optimizer step for --window-after (0.05 s): windows start, still in wait;
    WHEN an optimizer then steps THEN steps are optimizer steps again, counted afresh."""
    import torch

    written: list[str] = []
    from traceprobe.record.profile.session import trace_writer

    opts = stp.StepOptions(schedule=Schedule(1, 1, 2, 1), window_ms=60_000, window_after_s=0.05)
    s = stp.Stepper(opts, trace_writer(tmp_path, "w", written), tmp_path / "log")
    s.install()
    try:
        t0 = time.time()
        while not s.fell_back and time.time() - t0 < 60:  # a slow start: no step yet
            sum(range(1000))
        assert s.mode == stp.WINDOWS and len(s.boundaries) == 1
        model = torch.nn.Linear(4, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for _ in range(6):
            opt.zero_grad()
            model(torch.randn(2, 4)).sum().backward()
            opt.step()
    finally:
        s.finish()
    assert s.mode == stp.OPTIMIZER and not s.fell_back
    assert len(s.boundaries) == 6  # the first optimizer step started a fresh profiler
    assert step_numbers(load(tmp_path / written[0])) == [2, 3]


def test_phase_of_follows_the_schedule():
    s = Schedule(2, 1, 2, 2)
    phases = [stp.phase_of(i, s) for i in range(11)]
    assert phases == ["wait", "wait", "warmup", "active", "active"] * 2 + ["done"]


# -- bad input: one line ---------------------------------------------------------------------
def _one_line(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(cli, ["profile", *args])
    return r.exit_code, r.output


def test_missing_script_is_one_line(tmp_path):
    code, out = _one_line(["-o", str(tmp_path), "--", str(tmp_path / "nope.py")])
    assert code == 2
    assert out.strip() == (f"traceprobe: error: {tmp_path / 'nope.py'}: no such file; "
                           "give the path to your training script")


def test_not_python_is_one_line(tmp_path):
    bad = tmp_path / "train.sh"
    bad.write_text("#!/bin/sh\nfor i in 1 2; do echo $i; done\n")
    code, out = _one_line(["-o", str(tmp_path / "o"), "--", str(bad)])
    assert code == 2 and len(out.strip().splitlines()) == 1
    assert "not a Python script (line 2" in out


def test_missing_module_is_one_line(tmp_path):
    code, out = _one_line(["-o", str(tmp_path), "-m", "no_such_module_tp"])
    assert code == 2 and "-m no_such_module_tp: no such module" in out


def test_import_failure_is_one_line_and_leaves_nothing(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import os\nimport no_such_package_tp\n")
    code, out = _one_line(["-o", str(tmp_path / "o"), "--", str(script)])
    assert code == 5
    assert out.strip().splitlines() == [
        f"traceprobe: error: {script}: fails on import (line 2): ModuleNotFoundError: No module "
        "named 'no_such_package_tp'; install what it imports in this environment, or fix the "
        "import"
    ]
    assert not (tmp_path / "o").exists() or not any((tmp_path / "o").iterdir())


@pytest.mark.parametrize(
    ("argv", "script", "module", "rest"),
    [
        (["--out", "x", "t.py", "--out", "y"], "t.py", None, ["--out", "y"]),  # the script's
        (["--force", "--", "t.py", "-m", "q"], "t.py", None, ["-m", "q"]),
        (["--active", "4", "-m", "pkg.train", "--force"], None, "pkg.train", ["--force"]),
        (["--wait=2", "t.py"], "t.py", None, []),
    ],
)
def test_options_end_where_pythons_would(argv, script, module, rest):
    from traceprobe.record.profile.options import split

    assert split(argv)[1:] == (script, module, rest)


def test_exit_status_as_the_interpreter_computes_it():
    assert [tgt.exit_status(c) for c in (None, 0, 3, 256 + 7)] == [0, 0, 3, 7]


@pytest.mark.parametrize(("env", "cuda", "repeat", "sets"), [
    ({}, "12.6", 1, True), ({}, "13.0", 1, True), ({}, "12.4", 1, False),
    ({}, "11.8", 1, False), ({}, None, 1, False), ({}, "rocm", 1, False),
    ({}, "12.8", 2, False), ({"TEARDOWN_CUPTI": "0"}, "12.8", 1, False),
])
def test_cupti_is_torn_down_after_one_cycle_on_a_recent_cuda(env, cuda, repeat, sets):
    """Kineto leaves CUPTI subscribed after the profiler stops unless TEARDOWN_CUPTI=1
    (pytorch/pytorch#144455), which slows the steps after it, the unprofiled ones the
    metadata times: set it for one cycle on CUDA >= 12.6, never over the user's own."""
    before = dict(env)
    assert stp.teardown_cupti(env, cuda, repeat) is sets
    assert env == ({**before, "TEARDOWN_CUPTI": "1"} if sets else before)


def test_the_host_steps_median_counts_the_last_one_when_recording_starts_right_after():
    """GIVEN --host-steps 3 --wait 1 --warmup 0 --active 1 THEN the one recorded step begins
    as the third host step ends, and the trace's median is still over all three."""
    from traceprobe.record.profile.steps import StepOptions, Stepper

    st = Stepper.__new__(Stepper)  # the bookkeeping only: no profiler
    st.opts, st.mode = StepOptions(Schedule(1, 0, 1, 1), host_steps=3), stp.OPTIMIZER
    st.boundaries = [(0.0, 1.0), (2.0, 2.5), (3.5, 4.0), (6.0, 6.5)]  # host steps 1, 2 done
    assert st.host_issue_s() == [1.0, 2.0]
    assert st.host_issue_s(now=10.0) == [1.0, 2.0, 3.5]  # the third ends at this boundary


def test_the_cupti_teardown_figures_quoted_are_the_measured_ones():
    """docs/PROFILE.md's 18.0 against 10.8 ms a step: the steps after the profiler's cycle of
    the two bf16 runs whose metadata is kept (CUPTI left subscribed, then torn down)."""
    folder = ROOT / "sample_traces" / "h200" / "profile-host-steps" / "cupti-teardown"
    got = {k: meta.read(folder / k / meta.FILENAME)["timing"] for k in ("without", "with")}
    assert all(t["unprofiled_from"] == "done" for t in got.values())
    left, torn = (round(got[k]["unprofiled_step_median_s"] * 1e3, 1) for k in ("without", "with"))
    assert f"ran {left} ms a step after the profiler against {torn} ms with the" in " ".join(
        (ROOT / "docs" / "PROFILE.md").read_text().split())
