"""Tests for traceprobe.tensorboard: per-step figures as TensorBoard scalars.

First the figures and the event file on hand-made reports, read back with tensorboard's
own event loader; then end to end with a real ``tensorboard`` server: a run recorded by
``traceprobe record`` (CPU) and a hand-built two-GPU trace, scalars written beside them,
the run found through the PyTorch Profiler plugin's HTTP API and every scalar found,
with the value computed from the report, through TensorBoard's scalars API.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from test_expect import make_report  # tests/test_expect.py
from tracebuild import TraceBuilder  # tests/tracebuild.py
from traceprobe import tensorboard as tb
from traceprobe.errors import OutputError, UsageError

pytest.importorskip("tensorboard", reason="the tensorboard extra is not installed")


def read_events(path: Path) -> list[tuple[int, dict[str, float]]]:
    """(step, {tag: value}) of each summary event, through tensorboard's own reader."""
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
    from tensorboard.util import tensor_util

    out = []
    for event in EventFileLoader(str(path)).Load():
        if event.HasField("summary"):
            values = {v.tag: float(tensor_util.make_ndarray(v.tensor)) for v in event.summary.value}
            assert all(v.metadata.plugin_data.plugin_name == "scalars"
                       for v in event.summary.value)
            out.append((event.step, values))
    return out


def f32(x: float) -> float:
    return float(np.float32(x))


def stepped(report: dict[str, Any], steps: dict[int, float]) -> dict[str, Any]:
    """``report`` as made with step="all": one sub-report per step, each with its own span."""
    subs = []
    for n, span in steps.items():
        sub = {k: v for k, v in report.items() if k not in ("steps", "headlines", "schema")}
        sub["window"] = {"start_us": 0.0, "end_us": span, "step": n}
        sub["span_us"] = span
        subs.append(sub)
    return {**report, "counts": {**report["counts"], "steps": len(steps)}, "steps": subs}


# ----------------------------------------------------------------------------- figures


def test_scalars_of_one_window() -> None:
    assert tb.scalars(make_report()) == {
        "traceprobe/span_us": 1000.0,
        "traceprobe/cross_device_overlap_pct": 50.0,
        "traceprobe/utilization_pct/gpu0": 80.0,
        "traceprobe/gpu_idle_us/gpu0": 200.0,
        "traceprobe/hidden_copy_pct/gpu0": 80.0,
        "traceprobe/concurrent_streams_us/gpu0": 120.0,
        "traceprobe/utilization_pct/gpu1": 60.0,
        "traceprobe/gpu_idle_us/gpu1": 400.0,
        "traceprobe/hidden_copy_pct/gpu1": 25.0,
        "traceprobe/concurrent_streams_us/gpu1": 0.0,
        # the fixture's comm_compute rows: hidden 80% on GPU 0, 25% on GPU 1
        "traceprobe/hidden_comm_pct/gpu0": 80.0,
        "traceprobe/hidden_comm_pct/gpu1": 25.0,
    }


def test_scalars_of_a_real_step_breakdown_copy_rate_and_descriptions() -> None:
    """The DDP sample, step 1: the breakdown tags equal the report's parts; copy GB/s is bytes
    over copy time; every tag has a description."""
    from traceprobe.load import load
    from traceprobe.report import analyze

    path = sorted((Path(__file__).resolve().parent.parent / "sample_traces" / "h200x2" / "ddp" /
                   "train").glob("vm_0.*.pt.trace.json.gz"))[0]
    r = analyze(load(path), step="all").to_dict()
    ((n, tags),) = tb.step_scalars(r)
    step = r["steps"][0]
    (b,) = step["step_breakdown"]
    assert n == b["step"] == 1
    for part in b["parts"]:
        assert tags[f"traceprobe/step_{part['name']}_us/gpu0"] == part["us"]
    assert sum(tags[f"traceprobe/step_{p['name']}_us/gpu0"] for p in b["parts"]) == pytest.approx(
        step["span_us"])
    (c,) = step["copies"]
    assert tags["traceprobe/copy_gbps/gpu0"] == pytest.approx(c["bytes"] / (c["us"] * 1000))
    assert all(tb.description(t) for t in tags)


def test_undefined_figures_are_left_out() -> None:
    r = make_report()
    r["overlap"]["cross_device"] = []
    r["overlap"]["copy_compute"] = [row for row in r["overlap"]["copy_compute"]
                                    if row["device"] == 0]
    tags = tb.scalars(r)
    assert "traceprobe/cross_device_overlap_pct" not in tags
    assert "traceprobe/hidden_copy_pct/gpu1" not in tags
    assert tags["traceprobe/hidden_copy_pct/gpu0"] == 80.0


def test_step_scalars_use_profiler_step_numbers() -> None:
    steps = tb.step_scalars(stepped(make_report(), {4: 300.0, 3: 250.0}))
    assert [(n, s["traceprobe/span_us"]) for n, s in steps] == [(3, 250.0), (4, 300.0)]


