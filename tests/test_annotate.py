"""`traceprobe annotate`: the tracks (by hand), the copy (exact, loadable), the CLI, TensorBoard.

Tracks are checked on a hand-built timeline (ns), with the host's calls placed so
that each rule of the idle attribution shows:

    GPU 0 stream 7   kernels [0, 100) [150, 250)       GPU 0 stream 20  copy [50, 200)
    GPU 1 stream 7   kernel  [80, 180), memset [200, 220)
    host             cudaLaunchKernel [0, 30), aten::copy_ [20, 90),
                     aten::item [180, 200) around cudaStreamSynchronize [185, 195)
    window           [0, 260) (the steps' annotations)

GPU 1 is idle in [0, 80), [180, 200) and [220, 260); each gap is labelled with the cause the
report's idle partition (docs/FIGURES.md ``causes[]``) charges most of it:
* [0, 80): the innermost op or call (the one that started last): cudaLaunchKernel in [0, 20),
  aten::copy_ (started at 20) in [20, 80) → copy_, 60;
* [180, 200): aten::item and cudaStreamSynchronize are syncs, and GPU 0 is busy throughout →
  "waiting on another device" (kind wait), 20;
* [220, 260): no host event → "Python (untraced)", 40.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from click.testing import CliRunner

import frames  # tests/frames.py
from tracebuild import TraceBuilder
from traceprobe.annotate import (
    CATEGORY,
    IDLE_PROCESS,
    OVERLAP_PROCESS,
    annotate,
    check_output,
    tracks,
    us,
    write_annotated,
)
from traceprobe.cli import cli
from traceprobe.errors import OutputError
from traceprobe.report import analyze

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "bench" / "transformer-h200.pt.trace.json.gz"


def hand_built() -> Any:
    sync = {"kind": "cuda_sync", "name": "cudaStreamSynchronize", "start": 185, "end": 195}
    return frames.timeline(
        gpu=[
            frames.kernel(0, 100, device=0, stream=7),
            frames.kernel(150, 250, device=0, stream=7),
            frames.copy(50, 200, "HtoD", device=0, stream=20),
            frames.kernel(80, 180, device=1, stream=7),
            frames.memset(200, 220, device=1, stream=7),
        ],
        cpu=[
            frames.runtime(0, 30),
            frames.op(20, 90, "aten::copy_"),
            frames.op(180, 200, "aten::item"),
            sync,
        ],
        steps=[(1, 0, 120), (2, 120, 260)],
    )


def pieces(t: Any) -> list[tuple[int, int]]:
    return list(zip(t.pieces.starts.tolist(), t.pieces.ends.tolist(), strict=True))


def test_tracks_by_hand() -> None:
    got = {t.name: t for t in tracks(hand_built())}

    assert list(got) == [
        "GPU 0 & GPU 1 both busy",
        "GPU 0 copy hidden under kernels",
        "GPU 0 ≥2 streams busy",
        "GPU 0 idle",
        "GPU 1 idle",
    ]
    assert {t.process for t in got.values()} == {OVERLAP_PROCESS, IDLE_PROCESS}
    assert pieces(got["GPU 0 & GPU 1 both busy"]) == [(80, 180), (200, 220)]
    assert pieces(got["GPU 0 copy hidden under kernels"]) == [(50, 100), (150, 200)]
    assert pieces(got["GPU 0 ≥2 streams busy"]) == [(50, 100), (150, 200)]

    idle1 = got["GPU 1 idle"]
    assert pieces(idle1) == [(0, 80), (180, 200), (220, 260)]
    assert list(idle1.labels or []) == [
        "idle: aten::copy_", "idle: waiting on another device", "idle: Python (untraced)"]
    args = list(idle1.args or [])
    assert args[0] == {"host_busy_us": us(80), "cause": "aten::copy_", "cause_kind": "cpu_op",
                       "cause_us": us(60)}
    assert args[1] == {"host_busy_us": us(20), "cause": "waiting on another device",
                       "cause_kind": "wait", "cause_us": us(20)}
    assert args[2] == {"host_busy_us": us(0), "cause": "Python (untraced)",
                       "cause_kind": "host_idle", "cause_us": us(40)}
    assert pieces(got["GPU 0 idle"]) == [(250, 260)]
    assert list(got["GPU 0 idle"].labels or []) == ["idle: Python (untraced)"]


def test_gap_labels_agree_with_the_reports_idle_causes() -> None:
    """One idle gap [10, 100) on one GPU: annotate's label is the report's largest cause.
    By hand: the region "forward" [20, 70) owns 50 ns (the op and the launch inside it only
    split it as children); "Python (untraced)" the other 40. The old per-call rule said aten::mm."""
    tl = frames.timeline(
        gpu=[frames.kernel(0, 10), frames.kernel(100, 110)],
        cpu=[
            frames.annotation(20, 70, "forward"),
            frames.op(30, 60, "aten::mm"),
            frames.runtime(60, 65),
        ],
    )
    (idle,) = [t for t in tracks(tl) if t.process == IDLE_PROCESS]
    causes = analyze(tl).host.devices[0].causes
    assert [(c.name, c.kind, c.ns) for c in causes] == [
        ("forward", "region", 50), ("Python (untraced)", "host_idle", 40)]
    assert pieces(idle) == [(10, 100)]
    assert list(idle.labels or []) == [f"idle: {causes[0].name}"]
    (a,) = list(idle.args or [])
    assert (a["cause"], a["cause_kind"], a["cause_us"]) == (
        causes[0].name, causes[0].kind, us(causes[0].ns))


def test_three_gpus_get_a_track_per_pair() -> None:
    tl = frames.timeline(gpu=[frames.kernel(0, 10, device=d) for d in (0, 1, 2)])
    names = [t.name for t in tracks(tl) if t.process == OVERLAP_PROCESS]
    assert names == ["≥2 GPUs busy", "GPU 0 & GPU 1 both busy", "GPU 0 & GPU 2 both busy",
                     "GPU 1 & GPU 2 both busy"]


def test_no_host_calls_and_no_gpu() -> None:
    (idle,) = tracks(frames.timeline(gpu=[frames.kernel(0, 10), frames.kernel(20, 30)]))
    assert pieces(idle) == [(10, 20)] and list(idle.labels or []) == ["idle: Python (untraced)"]
    assert tracks(frames.timeline(cpu=[frames.op(0, 10)])) == []


def test_us_is_exact_text() -> None:
    enc = msgspec.json.Encoder(decimal_format="number")
    assert enc.encode([us(1234567), us(0), us(-1), us(1712195495519689047)]) == (
        b"[1234.567,0.000,-0.001,1712195495519689.047]")


def builder_trace() -> TraceBuilder:
    t = TraceBuilder()
    t.device_properties(0, 1)
    t.step(1, 0, 100)
    t.step(2, 100, 100)
    for i in range(10):
        t.launch("gemm<float>", cpu_ts=i * 20, cpu_dur=3, gpu_ts=i * 20 + 4, gpu_dur=9.5,
                 device=0, stream=7)
        t.kernel("k1", ts=i * 20 + 2, dur=8.25, device=1, stream=7)
        if i % 3 == 0:
            t.memcpy("Memcpy HtoD (Pinned -> Device)", ts=i * 20 + 1, dur=12, device=0,
                     stream=20)
    t.op("aten::item", ts=190, dur=15)
    t.runtime("cudaStreamSynchronize", ts=192, dur=10)
    return t


def figures(path: Path) -> dict[str, Any]:
    from traceprobe.load.pipeline import load
    from traceprobe.report import analyze

    d = analyze(load(path)).to_dict()
    d.pop("trace")
    return d


def test_the_copy_loads_back_with_the_same_figures(tmp_path: Path) -> None:
    from traceprobe.load.pipeline import load

    src = builder_trace().write(tmp_path / "t.json")
    out = tmp_path / "t.annotated.json.gz"
    write_annotated(annotate(load(src), src), out, source=src)

    text = gzip.decompress(out.read_bytes())
    doc = json.loads(text)  # valid JSON
    assert figures(out) == figures(src)
    added = [e for e in doc["traceEvents"] if e.get("cat") == CATEGORY]
    names = {e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e["name"] in ("process_name", "thread_name")}
    assert {OVERLAP_PROCESS, IDLE_PROCESS, "GPU 0 & GPU 1 both busy", "GPU 0 idle",
            "GPU 1 idle", "GPU 0 copy hidden under kernels", "GPU 0 ≥2 streams busy"} <= names
    assert added and all(e["ph"] == "X" and e["dur"] >= 0 for e in added)
    # the new rows are new processes, not the trace's own
    old_pids = {e["pid"] for e in builder_trace().events}
    assert not {e["pid"] for e in added} & old_pids
    # every original event is still there, unchanged and in order
    original = json.loads(src.read_text())["traceEvents"]
    assert doc["traceEvents"][: len(original)] == original


def test_timestamps_beyond_float_precision_stay_exact(tmp_path: Path) -> None:
    from traceprobe.load.pipeline import load

    # Epoch-based µs timestamps: float64 cannot hold them to the nanosecond.
    text = (
        '{"traceEvents": [\n'
        '{"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, '
        '"ts": 1712195495519689.047, "dur": 10.001, "args": {"device": 0, "stream": 7}},\n'
        '{"ph": "X", "cat": "kernel", "name": "b", "pid": 1, "tid": 7, '
        '"ts": 1712195495519693.123, "dur": 10.5, "args": {"device": 1, "stream": 7}}\n'
        '], "traceName": "x"}'
    )
    src = tmp_path / "epoch.json"
    src.write_text(text)
    out = tmp_path / "epoch.annotated.json"
    write_annotated(annotate(load(src), src), out, source=src)

    written = out.read_bytes()
    assert b'"ts": 1712195495519689.047, "dur": 10.001' in written  # originals byte for byte
    # both busy from 1712195495519693.123 to 1712195495519699.048 (a's end)
    assert b'"ts":1712195495519693.123,"dur":5.925' in written
    assert written.rstrip().endswith(b'"traceName":"x"}')  # top-level key order kept
    assert figures(out) == figures(src)


def test_writing_refuses_the_input_and_existing_files(tmp_path: Path) -> None:
    from traceprobe.load.pipeline import load

    src = builder_trace().write(tmp_path / "t.json")
    doc = annotate(load(src), src)
    with pytest.raises(OutputError, match="is an input"):
        write_annotated(doc, src, source=src, force=True)
    with pytest.raises(OutputError, match="is an input"):
        check_output(tmp_path / "." / "t.json", src, force=True)
    with pytest.raises(OutputError, match=r"\.json or \*\.json\.gz"):
        check_output(tmp_path / "t.txt", src)
    out = tmp_path / "a.json"
    out.write_text("keep")
    with pytest.raises(OutputError, match="--force"):
        write_annotated(doc, out, source=src)
    assert out.read_text() == "keep"
    write_annotated(doc, out, source=src, force=True)
    json.loads(out.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "t.json"]


def test_cli(tmp_path: Path) -> None:
    src = builder_trace().write(tmp_path / "t.json.gz")
    out = tmp_path / "out.json.gz"
    runner = CliRunner()

    first = runner.invoke(cli, ["annotate", str(src), "--output", str(out)])
    assert first.exit_code == 0, first.output
    assert f"wrote {out}" in first.output and "new tracks" in first.output
    json.loads(gzip.decompress(out.read_bytes()))

    again = runner.invoke(cli, ["annotate", str(src), "-o", str(out)])
    assert again.exit_code == 4
    assert "will not overwrite without --force" in again.output
    assert runner.invoke(cli, ["annotate", str(src), "-o", str(out), "--force"]).exit_code == 0
    over_input = runner.invoke(cli, ["annotate", str(src), "-o", str(src), "--force"])
    assert over_input.exit_code == 4 and "is an input" in over_input.output

    help_text = runner.invoke(cli, ["annotate", "--help"]).output
    assert "Example:" in help_text and "traceprobe annotate" in help_text


def tensorboard_load(path: Path, cache: Path) -> tuple[Any, bytes]:
    """What the TensorBoard plugin does with a trace: parse it into a run profile (the
    overview, kernel and operator views) and build the trace view's payload."""
    data_mod = pytest.importorskip("torch_tb_profiler.profiler.data")
    gen_mod = pytest.importorskip("torch_tb_profiler.profiler.run_generator")
    cache.mkdir(exist_ok=True)
    data = data_mod.RunProfileData.parse("worker0", "span", str(path), str(cache))
    profile = gen_mod.RunGenerator("worker0", "span", data).generate_run_profile()
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        raw = gzip.decompress(raw)
    return data, gzip.decompress(profile.append_gpu_metrics(raw))


