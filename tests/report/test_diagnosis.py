"""Issue 10's diagnosis, checked against independent computations.

* the headlines name the main idle cause (the DataLoader of a DataLoader-bound loop, a stream
  synchronize); the idle partition itself, against a sweep of the written rule, is tested with
  metrics/idle.py in tests/metrics/test_idle.py;
* every committed trace: causes sum to <= idle, the step breakdown sums to each step;
* the DDP samples: no launch-bound stream, no NCCL launch counted as launch overhead;
* copy bandwidth = bytes / copy time, from the raw JSON.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from idletraces import DL, loop_trace, measure, raw, sync_trace
from tracebuild import TraceBuilder
from traceprobe.load import load
from traceprobe.report import analyze, check

SAMPLES = Path(__file__).resolve().parents[2] / "sample_traces"
ALL_TRACES = sorted(SAMPLES.glob("*/**/*.pt.trace.json.gz")) + sorted(
    (SAMPLES.parent / "bench").glob("*.pt.trace.json.gz"))  # the transformer recorded on an H200
GPU_LOOPS = sorted(SAMPLES.glob("h200*/examples/dataloader-loop/*.pt.trace.json.gz"))
CPU_LOOP = sorted(SAMPLES.glob("cpu/examples/dataloader-loop/*.pt.trace.json.gz"))


@cache
def _report(path: Path):
    r = analyze(load(path))
    check(r)
    return r


# --------------------------------------------------------------------------- the partition


def test_the_headline_names_the_dataloader_as_main_idle_cause(tmp_path: Path) -> None:
    """GIVEN the DataLoader-bound loop (its idle partition: tests/metrics/test_idle.py) THEN the
    first headline names the DataLoader as the main cause, with the idle share of the window."""
    path = loop_trace(tmp_path)
    r = analyze(load(path))
    check(r)
    (h,) = r.host.devices
    idle = h.idle_ns / 1000
    assert r.headlines[0].startswith(
        f"GPU 0 idle {100 * idle / 300:.1f}% of the window; main cause: the DataLoader ({DL}) ")


def test_the_headline_names_synchronization_as_main_idle_cause() -> None:
    """GIVEN a stream synchronize in the GPU's idle time (its partition: tests/metrics/test_idle.py)
    THEN a headline names synchronization, with its time and share of the idle time."""
    r = analyze(sync_trace())
    check(r)
    assert (
        "GPU 0 idle 69.2% of the window; main cause: synchronization 25 ns (55.6% of the idle "
        "time)" in r.headlines
    )


def test_regions_appear_in_the_step_breakdown(tmp_path: Path) -> None:
    r = analyze(load(loop_trace(tmp_path)))
    check(r)
    assert len(r.step_breakdown) == 3
    for b in r.step_breakdown:
        regions = {p.name: p.ns / 1000 for p in b.regions}
        assert regions == {DL: 60.0, "forward": 20.0, "backward": 15.0, "optimizer": 5.0}
        parts = {p.name: p.ns / 1000 for p in b.parts}
        # kernels [70,90) + [92,99) = 27; runtime: launches [62,64) [81,83), sync [96,99) minus
        # kernel time: 2 + 0 (under [70,90)) + 0 (under [92,99)) = 2; DataLoader 60; CPU exec:
        # the regions' time left, [60,62) + [64,70) + [90,92) + [99,100) = 11; nothing else
        assert (parts["kernel"], parts["runtime"], parts["dataloader"]) == (27.0, 2.0, 60.0)
        assert (parts["cpu_exec"], parts["other"]) == (11.0, 0.0)
        assert sum(p.ns for p in b.parts) == b.end_ns - b.start_ns


# --------------------------------------------------------------------------- committed traces


@pytest.mark.parametrize("path", ALL_TRACES, ids=lambda p: str(p.relative_to(SAMPLES.parent)))
def test_causes_and_breakdown_add_up_on_every_committed_trace(path: Path) -> None:
    r = _report(path)
    for h in r.host.devices:
        assert sum(c.ns for c in h.causes) <= h.idle_ns
    for b in r.step_breakdown:
        assert sum(p.ns for p in b.parts) == b.end_ns - b.start_ns
        assert sum(p.ns for p in b.regions) == b.end_ns - b.start_ns
    if len(r.steps) == 0 and not load(path).steps.empty:
        assert r.step_breakdown


DDP = sorted(SAMPLES.glob("*/ddp/train/*.pt.trace.json.gz"))


@pytest.mark.parametrize("path", DDP, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_ddp_has_no_launch_bound_stream_and_no_nccl_launch_overhead(path: Path) -> None:
    r = _report(path)
    assert not any(g.launch_bound for g in r.host.kernel_gaps)
    lat = r.host.launch_latency
    doc = raw(path)
    nccl = {e["args"]["correlation"] for e in doc["traceEvents"]
            if e.get("cat") == "kernel" and "nccl" in e["name"].lower()}
    if nccl:  # every NCCL launch onto an idle stream is counted as waiting, not overhead
        assert lat.waited_count >= 1
    assert lat.unqueued_count + lat.waited_count <= lat.count


COPIES = sorted(SAMPLES.glob("*/copy/*/*.pt.trace.json.gz"))


@pytest.mark.parametrize("path", COPIES, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_copy_bandwidth_is_bytes_over_copy_time(path: Path) -> None:
    r = _report(path)
    doc = raw(path)
    rows: dict[tuple[int, str], list[float]] = {}
    for e in doc["traceEvents"]:
        if e.get("cat") != "gpu_memcpy":
            continue
        direction = e["name"].split()[1]  # "Memcpy DtoH (Device -> Pinned)"
        acc = rows.setdefault((e["args"]["device"], direction), [0.0, 0.0])
        acc[0] += e["args"]["bytes"]
        acc[1] += e["dur"] * 1000  # ns
    assert rows or not r.copies
    for c in r.copies:
        nbytes, ns = rows[(c.device, c.direction)]
        assert c.bytes == nbytes
        assert c.ns == pytest.approx(ns, abs=1 * c.copies)  # µs fractions rounded to ns
        assert c.gb_per_s == pytest.approx(nbytes / ns, rel=1e-6)


def test_pageable_copy_is_called_out_with_the_fix() -> None:
    (path,) = sorted(SAMPLES.glob("h200x2/copy/blocking/*.pt.trace.json.gz"))
    r = _report(path)
    (c,) = r.copies
    assert c.pageable and c.link == "PCIe" and c.link_share < 0.05
    assert any("pin it (pin_memory)" in h for h in r.headlines)


# --------------------------------------------------------------------------- the example loop


@pytest.mark.parametrize("path", CPU_LOOP, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_cpu_recording_of_the_example_shows_its_regions(path: Path) -> None:
    r = _report(path)
    doc = raw(path)
    steps = [e for e in doc["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")]
    assert len(r.step_breakdown) == len(steps) >= 3
    for b in r.step_breakdown:
        s, e = b.start_ns / 1000, b.end_ns / 1000
        regions = {p.name: p.ns for p in b.regions}
        for name in ("forward", "backward", "optimizer", DL):
            assert name in regions
        # no region nests inside forward: its time is its own duration within the step
        fwd = [(x["ts"], x["ts"] + x["dur"]) for x in doc["traceEvents"]
               if x.get("name") == "forward" and s <= x["ts"] < e]
        assert regions["forward"] == pytest.approx(measure(fwd, [(s, e)]) * 1000, abs=2)
        dl = [(x["ts"], x["ts"] + x["dur"]) for x in doc["traceEvents"]
              if x.get("name") == DL and s <= x["ts"] < e]
        parts = {p.name: p.ns for p in b.parts}
        assert parts["dataloader"] == pytest.approx(measure(dl, [(s, e)]) * 1000, abs=2)


# --------------------------------------------------------------------------- compare


def test_compare_splits_a_copy_speedup_into_faster_and_hidden() -> None:
    """GIVEN A: 100 µs of copies, 20% hidden (80 exposed); B: 40 µs of copies, 75% hidden (10)
    THEN 70 µs saved = (100 - 40) * 0.8 = 48 from faster copies + 40 * (0.75 - 0.2) = 22 hidden."""
    from traceprobe.comparison import compare, copy_words

    def rep(copy_us: float, exposed_us: float, nbytes: int) -> dict:
        return {"trace": "t", "span_us": 1000.0, "gpu_span_us": 1000.0,
                "overlap": {"copy_compute": [{"device": 0, "direction": "all",
                                              "memcpy_us": copy_us, "exposed_us": exposed_us}]},
                "copies": [{"device": 0, "bytes": nbytes, "us": copy_us}]}

    result = compare(rep(100.0, 80.0, 10**6), rep(40.0, 10.0, 10**6))
    (c,) = result["copies"]
    assert c["exposed_saved_us"] == pytest.approx(70.0)
    assert (c["faster_us"], c["hidden_us"]) == (pytest.approx(48.0), pytest.approx(22.0))
    assert (c["a_gb_per_s"], c["b_gb_per_s"]) == (pytest.approx(10.0), pytest.approx(25.0))
    assert copy_words(result)[0].startswith("Copies on GPU 0: exposed copy time fell by 70")


def test_compare_blocking_and_side_stream_credits_faster_copies() -> None:
    from traceprobe.comparison import compare

    (a,) = sorted(SAMPLES.glob("h200x2/copy/blocking/*.pt.trace.json.gz"))
    (b,) = sorted(SAMPLES.glob("h200x2/copy/side-stream/*.pt.trace.json.gz"))
    (c,) = compare(_report(a).to_dict(), _report(b).to_dict())["copies"]
    assert c["faster_us"] + c["hidden_us"] == pytest.approx(c["exposed_saved_us"])
    assert c["faster_us"] > 10 * c["hidden_us"]  # pageable -> pinned, not hiding, did most


# --------------------------------------------------------------------------- runs vs ranks


def _rank_trace(path: Path, rank: int | None, world: int | None = 2) -> Path:
    t = TraceBuilder(**({"distributedInfo": {"rank": rank, "world_size": world}}
                        if rank is not None else {}))
    t.kernel("k", ts=0, dur=10, device=rank or 0)
    path.parent.mkdir(parents=True, exist_ok=True)
    return t.write(path)


@pytest.mark.parametrize(("ranks", "job"), [
    ((0, 1), True),  # distributedInfo: ranks 0 and 1 of 2, one folder
    ((None, None), False),  # no distributedInfo: separate runs
    ((0, 0), False),  # the same rank twice: two runs, not one job
])
def test_traces_are_ranks_of_one_job_only_when_the_trace_says_so(tmp_path: Path, ranks,
                                                                  job) -> None:
    from traceprobe.report import analyze_many

    paths = [_rank_trace(tmp_path / "run" / f"w{i}.1.pt.trace.json", r)
             for i, r in enumerate(ranks)]
    m = analyze_many([load(p) for p in paths])
    (run,) = m.runs
    assert (run.job, run.traces) == (job, (0, 1))
    assert bool(m.cross_trace.pairs) is job and not m.cross_trace.skipped


def test_ranks_in_different_folders_are_separate_runs(tmp_path: Path) -> None:
    from traceprobe.report import analyze_many

    paths = [_rank_trace(tmp_path / f"run{i}" / "w.1.pt.trace.json", i) for i in range(2)]
    m = analyze_many([load(p) for p in paths])
    assert [(r.folder.endswith(f"run{i}"), r.job) for i, r in enumerate(m.runs)] == [
        (True, False), (True, False)]
    assert m.cross_trace.pairs == () and m.to_dict()["runs"][0]["job"] is False


def test_csv_has_the_new_figures(tmp_path: Path) -> None:
    import pandas as pd

    from traceprobe.render.csv import write_csv

    path = loop_trace(tmp_path)
    tl = load(path)
    rep = analyze(tl)
    r = rep.to_dict()  # the figures the CSV is held to
    write_csv(tl, tmp_path / "csv", reports=[rep])
    b = pd.read_csv(tmp_path / "csv" / "step_breakdown.csv")
    parts = b[b["what"] == "part"]
    assert parts.groupby("step")["us"].sum().round(6).tolist() == [100.0] * 3
    c = pd.read_csv(tmp_path / "csv" / "idle_causes.csv", keep_default_na=False)
    top = c[c["parent"] == ""]
    assert top.iloc[0]["name"] == DL and top["us"].sum() <= r["host"]["devices"][0]["idle_us"]


LOOPS = sorted(SAMPLES.glob("*/examples/dataloader-loop/*.pt.trace.json.gz")) + sorted(
    SAMPLES.glob("h200/real-loops*/mnist-workers1/*.pt.trace.json.gz"))


@pytest.mark.parametrize("path", LOOPS, ids=lambda p: str(p.relative_to(SAMPLES)))
def test_dataloader_loops_have_no_launch_bound_stream(path: Path) -> None:
    r = _report(path)
    assert not any(g.launch_bound for g in r.host.kernel_gaps)
    assert not any("launch-bound" in h for h in r.headlines)


def test_the_eager_loop_of_tiny_kernels_is_launch_bound() -> None:
    """small-ops/loop (H200): 50 kernels of ~2 µs, each launched ~21 µs after the last."""
    r = _report(next(SAMPLES.glob("h200/small-ops/loop/*.pt.trace.json.gz")))
    (g,) = [g for g in r.host.kernel_gaps if g.launch_bound]
    assert g.host_late_gaps >= 10 and g.host_late_ns >= 0.1 * r.span_ns
    line = next(h for h in r.headlines if "launch-bound" in h)
    assert f"{g.host_late_gaps} of {g.gaps} gaps waited for the host" in line
    assert "of the window" in line
