"""Predicted vs measured step time on the recorded GPU samples: writes docs/WHATIF.md.

    PYTHONPATH=. python scripts/whatif_table.py [--write docs/WHATIF.md] [--roots DIR ...]

For each pair (a serial variant, the scenarios that describe the change, the variant that
makes the change for real), it replays the serial variant's trace under the scenarios with
``traceprobe.graph.whatif`` and compares the predicted step time with the measured step of
the parallel variant (mean over each trace's steps). Each variant is looked up in the roots
in order (default: sample_traces/h200, then sample_traces/h200x2); a pair is taken from
the first root that has both sides, else its sides from wherever each is. A row whose
measured variant was not recorded yet says so (scripts/gpu/whatif.sh records it).

The whole of docs/WHATIF.md is this script's output: never edit it by hand.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from traceprobe.graph import whatif  # noqa: E402
from traceprobe.graph.scenarios import PROFILER, unprofiled  # noqa: E402
from traceprobe.load import find_traces, load  # noqa: E402

ROOTS = ("sample_traces/h200", "sample_traces/h200x2")
GOAL_ROW, GOAL_MEDIAN = 0.10, 0.05
REAL = "sample_traces/h200/real-loops-3"  # the newest recording: its traces carry host_ms
REAL_ROW, REAL_MEDIAN = 0.20, 0.10
GEMMS = "gemm|xmma|cutlass|nvjet|fmha|flash"  # matrix-multiply and attention kernels
CONVS = "gemm|xmma|cudnn|conv|grad|fprop|nchw|nhwc"  # cuDNN's convolution kernels too


@dataclass(frozen=True)
class Pair:
    base: str
    scenarios: tuple[str, ...]
    target: str
    why_if_miss: str  # what the model cannot see here, said only when the row misses


PAIRS = (
    Pair("copy/nonblocking-same-stream", ("copies-on-side-stream",), "copy/side-stream",
         "the copies' producers are inferred by position, and the side stream's copies of "
         "the real variant wait on events the model does not replay"),
    Pair("two-devices/sequential", ("no-host-sync",), "two-devices/parallel",
         "the second GPU's launches are host-bound differently once they overlap the first's"),
    Pair("cpu-gpu/serial", ("no-host-sync", "copies-on-side-stream"), "cpu-gpu/overlapped",
         "the host's own work stays in the serial program's order (only the copies are "
         "re-issued with their producers); the overlapped program's host differs otherwise"),
    Pair("dag/serial", ("spread:^(?!.*gemm)=2",), "dag/two-streams",
         "the real variant's branches are not independent (C waits for B); spread asserts "
         "they are"),
    Pair("small-ops/loop", ("no-launch-overhead",), "small-ops/cuda-graph",
         "the likely cause (not yet checked against a recording): a graph replay has its "
         "own fixed host cost (cudaGraphLaunch) and GPU gaps between "
         "graph nodes that differ from the eager queue gap the model assumes"),
    Pair("independent-ops/one-stream", ("spread:gemm=4",), "independent-ops/many-streams",
         "the likely cause (not yet checked against a recording): the stream joins and the "
         "side streams' event waits cost launch time the model does "
         "not add"),
)


@dataclass(frozen=True)
class RealPair:
    slow: str
    scenario: str  # "{F}" is the kernel-level factor, from the two traces (see REAL_HEAD)
    fast: str
    why_if_miss: str
    kernels: str = ""  # the regular expression whose kernels' time gives F
    caveat: str = ""  # what the trace cannot show about this change, said on every outcome


_HOST_SHORT = (
    "the predicted step is set by the host (or by GPU work that waits for its launches), "
    "whose unprofiled time is the profiled host's less the profiler's cost: calibrated on the "
    "recorder's measured host time where the trace carries it, else estimated from the "
    "events, which falls short on loops the host bounds (table below)")
_CUDNN = (
    "cuDNN's choice of convolution algorithms at the new precision is not in the fp32 trace: "
    "with `cudnn.benchmark` the {fast} loop launched {k_fast} kernels per step against "
    "fp32's {k_slow}, with {r_fast} runtime calls against {r_slow} (their traces), and ran "
    "slower than fp32, while the "
    "prediction keeps fp32's kernels, only faster; it is the gain if the kernels stayed the "
    "same, and the `kernels:`/`precision:` output says so")

REAL_PAIRS = (
    RealPair("mnist-workers1", "dataloader:workers=8", "mnist-workers8",
             "what eight workers cost is not in the one-worker trace: the workers' processes "
             "are not profiled and the host's core count is not recorded. Unprofiled, eight "
             "workers delivered a batch every {fast_ms:.1f} ms (each taking about "
             "{per_worker:.0f} ms per batch against {slow_ms:.0f} ms alone: they contend for "
             "the host's cores), while F / N assumes {slow_ms:.0f} / 8 = {fn:.1f} ms. The "
             "per-batch stage that does not divide by N and that the trace does show, the "
             "pin-memory thread's call to the main thread's receipt of the batch, is too small "
             "to explain the miss (below)"),
    RealPair("transformer-fp32", f"kernels:{GEMMS}={{F}}", "transformer-tf32",
             _HOST_SHORT, kernels=GEMMS),
    RealPair("transformer-fp32", f"kernels:{GEMMS}={{F}}", "transformer-bf16",
             "bf16 makes every kernel faster and the step host-bound: " + _HOST_SHORT,
             kernels=GEMMS),
    RealPair("transformer-fp32", "precision:tf32", "transformer-tf32", _HOST_SHORT),
    RealPair("transformer-fp32", "precision:bf16", "transformer-bf16",
             "as with `kernels:GEMMS=F`: " + _HOST_SHORT),
    RealPair("transformer-tf32-item", "no-host-sync", "transformer-tf32", _HOST_SHORT),
    RealPair("mlp-eager", "cuda-graph", "mlp-graph",
             "the captured graph holds more kernels than the eager step launches"),
    RealPair("resnet-fp32", f"kernels:{CONVS}={{F}}", "resnet-tf32", "", kernels=CONVS,
             caveat=_CUDNN),
    RealPair("resnet-fp32", f"kernels:{CONVS}={{F}}", "resnet-bf16", "", kernels=CONVS,
             caveat=_CUDNN),
)


def find(variant: str, roots: list[Path]) -> tuple[Path, Path] | None:
    """(root, trace file) of the first root that has ``variant``."""
    for r in roots:
        d = r / variant
        if d.is_dir():
            files = find_traces(d)
            if files:
                return r, Path(files[0])
    return None


def pick(pair: Pair, roots: list[Path]) -> tuple[Path | None, Path | None]:
    for r in roots:
        a, b = find(pair.base, [r]), find(pair.target, [r])
        if a and b:
            return a[1], b[1]
    a, b = find(pair.base, roots), find(pair.target, roots)
    return (a[1] if a else None), (b[1] if b else None)


@dataclass(frozen=True)
class Row:
    pair: Pair
    base_file: Path | None
    target_file: Path | None
    base_us: float | None
    predicted_us: float | None
    measured_us: float | None
    bound_by: str | None
    no_gpu: bool = False  # a side was recorded without a GPU: not a what-if row

    @property
    def error(self) -> float | None:
        if self.predicted_us is None or not self.measured_us or self.no_gpu:
            return None
        return (self.predicted_us - self.measured_us) / self.measured_us


def measure(pair: Pair, roots: list[Path]) -> Row:
    a, b = pick(pair, roots)
    base = pred = meas = None
    bound = None
    no_gpu = False
    if a is not None:
        tl = load(a)
        no_gpu = tl.gpu.empty
        res = whatif(tl, list(pair.scenarios), step="all")
        base = statistics.fmean(w.measured_us for w in res.windows)
        pred = statistics.fmean(w.predicted_us for w in res.windows)
        bound = res.windows[0].critical_path.get("bound_by")
    if b is not None:
        tl = load(b)
        no_gpu = no_gpu or tl.gpu.empty
        meas = statistics.fmean(w.measured_us for w in whatif(tl, [], step="all").windows)
    return Row(pair, a, b, base, pred, meas, bound, no_gpu)


@dataclass(frozen=True)
class RealRow:
    pair: RealPair
    scenario: str
    slow_ms: float  # unprofiled
    slow_period_ms: float  # the slow trace's measured period (median step)
    null_ms: float  # the slow trace replayed unchanged, the profiler's cost removed
    predicted_ms: float  # the default prediction (profiler's cost removed), median step
    measured_ms: float  # the fast variant, unprofiled
    bound_by: str | None
    holds: bool
    alone_ms: float  # the prediction with the profiler's cost estimated from the events alone

    @property
    def error_alone(self) -> float:
        return (self.alone_ms - self.measured_ms) / self.measured_ms

    @property
    def shown(self) -> str:
        """The scenario with its regular expression named (a `|` would split the cell)."""
        for label, rx in (("GEMMS", GEMMS), ("CONVS", CONVS)):
            if rx == self.pair.kernels:
                return self.scenario.replace(rx, label)
        return self.scenario

    @property
    def error(self) -> float:
        return (self.predicted_ms - self.measured_ms) / self.measured_ms


def _timing(variant: str) -> float | None:
    import json

    ms = json.loads((REPO / REAL / variant / "timing.json").read_text())["ms_per_step_median"]
    return None if ms is None else float(ms)


def _trace(variant: str) -> Path:
    return next((REPO / REAL / variant).glob("*.pt.trace.json*"))


def kernel_factor(slow: Path, fast: Path, rx: str) -> float:
    """F: the time per step of the kernels matching ``rx`` in ``slow`` over ``fast``'s."""
    import re

    def per_step(p: Path) -> float:
        tl = load(p)
        k = tl.gpu[tl.gpu["kind"] == "kernel"]
        hit = k["name"].map(lambda n: bool(re.search(rx, str(n))))
        steps = max(len(tl.steps), 1)
        return float((k["end"] - k["start"])[hit].sum()) / steps

    return per_step(slow) / per_step(fast)


