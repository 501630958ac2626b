"""The real training loops (sample_traces/h200/real-loops-3, the newest recording, whose
traces carry the recorder's unprofiled host time): docs/WHATIF.md's "Real training loops"
table against the recordings, and the period against the unprofiled timing.

Each number of the table is recomputed here another way: the measured times from the
timing.json files, the kernel factors F from the raw trace JSON (no traceprobe loader), the
prediction through the public ``whatif`` API, the error from the table's own cells."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
import statistics
import sys
from pathlib import Path

import pytest

from traceprobe.graph import whatif
from traceprobe.load import load

REPO = Path(__file__).resolve().parents[2]
REAL = REPO / "sample_traces" / "h200" / "real-loops-3"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="real-loop recordings not present")


def _table_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("whatif_table", REPO / "scripts" /
                                                  "whatif_table.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["whatif_table"] = mod
    spec.loader.exec_module(mod)
    return mod


def _timing(variant: str) -> float:
    return json.loads((REAL / variant / "timing.json").read_text())["ms_per_step_median"]


def _trace(variant: str) -> Path:
    return next((REAL / variant).glob("*.pt.trace.json*"))


def _raw_kernel_ms_per_step(path: Path, rx: str) -> float:
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    steps = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
                and str(e.get("name", "")).startswith("ProfilerStep#"))
    total = sum(float(e["dur"]) for e in events if e.get("ph") == "X" and e.get("cat") ==
                "kernel" and re.search(rx, str(e.get("name", ""))))
    return total / steps / 1000


def _section(title: str) -> str:
    text = (REPO / "docs" / "WHATIF.md").read_text()
    return text.split(title, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def _rows(title: str = "## Real training loops") -> list[list[str]]:
    return [[c.strip() for c in line.split("|")[1:-1]] for line in _section(title).splitlines()
            if line.startswith("| `")]


def _ms(cell: str) -> float:
    assert cell.endswith(" ms"), cell
    return float(cell.split()[0])


def _pct(cell: str) -> float:
    assert cell.endswith("%"), cell
    return float(cell[:-1])


def _error_holds(pred: float, meas: float, err: float) -> None:
    slack = 100 * (0.005 / meas + 0.005 * pred / meas**2) + 0.06  # cells rounded to 0.01 ms
    assert abs(err - (pred - meas) / meas * 100) < slack


def _median_period(res) -> float:  # type: ignore[no-untyped-def]
    return statistics.median(w.predicted_period_us for w in res.windows) / 1000


def test_the_table_has_every_pair_and_its_numbers_hold() -> None:
    mod = _table_module()
    rows = _rows()
    assert len(rows) == len(mod.REAL_PAIRS)
    for cells, pair in zip(rows, mod.REAL_PAIRS, strict=True):
        slow, scen, fast, slow_ms, period, pred, meas, err, speed, mspeed = cells[:10]
        assert (slow, fast) == (f"`{pair.slow}`", f"`{pair.fast}`")
        assert _ms(slow_ms) == pytest.approx(_timing(pair.slow), abs=0.006)
        assert _ms(meas) == pytest.approx(_timing(pair.fast), abs=0.006)
        scenario = scen.strip("`")
        if pair.kernels:  # F: the matching kernels' time per step, slow over fast
            f = _raw_kernel_ms_per_step(_trace(pair.slow), pair.kernels) / \
                _raw_kernel_ms_per_step(_trace(pair.fast), pair.kernels)
            shown = float(scenario.rsplit("=", 1)[1])
            assert shown == pytest.approx(f, rel=0.006)
            scenario = f"kernels:{pair.kernels}={shown:g}"
        tl = load(_trace(pair.slow))
        # the main column: what `traceprobe whatif` predicts by default (profiler removed,
        # calibrated on the trace's measured host time: tests/graph/test_calibrate.py)
        assert "calibrated on the recorder's" in " ".join(
            whatif(tl, ["no-profiler"], step=None).notes)
        main = whatif(tl, ["no-profiler", scenario], step="all")
        assert _ms(pred) == pytest.approx(_median_period(main), abs=0.006)
        assert _ms(period) == pytest.approx(
            statistics.median(w.period_us for w in main.windows) / 1000, abs=0.006)
        null = _median_period(whatif(tl, ["no-profiler"], step="all"))
        assert float(speed[:-1]) == pytest.approx(null / _ms(pred), rel=0.01)
        assert float(mspeed[:-1]) == pytest.approx(_timing(pair.slow) / _timing(pair.fast),
                                                   abs=0.006)
        # the comparison column: the profiler's cost estimated from the events alone (the
        # estimate by the slow sweep below)
        est = _slow_profiler_cost(_trace(pair.slow))
        alone = _median_period(whatif(tl, [f"no-profiler:{est:g}", scenario], step="all"))
        assert _ms(cells[12]) == pytest.approx(alone, abs=0.006)
        _error_holds(_ms(pred), _ms(meas), _pct(err))
        _error_holds(_ms(cells[12]), _ms(meas), _pct(cells[13]))


def _raw_cpu_by_thread(path: Path) -> dict[tuple[object, object], list[tuple[int, int]]]:
    """The trace's CPU events wholly inside its ProfilerSteps, (start, end) ns per thread,
    from the raw JSON (no traceprobe loader)."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    cpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in
           ("cpu_op", "cuda_runtime", "cuda_driver", "user_annotation")]
    steps = [e for e in cpu if e["cat"] == "user_annotation"
             and str(e["name"]).startswith("ProfilerStep#")]
    lo = min(round(float(e["ts"]) * 1000) for e in steps)
    hi = max(round((float(e["ts"]) + float(e["dur"])) * 1000) for e in steps)
    out: dict[tuple[object, object], list[tuple[int, int]]] = {}
    for e in cpu:
        s = round(float(e["ts"]) * 1000)
        t = round((float(e["ts"]) + float(e["dur"])) * 1000)
        if lo <= s and t <= hi:
            out.setdefault((e["pid"], e["tid"]), []).append((s, t))
    return out