@pytest.mark.filterwarnings("ignore:The copy keyword is deprecated")  # inside the plugin
def test_tensorboard_plugin_loads_the_copy(tmp_path: Path) -> None:
    pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler is not installed")
    from traceprobe.load.pipeline import load

    src = builder_trace().write(tmp_path / "w.pt.trace.json")
    out = tmp_path / "w.annotated.pt.trace.json"
    write_annotated(annotate(load(src), src), out, source=src)

    before, _ = tensorboard_load(src, tmp_path / "c1")
    after, trace_view = tensorboard_load(out, tmp_path / "c2")
    assert after.used_devices == before.used_devices == [0, 1]
    assert after.steps_names == before.steps_names == ["1", "2"]
    assert after.kernel_stat.equals(before.kernel_stat)
    assert after.gpu_metrics_parser.gpu_utilization == before.gpu_metrics_parser.gpu_utilization
    view = json.loads(trace_view)  # the trace view's JSON, as the plugin serves it
    assert any(e.get("cat") == CATEGORY for e in view["traceEvents"])
    assert {OVERLAP_PROCESS, IDLE_PROCESS} <= {
        e["args"]["name"] for e in view["traceEvents"] if e.get("name") == "process_name"}
    assert any(e.get("name") == "GPU 0 Utilization" for e in view["traceEvents"])


