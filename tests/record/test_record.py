"""The record wing, end to end on the CPU (and on a GPU where there is one).

One module-scoped run records every workload on the CPU (about 15-30 s on 2 cores);
most tests read what it wrote. GIVEN / WHEN / THEN in the names and docstrings.
"""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

torch = pytest.importorskip("torch")

from traceprobe.cli import cli  # noqa: E402
from traceprobe.record import meta, registry  # noqa: E402

META_FIELDS = {
    "schema",
    "workload",
    "variant",
    "claim",
    "devices_wanted",
    "devices_used",
    "fallback",
    "note",
    "machine",
    "torch",
    "cuda",
    "gpus",
    "scale",
    "sizes",
    "correct",
    "correct_detail",
    "facts",
    "profiler",
    "timing",
    "traces",
    "command",
    "argv",
    "hostname",
    "started",
    "recorded_s",
    "python",
    "traceprobe",
}
ALL_VARIANTS = [(w.name, v) for w in registry.WORKLOADS for v in w.variants]


def invoke(*args: str):
    return CliRunner().invoke(cli, ["record", *args], catch_exceptions=False)


def load_trace(path: Path) -> dict:
    with gzip.open(path, "rt") as f:
        return json.load(f)


def traces_in(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.pt.trace.json.gz"))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """GIVEN every workload recorded on the CPU into a fresh folder."""
    out = tmp_path_factory.mktemp("rec") / "out"
    result = invoke("--out", str(out), "--device", "cpu", "--no-progress")
    assert result.exit_code == 0, result.output
    return out, result.output


def test_layout_one_complete_folder_per_variant(recorded):
    out, _ = recorded
    for name, variant in ALL_VARIANTS:
        folder = out / name / variant
        assert (folder / meta.FILENAME).is_file(), folder
        assert traces_in(folder), folder
    hidden = [p for p in out.rglob(".*")]
    assert hidden == [], "temporary folders or files left behind"
    assert sorted(p.name for p in out.iterdir()) == sorted(w.name for w in registry.WORKLOADS)


def test_traces_are_gzipped_chrome_json_with_profiler_steps(recorded):
    out, _ = recorded
    for name, variant in ALL_VARIANTS:
        for path in traces_in(out / name / variant):
            trace = load_trace(path)
            names = [e.get("name", "") for e in trace["traceEvents"]]
            assert any(n.startswith("ProfilerStep#") for n in names), path
            assert "aten::mm" in names or "aten::addmm" in names, path


def test_metadata_has_the_documented_fields(recorded):
    out, _ = recorded
    for name, variant in ALL_VARIANTS:
        m = meta.read(out / name / variant / meta.FILENAME)
        assert META_FIELDS <= m.keys(), META_FIELDS - m.keys()
        assert (m["schema"], m["workload"], m["variant"]) == (meta.SCHEMA, name, variant)
        assert m["torch"] == torch.__version__
        assert m["claim"] == registry.get(name).claim_of(variant)
        assert m["sizes"] and m["scale"] == "small"
        prof, timing = m["profiler"], m["timing"]
        assert prof["activities"] == ["CPU"]
        assert len(timing["profiled"]["active_step_wall_s"]) == prof["profiled_steps"]
        assert len(timing["profiled"]["steps"]) == prof["steps_run"]
        assert timing["plain"]["steps"] == 3 and timing["plain"]["mean_s"] > 0
        assert timing["profiler_overhead"] > 0
        on_disk = sorted(p.name for p in traces_in(out / name / variant))
        assert sorted(t["file"] for t in m["traces"]) == on_disk
        assert m["command"][:2] == ["traceprobe", "record"]


def test_trace_step_covers_the_host_wall_time_of_the_step(recorded):
    """THEN each ProfilerStep in the trace lasts at least the step's measured wall time."""
    out, _ = recorded
    m = meta.read(out / "two-devices" / "parallel" / meta.FILENAME)
    (path,) = traces_in(out / "two-devices" / "parallel")
    (step,) = [
        e
        for e in load_trace(path)["traceEvents"]
        if e.get("name", "").startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation"
    ]
    (wall,) = m["timing"]["profiled"]["active_step_wall_s"]
    assert step["dur"] / 1e6 >= wall * 0.95 - 1e-3


def test_cpu_fallback_says_so_on_stdout_and_in_metadata(recorded):
    out, output = recorded
    m = meta.read(out / "two-devices" / "parallel" / meta.FILENAME)
    assert m["devices_wanted"] == ["cuda:0", "cuda:1"]
    assert m["devices_used"] == ["cpu", "cpu"]
    assert m["fallback"] is True
    assert "CPU fallback" in m["note"]
    assert output.count("note:") >= len(ALL_VARIANTS)  # every variant wants a GPU


def test_results_are_checked_and_correct(recorded):
    out, _ = recorded
    for name, variant in [
        ("dag", "serial"),
        ("dag", "two-streams"),
        ("copy", "side-stream"),
        ("mlp", "data-parallel"),
        ("ddp", "train"),
    ]:
        m = meta.read(out / name / variant / meta.FILENAME)
        assert m["correct"] is True, (name, variant, m["correct_detail"])
    assert meta.read(out / "two-devices" / "parallel" / meta.FILENAME)["correct"] is None


def test_scheduled_uses_its_own_schedule(recorded):
    out, _ = recorded
    folder = out / "scheduled" / "both-devices"
    m = meta.read(folder / meta.FILENAME)
    assert m["profiler"]["schedule"] == {"wait": 1, "warmup": 1, "active": 3, "repeat": 1}
    assert m["profiler"]["schedule_from"] == "workload"
    assert [s["phase"] for s in m["timing"]["profiled"]["steps"]] == [
        "wait",
        "warmup",
        "active",
        "active",
        "active",
    ]
    (path,) = traces_in(folder)
    steps = sorted(
        e["name"]
        for e in load_trace(path)["traceEvents"]
        if e.get("name", "").startswith("ProfilerStep#")
    )
    assert steps == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]