def _slow_profiler_cost(path: Path) -> float:
    """docs/FIGURES.md's estimate by a plain sweep: every thread's boundaries in time order
    (an end before a start at equal times), the intervals between two starts and between two
    ends, their medians summed."""
    ss: list[int] = []
    ee: list[int] = []
    for evs in _raw_cpu_by_thread(path).values():
        marks = sorted([(s, 1) for s, _ in evs] + [(t, 0) for _, t in evs])
        for (t0, k0), (t1, k1) in zip(marks, marks[1:], strict=False):
            if k0 == k1 == 1:
                ss.append(t1 - t0)
            elif k0 == k1 == 0:
                ee.append(t1 - t0)
    return statistics.median(ss) + statistics.median(ee) if min(len(ss), len(ee)) >= 20 else 0


def test_the_null_table_has_every_variant_and_its_numbers_hold() -> None:
    """The profiler's cost, estimated and calibrated, checked on every real loop: each
    variant's own trace replayed unchanged under no-profiler against its own unprofiled
    ms/step."""
    from traceprobe.graph.build import build
    from traceprobe.graph.calibrate import host_span_ns

    rows = _rows("### The profiler's own cost, checked on every loop")
    timed = sorted(d.name for d in REAL.iterdir() if (d / "timing.json").is_file()
                   and json.loads((d / "timing.json").read_text())["ms_per_step_median"])
    assert [c[0].strip("`") for c in rows] == timed and len(timed) >= 11
    for v, meas, host, period, err_kept, ns, pred, err, cal_ns, cal, err_cal in rows:
        v = v.strip("`")
        timing = json.loads((REAL / v / "timing.json").read_text())
        assert _ms(meas) == pytest.approx(_timing(v), abs=0.006)
        assert _ms(host) == pytest.approx(timing["host_ms_per_step_median"], abs=0.006)
        assert float(ns.split()[0]) == pytest.approx(_slow_profiler_cost(_trace(v)), abs=1.5)
        tl = load(_trace(v))
        res = whatif(tl, [f"no-profiler:{float(ns.split()[0]):g}"], step="all")
        assert _ms(pred) == pytest.approx(_median_period(res), abs=0.01)
        assert _ms(period) == pytest.approx(
            statistics.median(w.period_us for w in res.windows) / 1000, abs=0.006)
        _error_holds(_ms(pred), _ms(meas), _pct(err))
        _error_holds(_ms(period), _ms(meas), _pct(err_kept))
        # calibrated: the default; at the shown NS the host span (GPU instant) is the
        # measured host time, unless the NS is the cap
        assert _ms(cal) == pytest.approx(_median_period(whatif(tl, ["no-profiler"], step="all")),
                                         abs=0.006)
        shown = float(cal_ns.split()[0])
        span = host_span_ns(build(tl), shown) / 1e6
        if "capped" in cal_ns:
            assert span > timing["host_ms_per_step_median"]
        else:
            assert span == pytest.approx(timing["host_ms_per_step_median"], rel=0.002)
        _error_holds(_ms(cal), _ms(meas), _pct(err_cal))
    summary = _section("### The profiler's own cost, checked on every loop")
    errs = [abs(_pct(c[7])) for c in rows]
    cals = [abs(_pct(c[10])) for c in rows]
    assert (f"Estimate removed: {sum(e <= 20 for e in errs)} of {len(rows)} variants within "
            f"20%, median |error| {statistics.median(errs):.1f}%. Calibrated: "
            f"{sum(e <= 20 for e in cals)} of {len(rows)} within 20%, median |error| "
            f"{statistics.median(cals):.1f}%") in summary
    kept = [abs(_pct(c[4])) for c in rows]
    assert statistics.median(cals) < statistics.median(errs) < statistics.median(kept)
    assert (f"median error is {statistics.median(errs):.1f}% against "
            f"{statistics.median(kept):.1f}% kept") in summary