@pytest.mark.slow
def test_real_trace_round_trip(tmp_path: Path) -> None:
    if not BENCH.is_file():
        pytest.skip(f"{BENCH} not found")
    out = tmp_path / "bench.annotated.json.gz"
    result = CliRunner().invoke(cli, ["annotate", str(BENCH), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert figures(out) == figures(BENCH)
    doc = json.loads(gzip.decompress(out.read_bytes()))
    (idle_pid,) = [e["pid"] for e in doc["traceEvents"]
                   if e.get("ph") == "M" and e.get("args", {}).get("name") == IDLE_PROCESS]
    idle = [e for e in doc["traceEvents"] if e.get("cat") == CATEGORY and e["pid"] == idle_pid]
    assert len(idle) > 1000 and all(e["name"].startswith("idle: ") for e in idle)
    gaps_us = sum(e["dur"] for e in idle)
    # the gaps are the idle time over the whole span the tracks cover (the report's default
    # window is the profiled steps: a narrower one)
    from traceprobe.load.pipeline import load
    from traceprobe.metrics.devices import device_busy
    from traceprobe.metrics.grouping import Windows

    tl = load(BENCH)
    lo, hi = tl.span
    ((device,),) = device_busy(tl.gpu, tl.devices, Windows.one(lo, hi))
    assert gaps_us == pytest.approx(device.idle_ns / 1000, abs=0.5)