def test_ddp_writes_one_trace_per_rank(recorded):
    out, _ = recorded
    folder = out / "ddp" / "train"
    paths = traces_in(folder)
    assert len(paths) == 2
    ranks = sorted(load_trace(p)["distributedInfo"]["rank"] for p in paths)
    assert ranks == [0, 1]
    m = meta.read(folder / meta.FILENAME)
    assert [r["rank"] for r in m["ranks"]] == [0, 1]
    assert sorted(t["rank"] for t in m["traces"]) == [0, 1]
    assert m["facts"]["backend"] == "gloo"
    assert "2 ranks on the CPU with gloo" in m["note"]
    assert not list(folder.glob("_rank*.json"))


def test_refuses_a_non_empty_folder_without_force_and_replaces_only_what_is_recorded(tmp_path):
    out = tmp_path / "out"
    assert (
        invoke(
            "independent-ops/single",
            "small-ops/loop",
            "--out",
            str(out),
            "--device",
            "cpu",
            "--no-progress",
        ).exit_code
        == 0
    )
    kept = out / "small-ops" / "loop"
    kept_files = {p.name: p.stat().st_mtime_ns for p in kept.iterdir()}
    before = traces_in(out / "independent-ops" / "single")

    # WHEN recording again without --force THEN refused, nothing touched
    result = invoke("independent-ops/single", "--out", str(out), "--device", "cpu", "--no-progress")
    assert result.exit_code == 4
    refusal = f"Output folder already exists, will not overwrite without --force: {out}"
    assert refusal in result.output
    assert traces_in(out / "independent-ops" / "single") == before

    # WHEN with --force THEN that variant is new and the other untouched
    result = invoke(
        "independent-ops/single", "--out", str(out), "--device", "cpu", "--no-progress", "--force"
    )
    assert result.exit_code == 0, result.output
    after = traces_in(out / "independent-ops" / "single")
    assert len(after) == 1 and after != before
    assert {p.name: p.stat().st_mtime_ns for p in kept.iterdir()} == kept_files
    assert not list(out.rglob(".*"))


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_interrupt_leaves_no_half_written_folder(tmp_path, monkeypatch, how):
    """GIVEN a finished recording WHEN a --force re-record is interrupted mid-trace
    THEN the old folder is intact and no temporary folder is left."""
    from traceprobe.record import record, runner

    out = tmp_path / "out"
    record(
        ["independent-ops/single"],
        out,
        runner.Options(device="cpu"),
        progress=False,
        echo=lambda s: None,
    )
    old = sorted(p.name for p in (out / "independent-ops" / "single").iterdir())
    real = runner.measure

    def interrupted(step, gpus, schedule, options, trace_dir, worker, bar=None):
        real(step, gpus, schedule, options, trace_dir, worker, bar)  # writes a trace
        (trace_dir / "partial.pt.trace.json.gz").write_bytes(b"\x1f\x8b")
        if how == "sigterm":
            os.kill(os.getpid(), signal.SIGTERM)
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "measure", interrupted)
    with pytest.raises(KeyboardInterrupt):
        record(
            ["independent-ops", "dag"],
            out,
            runner.Options(device="cpu"),
            force=True,
            progress=False,
            echo=lambda s: None,
        )
    assert sorted(p.name for p in (out / "independent-ops" / "single").iterdir()) == old
    assert sorted(p.name for p in out.iterdir()) == ["independent-ops"]
    assert not list(out.rglob(".*"))
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_list_prints_the_registry():
    result = invoke("--list")
    assert result.exit_code == 0
    for w in registry.WORKLOADS:
        assert w.name in result.output and w.claim in result.output
        assert ", ".join(w.variants) in result.output