def test_the_loader_stages_the_workers_do_not_divide() -> None:
    """The per-batch DataLoader work N workers do not divide, as the table's note gives it:
    in mnist-workers1, the pin-memory thread's last event (the thread without launches,
    not the main one) to the main thread's `__next__` end; in mnist-workers8, the main
    thread's `__next__` (its batches were ready). From the raw JSON."""
    def raw(v: str) -> list[dict]:
        return [e for e in json.loads(gzip.decompress(_trace(v).read_bytes()))["traceEvents"]
                if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "cuda_runtime",
                                                           "cuda_driver", "user_annotation")]
    ev = raw("mnist-workers1")
    nxt = [e for e in ev if "DataLoader" in e["name"] and e["name"].endswith("__next__")]
    main = {e["tid"] for e in nxt}
    launching = {e["tid"] for e in ev if "LaunchKernel" in e["name"]}
    other = [e for e in ev if e["tid"] not in main | launching]
    waits = []
    for n in nxt:
        end = n["ts"] + n["dur"]
        inside = [o["ts"] + o["dur"] for o in other if o["ts"] >= n["ts"]
                  and o["ts"] + o["dur"] <= end]
        if inside:
            waits.append((end - max(inside)) / 1000)
    n8 = [e["dur"] / 1000 for e in raw("mnist-workers8") if "DataLoader" in e["name"]
          and e["name"].endswith("__next__")]
    text = _section("## Real training loops")
    m = re.search(r"main thread's receipt of the batch, ([\d.]+) ms.*?`__next__` when the "
                  r"batch is ready, ([\d.]+) ms", text)
    assert m, "the DataLoader note is missing"
    assert float(m.group(1)) == pytest.approx(statistics.median(waits), abs=0.006)
    assert float(m.group(2)) == pytest.approx(statistics.median(n8), abs=0.0006)
    # both small against the step they would bound: the fast variant's, measured
    row = next(c for c in _rows() if c[0] == "`mnist-workers1`")
    assert max(float(m.group(1)), float(m.group(2))) < 0.1 * _ms(row[6])