def test_a_report_without_steps_is_step_0_and_a_stepless_analysis_is_refused() -> None:
    assert tb.step_scalars(make_report())[0][0] == 0
    r = make_report()
    r["counts"]["steps"] = 2
    with pytest.raises(UsageError, match="analyze it with step='all'"):
        tb.step_scalars(r)


@pytest.mark.parametrize(
    "name, worker",
    [
        ("vm.1795979855921595075.pt.trace.json.gz", "vm"),
        ("rank0.123.pt.trace.json", "rank0"),
        ("host_42.pt.trace.json", "host_42"),
        ("a.b.17.pt.trace.json.gz", "a.b"),
        ("plain.json", "plain"),
        (None, "trace"),
    ],
)
def test_worker_name_as_the_profiler_plugin_reads_it(name: str | None, worker: str) -> None:
    assert tb.worker_name(name) == worker


# ----------------------------------------------------------------------------- writing


def test_write_and_read_back_with_tensorboards_loader(tmp_path: Path) -> None:
    report = stepped(make_report(), {1: 100.0, 2: 200.0})
    report["trace"] = str(tmp_path / "w0.5.pt.trace.json")
    [path] = tb.write_scalars(tmp_path, report)
    assert path.parent == tmp_path / "traceprobe"
    assert path.name.startswith("events.out.tfevents.") and path.name.endswith(".traceprobe")
    expected = [(n, {t: f32(v) for t, v in s.items()}) for n, s in tb.step_scalars(report)]
    assert read_events(path) == expected


def test_second_write_needs_force_and_replaces(tmp_path: Path) -> None:
    report = make_report()
    [first] = tb.write_scalars(tmp_path, report)
    with pytest.raises(OutputError, match="will not add a second set without --force") as info:
        tb.write_scalars(tmp_path, report)
    assert info.value.exit_code == 4
    time.sleep(1.1)  # a new name (the name holds the time in seconds)
    [second] = tb.write_scalars(tmp_path, report, force=True)
    assert second != first
    assert sorted((tmp_path / "traceprobe").iterdir()) == [second]


def test_several_workers_get_one_run_each(tmp_path: Path) -> None:
    a, b, b2 = make_report(), make_report(), stepped(make_report(), {7: 10.0})
    a["trace"], b["trace"], b2["trace"] = ("r0.1.pt.trace.json", "r1.1.pt.trace.json",
                                           "r1.2.pt.trace.json")
    b["span_us"] = 5.0
    paths = tb.write_scalars(tmp_path, [a, b, b2])
    assert [p.parent for p in paths] == [tmp_path / "traceprobe" / "r0",
                                         tmp_path / "traceprobe" / "r1"]
    assert [(n, s["traceprobe/span_us"]) for n, s in read_events(paths[1])] == [(0, 5.0),
                                                                                 (7, 10.0)]


def test_missing_tensorboard_names_the_install_line(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "tensorboard.compat.proto", None)
    with pytest.raises(tb.TensorBoardMissing) as info:
        tb.write_scalars(tmp_path, make_report())
    assert "pip install 'traceprobe[tensorboard]'" in str(info.value)
    assert not (tmp_path / "traceprobe").exists()


# ----------------------------------------------------------------------------- real server

SERVER_WAIT_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(base: str, path: str, **params: str) -> Any:
    url = base + path + ("?" + urllib.parse.urlencode(params) if params else "")
    with urllib.request.urlopen(url, timeout=10) as resp:
        return json.loads(resp.read().decode("utf-8"))


def poll(what: str, fn, *, log, timeout: float = SERVER_WAIT_S) -> Any:  # type: ignore[no-untyped-def]
    """Call ``fn`` until it returns something truthy; fail naming ``what`` after ``timeout``
    (with the server's log)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except (urllib.error.URLError, ConnectionError, OSError, json.JSONDecodeError) as e:
            last = e
        else:
            if last:
                return last
        time.sleep(0.5)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for {what}; last answer: {last!r}\n"
                f"tensorboard log:\n{log()}")


class Server:
    """A real ``tensorboard`` on a free local port, started on demand; ``stop()`` kills it
    (its own process group: the server, its data server and the plugin's loaders)."""

    def __init__(self, logdir: Path, log: Path) -> None:
        self.logdir, self.log_path = logdir, log
        self.proc: subprocess.Popen[bytes] | None = None
        self.base = ""

    def start(self) -> str:
        port = free_port()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "tensorboard.main", "--logdir", str(self.logdir),
                 "--host", "127.0.0.1", "--port", str(port), "--reload_interval", "1"],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            )
        self.base = f"http://127.0.0.1:{port}"
        return self.base

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=15)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:] if self.log_path.exists() else ""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    (tmp_path / "logs").mkdir()
    srv = Server(tmp_path / "logs", tmp_path / "tensorboard.log")
    try:
        yield srv
    finally:
        srv.stop()