def test_unknown_workload_is_a_usage_error_listing_the_valid_ones(tmp_path):
    result = invoke("nope", "--out", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert "Unknown workload 'nope'" in result.output
    assert ", ".join(registry.names()) in result.output
    assert not (tmp_path / "o").exists()


def test_unknown_variant_is_a_usage_error(tmp_path):
    result = invoke("dag/nope", "--out", str(tmp_path / "o"), "--device", "cpu")
    assert result.exit_code == 2
    assert "no variant 'nope'" in result.output


def test_torch_missing_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch -> ImportError
    result = invoke("dag", "--out", str(tmp_path / "o"))
    assert result.exit_code == 5
    assert "torch is not installed: pip install 'traceprobe[record]'" in result.output
    assert not (tmp_path / "o").exists()


def test_cli_module_and_list_do_not_import_torch():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import traceprobe.cli.record\n"
        "from traceprobe.cli import main\n"
        "sys.exit(main(['record', '--list']))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "two-devices" in proc.stdout


def test_help_has_an_example():
    result = invoke("--help")
    assert result.exit_code == 0
    assert "Example:" in result.output and "--force" in result.output


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_gpu_record_small(tmp_path):
    """GIVEN a GPU WHEN recording small sizes on it THEN the traces hold GPU kernels."""
    out = tmp_path / "out"
    result = invoke(
        "two-devices",
        "copy",
        "dag",
        "ddp",
        "--out",
        str(out),
        "--device",
        "cuda",
        "--scale",
        "small",
        "--no-progress",
    )
    assert result.exit_code == 0, result.output
    m = meta.read(out / "two-devices" / "parallel" / meta.FILENAME)
    assert m["profiler"]["activities"] == ["CPU", "CUDA"]
    assert m["timing"]["profiled"]["cuda_event_ms"]
    (path,) = traces_in(out / "two-devices" / "parallel")
    kernels = [e for e in load_trace(path)["traceEvents"] if e.get("cat") == "kernel"]
    assert kernels
    wanted_gpus = torch.cuda.device_count() >= 2
    assert (m["note"] is None) == wanted_gpus
    assert meta.read(out / "dag" / "two-streams" / meta.FILENAME)["correct"] is True
    assert meta.read(out / "copy" / "side-stream" / meta.FILENAME)["facts"]["dest_pinned"] is True
    assert len(traces_in(out / "ddp" / "train")) == torch.cuda.device_count()


def test_select_expands_names_and_keeps_registry_order():
    picked = registry.select(["dag/two-streams", "copy"])
    assert [(w.name, v) for w, v in picked] == [
        ("copy", "blocking"),
        ("copy", "nonblocking-same-stream"),
        ("copy", "side-stream"),
        ("dag", "two-streams"),
    ]
    assert len(registry.select([])) == len(ALL_VARIANTS)


def test_schedule_phases_match_torch_profiler_schedule():
    from traceprobe.record.runner import phase_of

    s = registry.Schedule(wait=1, warmup=1, active=2, repeat=2)
    assert s.steps == 8
    phases = [phase_of(i, s) for i in range(s.steps)]
    assert phases == ["wait", "warmup", "active", "active"] * 2
    torch_schedule = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=2)
    names = {"NONE": "wait", "WARMUP": "warmup", "RECORD": "active", "RECORD_AND_SAVE": "active"}
    assert [names[torch_schedule(i).name] for i in range(s.steps)] == phases


def test_device_plan_on_a_machine_without_gpus_notes_the_fallback():
    from traceprobe.record import devices

    plan = devices.plan(("cpu", "cuda:0", "cuda:1"), devices.Machine("cpu", 0))
    assert plan.used == ["cpu", "cpu", "cpu"] and plan.fallback and plan.cuda == []
    assert "wanted 2 GPUs (cuda:0, cuda:1)" in plan.note
    one_gpu = devices.plan(("cuda:0", "cuda:1"), devices.Machine("cuda", 1))
    assert one_gpu.used == ["cuda:0", "cuda:0"] and not one_gpu.fallback
    assert "this run has 1 GPU" in one_gpu.note
    assert devices.plan(("cuda:0", "cuda:1"), devices.Machine("cuda", 2)).note is None


def test_record_path_works_without_msgspec(tmp_path):
    """The GPU machine has no msgspec: record and the summary must not import it."""
    out = tmp_path / "o"
    code = (
        "import sys; sys.modules['msgspec'] = None\n"
        "from traceprobe.cli import main\n"
        f"rc = main(['record', 'small-ops/run', '--out', {str(out)!r}, '--device', 'cpu',\n"
        "           '--no-progress', '--plain-steps', '1'])\n"
        "from traceprobe.record import meta\n"
        f"print(meta.summarize(__import__('pathlib').Path({str(out)!r})))\n"
        "sys.exit(rc)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 variant(s); traces" in proc.stdout