def launches_per_step(variant: str) -> tuple[int, int]:
    """(kernels, runtime and driver calls) per profiled step of ``variant``'s trace: those
    inside the steps' window, over the number of steps, rounded."""
    tl = load(_trace(variant))
    lo, hi = int(tl.steps["start"].min()), int(tl.steps["end"].max())
    cpu = tl.cpu[(tl.cpu["start"] >= lo) & (tl.cpu["end"] <= hi)]
    calls = cpu[cpu["kind"].isin(["cuda_runtime", "cuda_driver"])]
    kernels = tl.gpu[(tl.gpu["kind"] == "kernel") & tl.gpu["correlation"].isin(
        calls["correlation"])]
    n = max(len(tl.steps), 1)
    return round(len(kernels) / n), round(len(calls) / n)


def _median_period(res: object) -> float:
    return statistics.median(w.predicted_period_us or 0 for w in res.windows) / 1000  # type: ignore[attr-defined]


@dataclass(frozen=True)
class NullRow:
    variant: str
    measured_ms: float  # unprofiled ms/step (timing.json)
    period_ms: float  # the profiled trace's period (median step): the profiler kept
    ns: float  # the estimated profiler cost per recorded CPU event (the events alone)
    predicted_ms: float  # the unchanged replay with that cost removed (median step)
    host_ms: float | None = None  # the measured unprofiled host time (traceprobeUnprofiled)
    cal_ns: float | None = None  # the cost calibrated on it
    cal_ms: float | None = None  # the unchanged replay with the calibrated cost removed

    @property
    def error(self) -> float:
        return (self.predicted_ms - self.measured_ms) / self.measured_ms

    @property
    def error_cal(self) -> float | None:
        return None if self.cal_ms is None else (self.cal_ms - self.measured_ms) / self.measured_ms

    @property
    def error_kept(self) -> float:
        return (self.period_ms - self.measured_ms) / self.measured_ms