def record_cpu_run(out: Path) -> Path:
    """``traceprobe record two-devices/parallel --device cpu``: one variant folder, 2 steps."""
    pytest.importorskip("torch", reason="recording needs torch (the record extra)")
    cmd = [sys.executable, "-c", "import sys; from traceprobe.cli import main; sys.exit(main())",
           "record", "two-devices/parallel", "--device", "cpu", "--out", str(out),
           "--active", "2", "--plain-steps", "0", "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    run_dir = out / "two-devices" / "parallel"
    traces = sorted(run_dir.glob("*.pt.trace.json*"))
    assert traces, f"traceprobe record wrote no trace:\n{done.stdout}\n{done.stderr}"
    return run_dir


def handmade_gpu_run(run_dir: Path) -> Path:
    """Two ProfilerSteps of a two-GPU trace with copies and two streams (hand-built)."""
    run_dir.mkdir(parents=True)
    t = TraceBuilder()
    t.device_properties(0, 1)
    for n, base in ((5, 0.0), (6, 100.0)):
        t.step(n, ts=base, dur=100)
        t.launch(f"k0_{n}", cpu_ts=base + 1, cpu_dur=2, gpu_ts=base + 10, gpu_dur=60,
                 device=0, stream=7)
        t.launch(f"k1_{n}", cpu_ts=base + 4, cpu_dur=2, gpu_ts=base + 30 + n, gpu_dur=50,
                 device=1, stream=7)
        t.memcpy("Memcpy HtoD (Pinned -> Device)", ts=base + 20, dur=20 + n, device=0, stream=20)
    t.write(run_dir / "gpuhost.1700000000000.pt.trace.json")
    return run_dir


@pytest.mark.slow
def test_scalars_and_profiler_run_through_a_real_tensorboard(server: Server) -> None:
    import traceprobe
    from traceprobe.load.folders import find_traces

    logdir = server.logdir
    runs = {"two-devices/parallel": record_cpu_run(logdir),
            "handmade/gpu": handmade_gpu_run(logdir / "handmade" / "gpu")}
    expected: dict[str, list[tuple[int, dict[str, float]]]] = {}
    for name, run_dir in runs.items():
        reports = [traceprobe.analyze(traceprobe.load(p), step="all").to_dict()
                   for p in find_traces(run_dir)]
        # `traceprobe record` already wrote this run's scalars; force rewrites them the same way
        [written] = tb.write_scalars(run_dir, reports, force=True)
        assert written.parent == run_dir / "traceprobe"
        expected[f"{name}/traceprobe"] = [s for r in reports for s in tb.step_scalars(r)]
    gpu = dict(expected["handmade/gpu/traceprobe"])
    assert sorted(gpu) == [5, 6]
    assert {"traceprobe/cross_device_overlap_pct", "traceprobe/hidden_copy_pct/gpu0",
            "traceprobe/utilization_pct/gpu1", "traceprobe/concurrent_streams_us/gpu0",
            "traceprobe/gpu_idle_us/gpu1"} <= set(gpu[5])
    assert gpu[5]["traceprobe/hidden_copy_pct/gpu0"] == 100.0  # copy inside k0's 60 µs

    base = server.start()
    poll("tensorboard to answer", lambda: get_json(base, "/data/logdir"), log=server.log)

    # (1) the recorded run, through the PyTorch Profiler plugin (it loads runs asynchronously)
    plugin_runs = poll(
        "the profiler plugin to list two-devices/parallel",
        lambda: [r for r in get_json(base, "/data/plugin/pytorch_profiler/runs")["runs"]
                 if r == "two-devices/parallel"],
        log=server.log,
    )
    assert plugin_runs == ["two-devices/parallel"]
    workers = get_json(base, "/data/plugin/pytorch_profiler/workers",
                       run="two-devices/parallel", view="Overview")
    [trace] = find_traces(runs["two-devices/parallel"])
    assert workers == [tb.worker_name(trace)]  # the plugin and traceprobe agree on the worker

    # (2) every scalar, through TensorBoard's scalars API, equal to the report's figure
    tags = poll(
        "the scalars runs",
        lambda: (lambda t: t if all(run in t and t[run] for run in expected) else None)(
            get_json(base, "/data/plugin/scalars/tags")),
        log=server.log,
    )
    for run, steps in expected.items():
        want_tags = sorted({tag for _, values in steps for tag in values})
        assert sorted(tags[run]) == want_tags, run
        for tag in want_tags:
            points = get_json(base, "/data/plugin/scalars/scalars", run=run, tag=tag)
            got = [(step, value) for _wall, step, value in points]
            want = [(n, f32(values[tag])) for n, values in steps if tag in values]
            assert got == want, (run, tag)