def test_the_resnet_notes_count_the_launches_from_the_traces() -> None:
    """The cuDNN caveat's kernels and runtime calls per step, from the raw JSON: kernels
    whose launch call lies inside the steps' window, over the number of steps."""
    for cells in _rows():
        if not cells[0].startswith("`resnet"):
            continue
        m = re.search(r"launched (\d+) kernels per step against fp32's (\d+), with (\d+) "
                      r"runtime calls against (\d+)", cells[11])
        assert m, cells[11]
        for v, k, r in ((cells[2], m.group(1), m.group(3)), (cells[0], m.group(2), m.group(4))):
            path = _trace(v.strip("`"))
            events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
            n = sum(1 for e in events if e.get("cat") == "user_annotation"
                    and str(e.get("name", "")).startswith("ProfilerStep#"))
            inside = _raw_calls(path)
            calls = set(inside)
            kernels = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == "kernel"
                          and e.get("args", {}).get("correlation") in calls)
            assert (int(k), int(r)) == (round(kernels / n), round(len(inside) / n))


def _raw_calls(path: Path) -> list[int]:
    """Correlation ids of the runtime and driver calls wholly inside the steps' window."""
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    steps = [e for e in events if e.get("ph") == "X" and e.get("cat") == "user_annotation"
             and str(e.get("name", "")).startswith("ProfilerStep#")]
    lo = min(float(e["ts"]) for e in steps)
    hi = max(float(e["ts"]) + float(e["dur"]) for e in steps)
    return [e["args"].get("correlation") for e in events if e.get("ph") == "X"
            and e.get("cat") in ("cuda_runtime", "cuda_driver") and float(e["ts"]) >= lo
            and float(e["ts"]) + float(e["dur"]) <= hi]


# the rows that meet the 20% goal today: a regression in the model shows here
WITHIN = {("transformer-fp32", "kernels", "transformer-tf32"),
          ("transformer-fp32", "precision", "transformer-tf32"),
          ("transformer-fp32", "kernels", "transformer-bf16"),
          ("transformer-fp32", "precision", "transformer-bf16"),
          ("transformer-tf32-item", "no-host-sync", "transformer-tf32"),
          ("mlp-eager", "cuda-graph", "mlp-graph")}
# (the misses, mnist and resnet, are the pairs whose measured speedup itself spread by more
# than 20% over the recordings: tests/graph/test_real_loops_again.py)


def test_predictions_within_twenty_percent_of_the_unprofiled_runs() -> None:
    rows = {(c[0].strip("`"), c[1].strip("`").split(":")[0], c[2].strip("`")): _pct(c[7])
            for c in _rows()}
    for key in WITHIN:
        assert abs(rows[key]) <= 20, (key, rows[key])


@pytest.mark.parametrize(("variant", "rel"), [("transformer-fp32", 0.05), ("mlp-graph", 0.1)])
def test_a_gpu_bound_loops_period_is_its_unprofiled_step(variant: str, rel: float) -> None:
    """GIVEN a loop the GPU bounds (no sync: the profiled host's markers run ahead of it) THEN
    the period (the GPU work each step launched) is the unprofiled ms/step, which the host
    markers are not (transformer-fp32: ~20-34 ms of markers against 46.6 ms)."""
    res = whatif(load(_trace(variant)), [], step="all")
    assert all(w.gpu_bound for w in res.windows[1:])
    period = statistics.median(w.period_us for w in res.windows) / 1000
    assert period == pytest.approx(_timing(variant), rel=rel)
    assert statistics.median(w.measured_us for w in res.windows) / 1000 < 0.8 * _timing(variant)