def real_variants() -> list[str]:
    """Every recorded real-loop variant (a folder with a trace and a timing.json), by name."""
    return sorted(d.name for d in (REPO / REAL).iterdir()
                  if (d / "timing.json").is_file() and any(d.glob("*.pt.trace.json*")))


def measure_null(variant: str) -> NullRow | None:
    """The null prediction: ``variant``'s own trace, unchanged but for ``no-profiler``, against
    its own unprofiled ms/step."""
    from traceprobe.graph.calibrate import measured_host_ms
    from traceprobe.graph.overhead import profiler_cost

    measured = _timing(variant)
    if measured is None:
        return None
    tl = load(_trace(variant))
    ns = profiler_cost(tl).ns
    res = whatif(tl, [f"{PROFILER}:{ns:g}"], step="all")
    period = statistics.median(w.period_us or 0 for w in res.windows) / 1000
    host = measured_host_ms(tl)
    if host is None:
        return NullRow(variant, measured, period, ns, _median_period(res))
    from traceprobe.graph.build import build
    from traceprobe.graph.calibrate import calibrate

    cal = whatif(tl, [PROFILER], step="all")  # the default: calibrated on host_ms
    cal_ns = calibrate(build(tl), host).ns
    return NullRow(variant, measured, period, ns, _median_period(res), host, cal_ns,
                   _median_period(cal))


def null_table(rows: list[NullRow]) -> str:
    from traceprobe.graph.calibrate import MAX_NS

    out = [
        "| variant | measured (unprofiled) | measured host issue time | profiled period "
        "| its error | cost per event, estimated from the events | predicted, estimate removed "
        "| its error | cost per event, calibrated | predicted, calibrated | its error |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        capped = " (capped)" if r.cal_ns == MAX_NS else ""
        cal = ("– | – | –" if r.cal_ms is None else
               f"{r.cal_ns:.0f} ns{capped} | {r.cal_ms:.2f} ms | {r.error_cal:+.1%}")
        host = "–" if r.host_ms is None else f"{r.host_ms:.2f} ms"
        out.append(
            f"| `{r.variant}` | {r.measured_ms:.2f} ms | {host} | {r.period_ms:.2f} ms "
            f"| {r.error_kept:+.1%} | {r.ns:.0f} ns | {r.predicted_ms:.2f} ms | {r.error:+.1%} "
            f"| {cal} |")
    errs, kept = [abs(r.error) for r in rows], [abs(r.error_kept) for r in rows]
    cals = [abs(r.error_cal) for r in rows if r.error_cal is not None]
    out += ["", f"Estimate removed: {sum(x <= REAL_ROW for x in errs)} of {len(rows)} variants "
            f"within 20%, median |error| {statistics.median(errs):.1%}. Calibrated: "
            f"{sum(x <= REAL_ROW for x in cals)} of {len(cals)} within 20%, median |error| "
            f"{statistics.median(cals):.1%}. Profiler kept (the profiled period itself): "
            f"{sum(x <= REAL_ROW for x in kept)} of {len(rows)} within 20%, median |error| "
            f"{statistics.median(kept):.1%}.", "", null_notes(rows)]
    return "\n".join(out)


def measure_real(pair: RealPair) -> RealRow:
    slow, fast = _trace(pair.slow), _trace(pair.fast)
    scen = pair.scenario
    if pair.kernels:
        scen = scen.replace("{F}", f"{kernel_factor(slow, fast, pair.kernels):.3g}")
    from traceprobe.graph.overhead import profiler_cost

    tl = load(slow)
    res = whatif(tl, unprofiled([scen]), step="all")
    alone = whatif(tl, [f"no-profiler:{profiler_cost(tl).ns:g}", scen], step="all")
    null = whatif(tl, unprofiled([]), step="all")
    mid = sorted(res.windows, key=lambda w: w.predicted_period_us or 0)[len(res.windows) // 2]
    gpu = (mid.predicted_period_us or 0) > mid.predicted_us  # the GPU's work sets the period
    slow_ms, fast_ms = _timing(pair.slow), _timing(pair.fast)
    assert slow_ms is not None and fast_ms is not None
    return RealRow(
        pair, scen, slow_ms,
        statistics.median(w.period_us or 0 for w in res.windows) / 1000,
        _median_period(null), _median_period(res), fast_ms,
        "GPU" if gpu else mid.critical_path.get("bound_by"),
        all(w.holds for w in res.windows), _median_period(alone))


def _why(r: RealRow) -> str:
    """The row's miss, its figures filled in from the timings."""
    return r.pair.why_if_miss.format(fast_ms=r.measured_ms, slow_ms=r.slow_ms,
                                     per_worker=8 * r.measured_ms, fn=r.slow_ms / 8)


def _alone_note(rows: list[RealRow]) -> str:
    """Where the events-alone column is within 20% and the default is not: why (the estimate
    leaves part of the profiler's cost in the slow loop's host, its null prediction says how
    much, and that stands in for what the change did that the trace does not show)."""
    luck = [r for r in rows if abs(r.error_alone) <= REAL_ROW < abs(r.error)]
    if not luck:
        return ""
    nulls = {v: measure_null(v) for v in dict.fromkeys(r.pair.slow for r in luck)}
    said = ", ".join(f"`{r.pair.slow}` → `{r.pair.fast}`" for r in luck)
    why = ", ".join(f"`{v}`'s own trace replayed with the estimate is {n.error:+.1%} against its "
                    "unprofiled step" for v, n in nulls.items() if n is not None)
    return (f" The events alone come closer on {said} only by the profiler's cost the estimate "
            f"leaves in ({why}: the null table), which happens to stand in for what the "
            "change did that the trace does not show (their notes).")


def real_table(rows: list[RealRow]) -> str:
    out = [
        "| slow variant | scenario | fast variant | slow, unprofiled | slow, profiled period "
        "| predicted | measured (unprofiled) | error | predicted speedup | measured speedup "
        "| path then bound by | note | predicted, events alone | its error |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        e = r.error
        if not r.holds:
            note = "the model does not hold for a step (collectives on the path)"
        elif abs(e) > REAL_ROW:
            note = "misses the 20% goal" + (f": {_why(r)}" if r.pair.why_if_miss else "")
        else:
            note = "within 20%"
        if r.pair.caveat:
            (k_fast, r_fast), (k_slow, r_slow) = (launches_per_step(v) for v in
                                                  (r.pair.fast, r.pair.slow))
            note += "; " + r.pair.caveat.format(fast=r.pair.fast, k_fast=k_fast,
                                                k_slow=k_slow, r_fast=r_fast, r_slow=r_slow)
        out.append(
            f"| `{r.pair.slow}` | `{r.shown}` | `{r.pair.fast}` | {r.slow_ms:.2f} ms "
            f"| {r.slow_period_ms:.2f} ms | {r.predicted_ms:.2f} ms | {r.measured_ms:.2f} ms "
            f"| {e:+.1%} | {r.null_ms / r.predicted_ms:.2f}x "
            f"| {r.slow_ms / r.measured_ms:.2f}x | {r.bound_by or '–'} | {note} "
            f"| {r.alone_ms:.2f} ms | {r.error_alone:+.1%} |")
    errs = [abs(r.error) for r in rows]
    within = sum(x <= REAL_ROW for x in errs)
    alone = [abs(r.error_alone) for r in rows]
    out += ["", f"{within} of {len(rows)} rows within 20% (goal: all); median |error| "
            f"{statistics.median(errs):.1%} (goal: at most 10%). With the profiler's cost "
            f"estimated from the events alone (the last two columns): "
            f"{sum(x <= REAL_ROW for x in alone)} of {len(rows)} within 20%, median |error| "
            f"{statistics.median(alone):.1%}.{_alone_note(rows)}", "",
            real_notes(rows), "",
            f"`GEMMS` is the regular expression `{GEMMS}`, `CONVS` `{CONVS}`. *path then bound "
            "by*: of the median predicted step (`GPU` where the GPU's work sets its period)."]
    return "\n".join(out)


REAL_HEAD = """

## Real training loops

Loops written as users write them (`scripts/gpu/real_loops.py`: a pytorch/examples mnist
loop fed by a DataLoader, a 4-layer transformer, a 20-layer MLP, torchvision's resnet18),
recorded on one H200 in pairs whose second variant makes one change
(`sample_traces/h200/real-loops/README.md`; this table is the third recording,
`sample_traces/h200/real-loops-3`, whose traces carry the recorder's unprofiled timing).
*predicted* is what `traceprobe whatif` predicts by default: the median step's predicted
**period** (docs/FIGURES.md, "Critical path and what-if": the longer of the step's host span
and the GPU work it launched) from the **slow variant's trace alone**, under `no-profiler`
(the profiler's own host cost removed: the prediction is for the loop run unprofiled) and
then the scenario. The cost removed is **calibrated** on the slow loop's measured unprofiled
host time, which the recording script stores in its trace (`traceprobeUnprofiled`: one step
timed from an idle GPU, the host's issue time; `traceprobe/graph/calibrate.py`); a trace
without it gets the estimate from its events (the last two columns).
*measured* is the fast variant's unprofiled median ms/step (`timing.json`, timed in the same
script without the profiler). *error* = (predicted − measured) / measured. Goal: every row
within 20%, median within 10%. *predicted speedup*: the slow trace's unchanged replay under
`no-profiler` over the prediction. For `kernels:REGEX=F`, F is the one number taken from the
fast run: the matching kernels' time per step in the slow trace over the fast trace's (the
kernel-level speedup a user would measure with a micro-benchmark); the prediction says what
that does to the step. The last two columns remove the profiler's cost as estimated from the
trace's events alone (`traceprobe/graph/overhead.py`), as `traceprobe whatif` does on a trace
without the recorder's timing.

"""

NULL_HEAD = """

### The profiler's own cost, checked on every loop

`no-profiler` removes the profiler's host cost per recorded CPU event (docs/FIGURES.md, "The
profiler's own cost"), **estimated** from the trace's events alone
(`traceprobe/graph/overhead.py`: the median parent-start → child-start interval plus the median
child-end → parent-end interval of the trace's threads, over the profiled steps), or, where the
trace carries the recorder's measured unprofiled host time (*measured host issue time*: one
step timed from an idle GPU, median of 15), **calibrated** on it
(`traceprobe/graph/calibrate.py`: the cost at which the replayed host span, GPU instant, equals
that time). Each row is a **null prediction**: a variant's own trace replayed unchanged under
`no-profiler`, against the same variant's measured unprofiled ms/step; *profiled period* is
the trace's period with the profiler's cost kept. Every variant with an unprofiled timing is
listed.

"""


def null_notes(rows: list[NullRow]) -> str:
    """What the misses of the null table have in common, from its rows."""
    slow = [r for r in rows if r.error > REAL_ROW]
    fast = [r for r in rows if r.error < -REAL_ROW]
    out = []
    if slow:
        out.append(
            "Estimate too slow: " + ", ".join(f"`{r.variant}`" for r in slow) + ": loops the "
            "host bounds, where the estimate falls short of what the profiler cost (what it "
            "adds inside events and to the host's own work, which no interval between events "
            "shows; the micro-loops below show why no constant per event closes it).")
        fixed = [r for r in slow if r.error_cal is not None and abs(r.error_cal) <= REAL_ROW]
        if fixed:
            out.append("Calibrated on the measured host time, " + ", ".join(
                f"`{r.variant}` {r.error_cal:+.1%}" for r in fixed) + ".")
    cal_off = [r for r in rows if r.error_cal is not None and r.error_cal > REAL_ROW]
    if cal_off:
        out.append(
            "Calibrated too slow: " + ", ".join(
                f"`{r.variant}` (host issue time {r.host_ms:.2f} ms against {r.measured_ms:.2f}"
                " ms per step)" for r in cal_off) + ": the one step timed from an idle GPU took "
            "the host longer than a step of the running loop, so the calibration keeps more "
            "than the loop's steady host time.")
    if fast:
        out.append(
            "Too fast: " + ", ".join(f"`{r.variant}`" for r in fast) + ": the profiled steps "
            "were shorter than the unprofiled loop (the eight workers had prefetched the "
            "recorded steps' batches during the profiler's warm-up, so those steps never "
            "waited for data); no host cost removed can make a step longer.")
    removed = statistics.median(abs(r.error) for r in rows)
    kept = statistics.median(abs(r.error_kept) for r in rows)
    if removed < kept:
        out.append(
            f"Even estimated, the null predictions' median error is {removed:.1%} against "
            f"{kept:.1%} kept: that is why `traceprobe whatif` removes the profiler's cost by "
            "default. A calibrated null prediction of a loop the host bounds is close by "
            "construction (its host span is set to the measured issue time); what it tests is "
            "that one step's issue time stands for the running loop's, and, on loops the GPU "
            "bounds, that nothing else moved.")
    return " ".join(out)


def loader_stages() -> tuple[float, float]:
    """(ms from the pin-memory thread's last event to the main thread's receipt of the batch,
    median over mnist-workers1's batches; ms of the main thread's `__next__` in
    mnist-workers8's trace, median): the per-batch DataLoader work that N workers do not
    divide, as far as the traces show it."""
    tl = load(_trace("mnist-workers1"))
    cpu = tl.cpu
    nxt = cpu[cpu["name"].str.contains("DataLoader", regex=False)
              & cpu["name"].str.endswith("__next__")]
    main = set(nxt["tid"].tolist())
    launching = set(cpu.loc[cpu["name"].str.contains("LaunchKernel", regex=False), "tid"])
    other = cpu[~cpu["tid"].isin(main | launching)]
    waits = []
    for s, e in zip(nxt["start"].tolist(), nxt["end"].tolist(), strict=True):
        ends = other["end"][(other["start"] >= s) & (other["end"] <= e)]
        if len(ends):
            waits.append((e - int(ends.max())) / 1e6)
    tl8 = load(_trace("mnist-workers8"))
    c8 = tl8.cpu
    n8 = c8[c8["name"].str.contains("DataLoader", regex=False)
            & c8["name"].str.endswith("__next__")]
    return statistics.median(waits), float(statistics.median((n8["end"] - n8["start"])
                                                              .tolist())) / 1e6


def real_notes(rows: list[RealRow]) -> str:
    pin, receive = loader_stages()
    mnist = next(r for r in rows if r.pair.slow.startswith("mnist"))
    rest = ("the mnist row's miss is" if abs(mnist.error) > REAL_ROW else
            "the rest of the mnist row's error is")
    return (
        "The DataLoader (`dataloader:workers=N`): the scenario divides the fetch time by N; "
        "the per-batch work that N workers do not divide is in the traces, and small: from "
        "the pin-memory thread's last event to the main thread's receipt of the batch, "
        f"{pin:.2f} ms (median over `mnist-workers1`'s batches); the main thread's "
        f"`__next__` when the batch is ready, {receive:.3f} ms (`mnist-workers8`). So the "
        f"scenario does not model it; {rest} the workers' own speed (their contention for the "
        "host's cores), which the traces do not hold. The `precision:` rows rescale the "
        "kernels of the warm-up "
        "backlog (launched before the recording began) by their name's factor "
        "(docs/FIGURES.md).")




def _ms(us: float | None) -> str:
    return "–" if us is None else f"{us / 1000:.2f} ms"


def _rel(p: Path | None) -> str:
    if p is None:
        return "not recorded"
    try:
        return str(p.resolve().relative_to(REPO))
    except ValueError:
        return str(p)


def table(rows: list[Row]) -> str:
    out = [
        "| serial variant | scenarios | measured variant | serial step | predicted | measured "
        "| error | path then bound by | note |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        e = r.error
        if r.base_file is None:
            note = "serial variant not recorded"
        elif r.no_gpu:
            note = "recorded without a GPU (CPU fallback): nothing to predict"
        elif r.target_file is None:
            note = ("**measured run missing**: record it with scripts/gpu/whatif.sh and "
                    "rerun this script")
        elif e is not None and abs(e) > GOAL_ROW:
            note = f"misses the 10% goal: {r.pair.why_if_miss}"
        else:
            note = "within 10%"
        out.append(
            f"| `{r.pair.base}` | {', '.join(f'`{s}`' for s in r.pair.scenarios)} "
            f"| `{r.pair.target}` | {_ms(r.base_us)} | {_ms(r.predicted_us)} "
            f"| {_ms(r.measured_us)} | {'–' if e is None else f'{e:+.1%}'} "
            f"| {r.bound_by or '–'} | {note} |"
        )
    errs = [abs(r.error) for r in rows if r.error is not None]
    out.append("")
    if errs:
        within = sum(x <= GOAL_ROW for x in errs)
        out.append(
            f"{len(errs)} of {len(rows)} rows have a measured run; {within} of them within "
            f"10% (goal: all); median |error| {statistics.median(errs):.1%} (goal: at most 5%)."
        )
    missing = [r for r in rows if r.error is None]
    if missing:
        out.append(f"{len(missing)} row(s) wait for a recording: "
                   + ", ".join(f"`{r.pair.target}`" for r in missing) + ".")
    out.append("")
    out.append("Traces: " + "; ".join(
        f"`{r.pair.base}` {_rel(r.base_file)} → `{r.pair.target}` {_rel(r.target_file)}"
        for r in rows) + ".")
    return "\n".join(out)


HEAD = """# What-if: predicted against measured

<!-- generated by scripts/whatif_table.py; do not edit by hand -->

`traceprobe whatif TRACE --scenario S` replays a trace's dependency graph (one rank) with the
measured durations and predicts each step's time if the program changed as the scenario says.
Each row below takes a recorded serial variant, replays it under the scenarios that describe
the change, and compares the prediction with the step time measured on the variant that makes
the change for real (recorded on H200, mean over each trace's steps). Both sides are profiled,
so these predictions keep the profiler's cost (as `traceprobe whatif --keep-profiler` does;
the real training loops below are set against unprofiled runs instead).
*error* = (predicted − measured) / measured. Goal: every row within 10%, median within 5%.
The graph, the replay, the scenarios and every figure are defined in docs/FIGURES.md
("Critical path and what-if"); the JSON schema is below.

"""

SCHEMA = """

## Output of `traceprobe whatif --format json` (`traceprobe.whatif/1`)

```json
{"schema": "traceprobe.whatif/1", "trace": "seq.pt.trace.json.gz",
 "windows": [{"step": 1, "measured_us": 262515.9, "replayed_us": 262515.9,
              "predicted_us": 133733.2, "period_us": 262515.9,
              "predicted_period_us": 133733.2, "speedup": 1.96,
              "model_holds": true, "why_not": null,
              "critical_path": {"length_us": 133733.2, "bound_by": "GPU",
                                "breakdown": {"kernel": 0.0, "...": 0.0},
                                "segments": [{"start_us": 0.0, "end_us": 0.0,
                                              "kind": "kernel", "name": "..."}]},
              "measured_critical_path": {"...": "the same, of the base replay"}}],
 "scenarios": ["no-host-sync"], "baseline": ["no-profiler"],
 "notes": ["no-profiler applied to both sides by default: ...",
           "no-profiler: 812 recorded CPU events at 2872 ns each, estimated from the trace: ...",
           "no-host-sync: dropped 1 of 4 host waits"]}
```

`scenarios` are the change, replayed in order; `baseline` the scenarios applied to *both*
sides, the base replay and the prediction: `traceprobe whatif` puts `no-profiler` there unless
`--keep-profiler` is given or a `no-profiler` scenario is part of the change, and says so in
`notes`. So `period_us` is the base replay's period (with the default, the step as if run
unprofiled) and `speedup` the change's alone, not the profiler's cost it removes as well
(with `baseline` empty the base is the unchanged replay, which reproduces the trace).

`windows` has one object per `ProfilerStep#N` (or one with `"step": null` for a trace without
steps, or with `--step N` one). `period_us` / `predicted_period_us`: the step's period, the
longer of its host span and the GPU work it launched (docs/FIGURES.md); `speedup` is their
ratio, null where `model_holds` is false (`why_not` says why: a step whose path is mostly
collectives, which wait for the other ranks a one-rank replay does not see).
`critical_path` is the *predicted* replay's path, on the trace's clock from the step's
measured start; `measured_critical_path` the base replay's (with no baseline the unchanged
replay's, equal to the one `traceprobe analyze` reports).

## Scenarios (from `traceprobe/graph/scenarios.py`)

"""

TAIL = """

## How the replay works (short)

* **Graph**: host threads' runtime calls in order (the CPU time between two calls is kept
  as a gap); each GPU op after its launch call (correlation id), the previous op of its
  stream, the previous GPU-filling kernel of its device (grid ≥ SMs × resident blocks per
  SM, from the kernel's args and `deviceProperties`), the previous copy of its direction
  (one copy engine each way), and an *inferred* cross-stream dependency when it started
  more than 10 µs after all of those allowed (the op of another stream that ended last before
  it: what a `cudaStreamWaitEvent` looks like when the trace has no sync events). Host
  waits (synchronize calls, blocking copies) end after the GPU op they waited for.
* **Replay**: each node starts at its latest constraint plus the measured delay of that
  constraint (capped at the typical value for constraints that did not bind), so the
  unchanged replay reproduces every measured step exactly (tests check within 2% on every
  committed trace).
* **No graph library**: the graph is numpy arrays (constraints as parallel arrays) and the
  replay one pass in topological order. Measured on the 98 MB bench trace (48,902 nodes,
  81,513 constraints, this repository's 2-core machine): building it as a networkx `DiGraph`
  took 2.44 s and `dag_longest_path` 2.08 s, against about 0.5 s for the numpy build and
  0.3–0.4 s for the replay loop (which a longest path over fixed weights could not do
  anyway: a scenario changes which constraint binds, and resources are not edges of fixed
  weight). The unchanged replay (`analyze`'s critical path) skips the loop: the measured
  times satisfy every node's equation, which a vectorised check confirms (0.07 s), and
  evaluating a fixed point in order gives it back (a test compares it with the loop).
* **Critical path**: walking back from the step's end along the constraint that bound each
  node (from the GPU's last op when the GPU's work sets the step's period); its pieces tile
  the step, by category (`kernel`, `communication`, `copy`, `sync_wait`, and the host
  account's `dataloader`, `optimizer`, `sync`, `runtime`, `cpu_op`, `region`, `python`;
  `idle` only where neither the host nor a GPU had work).
* **Threads**: a backward pass on autograd's thread while the main thread waits in
  `backward()` is a *hand-off* inferred from timing (traceprobe/graph/threads.py), so the path
  and the replay follow the backward thread's launches.
* **Launch-queue back-pressure**: a launch that blocked on a full launch queue waits for the
  op whose completion freed its slot, so on a GPU-bound job the path goes through the GPU and
  a faster kernel moves the step (HTA's `ns_resolution_trace_rank-0…`, GPU 0 busy 97.4%: the
  path is 97% GPU work; it was "bound by idle", 281 of 394 ms, before both were modelled).

## Limits

* A replay keeps the host's program order: only `copies-on-side-stream` re-issues work (each
  copy right after its producer's launch, as the side-stream pattern does); no scenario moves
  other host code.
* The profiler's own host cost (`record_shapes` roughly doubles a host-bound loop's time per
  op) is removed by default (`no-profiler`): calibrated on the loop's measured unprofiled host
  time where the trace carries it (`traceprobe profile --host-steps N`), else estimated from
  the trace, which sees the bookkeeping between events, not what the profiler adds inside
  them, so on a loop the host bounds some of it stays (the null table above). The
  calibration inherits the measurement's noise: one step timed from an idle GPU stood for the
  running loop's host within about 20% on the loops here. `--keep-profiler` keeps it all, for
  a comparison with another profiled trace.
* Hand-offs are inferred between threads that launch GPU work; a thread that launches nothing
  (the DataLoader's pin-memory thread, c10d's watchdog) takes no part, so the main thread's
  wait for a batch is the DataLoader's time on the main thread.
* Cross-stream event waits are inferred from timing only where they bound an op; a wait that
  did not bind in the measured run is invisible to a scenario that makes it bind.
* Collectives wait for the other ranks, which a one-rank replay does not see: a step whose
  path is more than 20% collectives is reported as one where the model does not hold.
* `dataloader:workers=N` assumes the workers scale (N workers deliver N times as fast); on a
  machine whose cores they share with the main process they do not (the mnist row), and the
  trace cannot say: the workers' processes are not profiled and the core count is not
  recorded.
* A precision change (`precision:`, or `kernels:` on convolution kernels) keeps the recorded
  kernels, only faster; cuDNN may choose other convolution algorithms at the new precision
  (the resnet rows: more kernels and runtime calls per step, slower than fp32), which the
  trace does not show. The output's notes say so.

## Against HTA's critical path

HTA's `CriticalPathAnalysis` (hta/analyzers/critical_path_analysis.py) builds a networkx
DiGraph of one rank: each CPU op becomes a start and an end node with edges along the
operator stack, runtime launches link to their kernels, kernels of one stream chain, and
`cudaStreamWaitEvent`/`cudaEventSynchronize`/`cudaDeviceSynchronize` link through the sync
events that `enable_cuda_sync_events` writes; the path is networkx's longest path
(`dag_longest_path`) between the first and last nodes of the chosen annotation (e.g.
`ProfilerStep#N`). Differences, from its code:

* HTA draws GPU→host edges only from the CUDA sync events that `enable_cuda_sync_events`
  writes (`Context Sync`, `Event Sync`, `Stream Wait Event`); without them (all the samples
  here) it warns and its graph has no synchronization edge, so its longest path ends at the
  last kernel and leaves out the final wait and the host's tail. traceprobe infers host waits
  from the calls themselves (synchronize calls, blocking copies) and cross-stream waits from
  timing, and its path always ends at the step's end.
* HTA's path is networkx's longest path by edge weight (the measured durations and gaps), so
  its length is the longest chain the graph explains, not the step: on `dag/serial` 11.76 ms
  of a 12.12 ms step. traceprobe's path is the chain of *binding* constraints of a replay,
  which tiles the step exactly.
* HTA models CPU ops (nested) as nodes and merges the backward thread into the main thread;
  traceprobe keeps CPU time as the gap between runtime calls, cuts it by the host account
  (dataloader / optimizer / sync / runtime / cpu_op / region / Python (untraced)) and links the
  threads by inferred hand-offs.
* HTA has no replay and no scenarios (an issue thread suggests scaling edge weights and
  recomputing the longest path, which ignores resources and cannot move work between streams).
* tests/graph/test_hta.py runs both on `dag/serial` (H200) and checks what they share: HTA's
  path is no longer than the step, which traceprobe's path equals; the kernel time on the two
  paths agrees within 2%; every kernel name on HTA's path is on traceprobe's too.
"""


def _scenario_doc() -> str:
    from traceprobe.graph import scenarios

    text = (scenarios.__doc__ or "").split("\n", 2)[2]  # past the first line
    lines = []
    for line in text.strip("\n").splitlines():
        if line.startswith("``") and line.endswith("``"):
            lines.append(f"* **`{line.strip('`')}`**")
        else:
            lines.append("  " + line.strip() if line.strip() else "")
    return "\n".join(lines).rstrip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write", metavar="FILE", help="write the whole document to FILE")
    ap.add_argument("--roots", nargs="*", default=list(ROOTS))
    a = ap.parse_args(argv)
    roots = [REPO / r if not Path(r).is_absolute() else Path(r) for r in a.roots]
    rows = [measure(p, roots) for p in PAIRS]
    real: list[RealRow] = []
    nulls: list[NullRow] = []
    if (REPO / REAL).is_dir():
        real = [measure_real(p) for p in REAL_PAIRS]
        nulls = [r for v in real_variants() if (r := measure_null(v)) is not None]
    again = ""
    if real:
        sys.path.insert(0, str(REPO / "scripts"))
        import whatif_repeat  # the loops recorded again, the profiler's cost on micro-loops

        again = whatif_repeat.sections(sys.modules[__name__])
    doc = HEAD + table(rows) + (REAL_HEAD + real_table(real) + NULL_HEAD + null_table(nulls)
                                + again if real else "") + SCHEMA + _scenario_doc() + TAIL
    if a.write:
        Path(a.write).write_text(doc)
    print(table(rows))
    if real:
        print(real_table(real))
        print(null_table(nulls))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
