"""Verdicts: does each recorded experiment's claim hold, judged from its traces?

    verdicts = verify_dir("traceprobe-out")   # -> dict, schema "traceprobe.verdicts/1"
    text = render(verdicts, "markdown")       # traceprobe.render.verdicts

The flow: every ``traceprobe.meta.json`` under the folder (any depth) -> its variant's
traces (loader) -> the report dict (report.analyze, docs/REPORT_SCHEMA.md) plus a few
timeline figures the report lacks (:func:`timeline_figures`) -> one :class:`Recorded`
per variant -> one small rule per workload -> one verdict per variant::

    {"workload", "variant", "folder", "claim", "verdict", "why", "figures", "wall_clock"}

``verdict`` is :data:`HOLDS`, :data:`FAILS` or :data:`CANNOT_TELL`; ``why`` is one
sentence with numbers; ``wall_clock`` explains how the trace's spans compare with the
independent wall-clock times in the metadata. A rule is a pure function of report and
metadata dicts, ``rule(v: Recorded, peers: dict[str, Recorded]) -> Decision`` (``peers``:
the other recorded variants of the workload), so tests feed it hand-built dicts.

Each verdict answers the claim printed beside it: the registry's claim for the variant
that tests it, a variant-specific claim (:data:`CLAIMS`) for controls and baselines.
Thresholds are the constants below; docs/FIGURES.md ("Verdicts") gives the reasoning.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from traceprobe.errors import TraceError, UsageError
from traceprobe.expect import measure
from traceprobe.headlines import BUSY_ENOUGH, duration
from traceprobe.intervals import coverage, max_depth, measure_within, overlap, spans
from traceprobe.metrics.host import RUNTIME_KINDS, host_process
from traceprobe.record import meta as meta_file
from traceprobe.record import registry
from traceprobe.timeline import Timeline

SCHEMA = "traceprobe.verdicts/1"
HOLDS = "holds"
FAILS = "does not hold"
CANNOT_TELL = "cannot tell on this machine"
VERDICTS = (HOLDS, FAILS, CANNOT_TELL)

# -- thresholds (docs/FIGURES.md, "Verdicts") ------------------------------------------------

# Two GPUs "compute at the same time" when both are busy for at least this share of the
# time either is (cross_device fraction_of_either): launch skew and the longer queue's
# tail cost a few per cent even when nothing stands between them.
OVERLAP_HOLDS = 0.90
# ... and "take turns" when they overlap at most this share: a synchronize between them
# leaves only the next launch's jitter.
OVERLAP_NONE = 0.05
# Copies hide under compute when at least half their time (the "all" row of copy_compute)
# runs under a kernel of the same device: clearly more than chance touching.
HIDDEN_HOLDS = 0.50
# DDP hides communication when at least a quarter of the NCCL kernel time runs under
# compute: the last bucket is reduced after the backward pass ends and can never hide,
# and NCCL kernels also count the time they wait for the other rank.
COMM_HIDDEN_HOLDS = 0.25
# Kernels of one stream can touch by a timestamp's rounding; concurrency counts only when
# two or more kernels run at once for at least this share of the kernel time.
KERNEL_CONCURRENCY_MIN = 0.01
# N independent matmuls on one stream take "N times one" within this tolerance; below
# N * (1 - tolerance) something ran concurrently.
SERIAL_RATIO_TOLERANCE = 0.10
# A speedup counts only from this ratio of per-step times up, and only when the trace
# (GPU span, else span) and the unprofiled wall clock both show it: ±20% is within what
# the same work varies by between two recordings of short steps, and one profiled step of
# a millisecond can disagree with the wall clock by more than that.
SPEEDUP_CLEAR = 1.20
# The host "computes while the GPU computes" when at least half its compute time (CPU ops
# that drive no CUDA call, on the main thread) falls inside GPU busy time.
HOST_OVERLAP_HOLDS = 0.50
# Hand-made data parallelism: both GPUs compute at once for at least half the less busy
# GPU's time (fraction_of_min): GPU 0 alone gathers, sums and updates, by design.
MLP_OVERLAP_HOLDS = 0.50
# Two variants "issue the same ops" when their CPU op counts per step differ by at most
# this share; beyond it a speedup measures different work, not loop against run().
SAME_OPS_TOLERANCE = 0.05
# A wall time this many times the trace span (or the span this many times the wall time)
# is called out as time outside the traced region.
WALL_SPAN_MISMATCH = 1.5

THRESHOLDS: dict[str, float] = {
    "overlap_holds": OVERLAP_HOLDS,
    "overlap_none": OVERLAP_NONE,
    "hidden_holds": HIDDEN_HOLDS,
    "comm_hidden_holds": COMM_HIDDEN_HOLDS,
    "kernel_concurrency_min": KERNEL_CONCURRENCY_MIN,
    "serial_ratio_tolerance": SERIAL_RATIO_TOLERANCE,
    "speedup_clear": SPEEDUP_CLEAR,
    "host_overlap_holds": HOST_OVERLAP_HOLDS,
    "mlp_overlap_holds": MLP_OVERLAP_HOLDS,
    "same_ops_tolerance": SAME_OPS_TOLERANCE,
}

# Variants whose verdict answers another claim than the registry's (controls, baselines).
CLAIMS: dict[tuple[str, str], str] = {
    ("two-devices", "sequential"): (
        "With torch.cuda.synchronize between them, the two devices take turns: they "
        "overlap about 0% (the control for parallel)."
    ),
    ("copy", "blocking"): (
        "Copying each result to the host with a blocking .to('cpu') hides under the "
        "compute of the next ones."
    ),
    ("copy", "nonblocking-same-stream"): (
        "The notes' .to('cpu', non_blocking=True) on the compute stream hides the copies "
        "under the compute of the next results."
    ),
    ("copy", "side-stream"): (
        "Copies on a side stream, each waiting only for its own result, hide under the "
        "compute of the next results."
    ),
    ("independent-ops", "single"): (
        "Fifty independent matmuls take less than fifty times one matmul (the notes read "
        "1.4930 s against 0.0457 s, 32.7x, as automatic parallelism)."
    ),
    ("small-ops", "loop"): (
        "10x10 matmuls are launch-bound on the GPU: it waits for the host between kernels."
    ),
    ("dag", "serial"): (
        "On one stream the DAG runs in order: no two streams are busy at once "
        "(the control for two-streams)."
    ),
    ("mlp", "single"): (
        "The hand-made data parallelism on two GPUs makes the training step faster than "
        "this single GPU."
    ),
}

FRACTIONS = frozenset({
    "cross_device_overlap", "cross_device_overlap_of_min", "sequential_cross_device_overlap",
    "parallel_cross_device_overlap", "hidden_copy_fraction", "hidden_comm_fraction",
    "utilization", "host_overlap_fraction", "cross_rank_overlap",
    "cross_device_overlap_per_step",
})

Figures = dict[str, Any]


# -- what a rule sees -------------------------------------------------------------------------


@dataclass(frozen=True)
class Recorded:
    """One recorded variant: its metadata, its report dict, and timeline-only figures.

    ``report`` is one trace's ``traceprobe.report/1`` dict, or for several traces (DDP,
    one per rank) the several-traces dict with ``traces`` and ``cross_trace``.
    """

    meta: Mapping[str, Any]
    report: Mapping[str, Any]
    extra: Mapping[str, Any] = field(default_factory=dict)
    # The variant folder relative to the verified folder, e.g. "two-devices/parallel";
    # its parent's parent is the recording, and peers come from the same recording.
    folder: str = ""

    @property
    def recording(self) -> str:
        parts = Path(self.folder).parts
        return str(Path(*parts[:-2])) if len(parts) > 2 else ""

    @property
    def workload(self) -> str:
        return str(self.meta.get("workload", "?"))

    @property
    def variant(self) -> str:
        return str(self.meta.get("variant", "?"))

    @property
    def reports(self) -> list[Mapping[str, Any]]:
        """One report dict per trace."""
        if "traces" in self.report and "trace" not in self.report:
            return list(self.report.get("traces") or [])
        return [self.report]

    def figure(self, name: str, index: int | None = None) -> float | None:
        """An expect.py name read from the (first) trace's report; None when undefined."""
        return measure(self.reports[0], name, index).value

    @property
    def steps(self) -> int:
        """ProfilerSteps in the (first) trace; else the metadata's profiled steps; else 1."""
        n = (self.reports[0].get("counts") or {}).get("steps")
        n = n or (self.meta.get("profiler") or {}).get("profiled_steps")
        return max(int(n or 1), 1)

    @property
    def timing(self) -> Mapping[str, Any]:
        t = self.meta.get("timing")
        if not t and self.meta.get("ranks"):
            t = self.meta["ranks"][0].get("timing")
        return t or {}

    def span_us(self, key: str = "span_us") -> float:
        """``span_us`` or ``gpu_span_us``; the largest over ranks for several traces."""
        return max((float(r.get(key) or 0.0) for r in self.reports), default=0.0)

    def per_step_us(self, key: str) -> float | None:
        value = self.span_us(key)
        return value / self.steps if value > 0 else None

    @property
    def plain_step_us(self) -> float | None:
        s = (self.timing.get("plain") or {}).get("mean_s")
        return None if s is None else s * 1e6

    @property
    def profiled_step_us(self) -> float | None:
        s = (self.timing.get("profiled") or {}).get("active_mean_s")
        return None if s is None else s * 1e6

    @property
    def has_gpu(self) -> bool:
        return any(r.get("devices") for r in self.reports)


@dataclass(frozen=True)
class Decision:
    verdict: str
    why: str
    figures: Figures = field(default_factory=dict)

    def __post_init__(self) -> None:
        assert self.verdict in VERDICTS, self.verdict


Rule = Callable[[Recorded, Mapping[str, Recorded]], Decision]


# -- small readers and words ------------------------------------------------------------------


def pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def dur(us: float | None) -> str:
    return "n/a" if us is None else duration(us * 1000.0)


def times(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def _rows(r: Mapping[str, Any], *path: str) -> list[Mapping[str, Any]]:
    obj: Any = r
    for key in path:
        obj = obj.get(key) if isinstance(obj, Mapping) else None
    return [x for x in (obj or []) if isinstance(x, Mapping)]


def gpus_used(meta: Mapping[str, Any]) -> list[str]:
    """Distinct GPUs the variant ran on (``devices_used``; per rank for DDP)."""
    used = list(meta.get("devices_used") or [])
    used += [str(r.get("device")) for r in meta.get("ranks") or []]
    return sorted({str(d) for d in used if str(d).startswith("cuda")})


def shortfall(v: Recorded, need: int, what: str) -> str | None:
    """None when the variant ran on ``need`` GPUs with GPU activity, else the why."""
    used = gpus_used(v.meta)
    if len(used) >= need and v.has_gpu:
        return None
    if not used:
        had = len(v.meta.get("gpus") or [])  # the GPUs this machine has (meta.environment)
        where = (f"ran on the CPU (--device cpu, {had} GPU{'s' if had > 1 else ''} unused)"
                 if had else "ran on the CPU (0 GPUs on this machine)")
    elif len(used) < need:
        where = f"ran on {len(used)} GPU"
    else:
        where = f"ran on {len(used)} GPUs but the trace holds no GPU activity"
    return f"{where}: {what}"


def best_pair(report: Mapping[str, Any]) -> tuple[int, int]:
    rows = [r for r in _rows(report, "overlap", "cross_device") if r.get("fraction_of_either")]
    if not rows:
        return (0, 1)
    row = max(rows, key=lambda r: r["fraction_of_either"])
    a, b = row.get("devices") or (0, 1)
    return int(a), int(b)


def idle_clause(report: Mapping[str, Any]) -> str:
    """'; GPU 1 was idle 45.0% of the window while the host spent 2.7 s in cudaHostAlloc'."""
    devs = [d for d in _rows(report, "devices") if d.get("utilization") is not None]
    if not devs:
        return ""
    dev = min(devs, key=lambda d: d["utilization"])
    if dev["utilization"] >= BUSY_ENOUGH:
        return ""
    text = f"; GPU {dev.get('device')} was idle {pct(1 - dev['utilization'])} of the window"
    for h in _rows(report, "host", "devices"):
        causes = _rows(h, "causes")
        if h.get("device") == dev.get("device") and causes:
            text += f" while the host spent {dur(causes[0].get('us'))} in {causes[0].get('name')}"
    return text


def copy_row(report: Mapping[str, Any]) -> dict[str, float]:
    """The "all" rows of copy_compute, summed over devices."""
    rows = [r for r in _rows(report, "overlap", "copy_compute") if r.get("direction") == "all"]
    keys = ("memcpy_us", "hidden_us", "exposed_us", "copies", "pageable")
    return {k: sum(float(r.get(k) or 0) for r in rows) for k in keys}


def speedups(v: Recorded, base: Recorded | None) -> Figures:
    """Per-step time of ``base`` over that of ``v``, from the traces and the wall clock."""
    if base is None:
        return {}
    return {
        "baseline": base.variant,
        "speedup_gpu_span": ratio(base.per_step_us("gpu_span_us"), v.per_step_us("gpu_span_us")),
        "speedup_span": ratio(base.per_step_us("span_us"), v.per_step_us("span_us")),
        "speedup_wall": ratio(base.plain_step_us, v.plain_step_us),
    }


def clear_speedup(s: Figures) -> bool:
    """Both the trace and the wall clock (when measured) show at least SPEEDUP_CLEAR."""
    trace = s.get("speedup_gpu_span") or s.get("speedup_span")
    wall = s.get("speedup_wall")
    return trace is not None and trace >= SPEEDUP_CLEAR and (wall is None or wall >= SPEEDUP_CLEAR)


def speed_clause(s: Figures, against: str) -> str:
    trace = s.get("speedup_gpu_span") or s.get("speedup_span")
    if trace is None:
        return ""
    return (f", a speedup over {against} of {times(trace)} by the trace "
            f"({times(s.get('speedup_wall'))} by the wall clock)")


# -- the rules, one per workload ----------------------------------------------------------------


def two_devices(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    ov = v.figure("cross_device_overlap")
    figs: Figures = {
        "cross_device_overlap": ov,
        "cross_device_overlap_of_min": v.figure("cross_device_overlap_of_min"),
        "multi_device_us": v.figure("multi_device_us"),
        "utilization": v.figure("utilization"),
    }
    short = shortfall(v, 2, "cross-device overlap needs two")
    if short:
        return Decision(CANNOT_TELL, short, figs)
    if ov is None:
        return Decision(CANNOT_TELL, "the trace shows fewer than two busy GPUs (0 pairs)", figs)
    a, b = best_pair(v.report)
    both = f"GPU {a} and GPU {b} were both busy {pct(ov)} of the time either was"
    other = peers.get("parallel" if v.variant == "sequential" else "sequential")
    other_ov = other.figure("cross_device_overlap") if other and other.has_gpu else None
    if v.variant == "sequential":
        figs["parallel_cross_device_overlap"] = other_ov
        if ov <= OVERLAP_NONE:
            return Decision(HOLDS, f"{both}: the synchronize makes them take turns", figs)
        return Decision(FAILS, f"{both} despite the synchronize between them "
                               f"(at most {pct(OVERLAP_NONE)} expected)", figs)
    figs["sequential_cross_device_overlap"] = other_ov
    figs.update(speedups(v, other))
    seq = "not recorded" if other_ov is None else pct(other_ov)
    if ov < OVERLAP_HOLDS:
        return Decision(FAILS, f"GPU {a} and GPU {b} were both busy only {pct(ov)} of the time "
                               f"either was (at least {pct(OVERLAP_HOLDS)} needed)"
                               f"{idle_clause(v.report)}", figs)
    if other_ov is not None and other_ov > OVERLAP_NONE:
        return Decision(FAILS, f"{both}, but sequential overlapped {seq} too, so the overlap is "
                               "not the missing synchronize's doing", figs)
    return Decision(HOLDS, f"{both} (sequential: {seq}){speed_clause(figs, 'sequential')}", figs)


def copy(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    row = copy_row(v.report)
    hidden = v.figure("hidden_copy_fraction")
    facts = v.meta.get("facts") or {}
    on_compute = v.extra.get("copies_on_compute_stream")
    figs: Figures = {
        "hidden_copy_fraction": hidden,
        "exposed_copy_us": row["exposed_us"],
        "memcpy_us": row["memcpy_us"],
        "copies": int(row["copies"]),
        "pageable_copies": int(row["pageable"]),
        "copies_on_compute_stream": on_compute,
        "dest_pinned": facts.get("dest_pinned"),
    }
    if v.variant != "blocking":
        figs.update(speedups(v, peers.get("blocking")))
    short = shortfall(v, 1, "with 0 GPU copies there is no copy engine or stream to overlap")
    if short:
        return Decision(CANNOT_TELL, short, figs)
    if hidden is None:
        return Decision(CANNOT_TELL, "the trace holds 0 GPU memory copies to judge", figs)
    if hidden >= HIDDEN_HOLDS:
        return Decision(HOLDS, f"{pct(hidden)} of the copy time ran under matmuls "
                               f"({dur(row['exposed_us'])} exposed of {dur(row['memcpy_us'])}), "
                               f"the copies on their own stream", figs)
    copies = int(row["copies"])
    if on_compute is not None and on_compute == copies:
        where = "copies ran on the compute stream"
    elif on_compute:
        where = f"{on_compute} of {copies} copies ran on the compute stream"
    else:
        where = "copies ran on their own stream"
    if row["pageable"] and v.variant == "nonblocking-same-stream":
        reason = "non_blocking into pageable memory is synchronous"
    elif row["pageable"]:
        reason = "a copy into pageable memory holds the host until it is done"
    elif on_compute:
        reason = ("one stream starts a copy only after the matmuls queued before it, "
                  "whatever non_blocking says")
    else:
        reason = "yet they rarely met a running kernel" + idle_clause(v.report)
    return Decision(FAILS, f"{where}: {pct(hidden)} hidden ({dur(row['exposed_us'])} exposed); "
                           f"{reason}", figs)


def _matmuls(v: Recorded) -> int:
    facts = v.meta.get("facts") or {}
    sizes = v.meta.get("sizes") or {}
    n = facts.get("matmuls_per_step")
    if n is None:
        n = sizes.get("reps", 1) if v.variant == "one-stream" else 1
    return max(int(n), 1)


def _kernel_us(v: Recorded) -> float:
    return sum(float(d.get("kernel_us") or 0) for d in _rows(v.report, "devices"))


def independent_ops(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    n = _matmuls(v)
    per = _kernel_us(v) / (n * v.steps) if v.has_gpu else None
    figs: Figures = {"matmuls_per_step": n, "kernel_per_matmul_us": per,
                     "kernels": v.figure("kernels")}
    one = v if v.variant == "one-stream" else peers.get("one-stream")
    single = v if v.variant == "single" else peers.get("single")
    kratio = None
    if one and single and one.has_gpu and single.has_gpu:
        kratio = ratio(_kernel_us(one) / one.steps, _kernel_us(single) / single.steps)
    figs["kernel_time_ratio"] = kratio
    if one and single:
        figs["wall_ratio"] = ratio(one.plain_step_us, single.plain_step_us)
    short = shortfall(v, 1, "concurrent kernels need a GPU, and this trace has 0 kernels")
    if short:
        return Decision(CANNOT_TELL, short, figs)
    if v.variant == "one-stream":
        mk = int(v.extra.get("max_concurrent_kernels") or 0)
        ck = float(v.extra.get("concurrent_kernels_us") or 0.0)
        streams = int(v.figure("max_concurrent_streams") or 0)
        figs.update(max_concurrent_kernels=mk, concurrent_kernels_us=ck)
        if mk > 1 and ck >= KERNEL_CONCURRENCY_MIN * _kernel_us(v):
            return Decision(HOLDS, f"up to {mk} kernels ran at once, for {dur(ck)} "
                                   f"({pct(ck / _kernel_us(v))} of the kernel time)", figs)
        tail = f", {kratio:.1f}x one matmul's GPU time" if kratio is not None else ""
        return Decision(FAILS, f"the {n} matmuls ran one at a time ({mk} kernel at most at once "
                               f"on {streams} stream), {dur(per)} each{tail}", figs)
    n_one = _matmuls(one) if one else None
    if one is None or kratio is None or n_one is None:
        return Decision(CANNOT_TELL, "needs the one-stream variant recorded beside it "
                                     "(0 of 2 variants to compare)", figs)
    one_each = _kernel_us(one) / (n_one * one.steps)
    wall = figs.get("wall_ratio")
    text = (f"on the GPU {n_one} matmuls took {kratio:.1f}x one ({dur(one_each)} against "
            f"{dur(per)} each), the wall clock says {times(wall)}")
    if kratio < n_one * (1 - SERIAL_RATIO_TOLERANCE):
        return Decision(HOLDS, text, figs)
    if wall is not None and wall < kratio * (1 - SERIAL_RATIO_TOLERANCE):
        text += " because a step's fixed launch and synchronize cost weighs most on one matmul"
    return Decision(FAILS, text, figs)


def _ops_per_step(v: Recorded) -> float:
    return float((v.reports[0].get("counts") or {}).get("cpu_ops") or 0) / v.steps


def _op_names(v: Recorded) -> set[str]:
    return {str(o.get("name")) for o in _rows(v.report, "top_ops")}


def small_ops(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    gaps = [g for g in _rows(v.report, "host", "kernel_gaps") if g.get("p50_us") is not None]
    busiest = max(gaps, key=lambda g: g.get("gaps") or 0, default={})
    figs: Figures = {
        "cpu_ops_per_step": _ops_per_step(v),
        "launch_bound_streams": v.figure("launch_bound_streams"),
        "kernel_p50_us": busiest.get("kernel_p50_us"),
        "gap_p50_us": busiest.get("p50_us"),
        "launch_latency_p50_us": v.figure("launch_latency_p50_us"),
        "max_concurrent_kernels": v.extra.get("max_concurrent_kernels"),
        "utilization": v.figure("utilization"),
    }
    if v.variant == "loop":
        short = shortfall(v, 1, "launch-bound is a question about GPU kernels and their "
                                "launches, and this trace has 0")
        if short:
            return Decision(CANNOT_TELL, short, figs)
        if not busiest:
            return Decision(CANNOT_TELL, "no stream ran 2 or more kernels to measure gaps", figs)
        text = (f"median kernel {dur(busiest.get('kernel_p50_us'))} against a median gap of "
                f"{dur(busiest.get('p50_us'))} between kernels (launch latency p50 "
                f"{dur(figs['launch_latency_p50_us'])})")
        if figs["launch_bound_streams"]:
            return Decision(HOLDS, text + idle_clause(v.report), figs)
        return Decision(FAILS, text + ": the kernels outlast the waits between them", figs)
    loop = peers.get("loop")
    figs.update(speedups(v, loop))
    if loop is None:
        return Decision(CANNOT_TELL, "needs the loop variant recorded beside it "
                                     "(0 of 2 variants to compare)", figs)
    trace = figs.get("speedup_span")
    loop_ops, run_ops = _ops_per_step(loop), figs["cpu_ops_per_step"]
    text = (f"span ratio loop/run {times(trace)} (wall clock "
            f"{times(figs.get('speedup_wall'))})")
    if abs(loop_ops - run_ops) > SAME_OPS_TOLERANCE * max(loop_ops, run_ops):
        extra = sorted(_op_names(loop) ^ _op_names(v))
        which = f" ({', '.join(extra[:2])} in one of them only)" if extra else ""
        return Decision(FAILS, f"{text}, but the loop issued {loop_ops:.0f} CPU ops per step "
                               f"and run() {run_ops:.0f}{which}: the ops differ, so the time "
                               "difference is not loop against run()", figs)
    text = f"loop and run() issue the same {run_ops:.0f} CPU ops per step: {text}"
    if clear_speedup({"speedup_span": trace, "speedup_wall": figs.get("speedup_wall")}):
        return Decision(HOLDS, text, figs)
    if trace is not None and trace >= SPEEDUP_CLEAR:
        text += ", and the clocks disagree, so it is timing noise"
    return Decision(FAILS, text + "; the notes' 0.0518 s against 0.0005 s timed the loop first, "
                                  "on a cold start", figs)


def timeline_figures(tl: Timeline) -> Figures:
    """Figures the report lacks, from the timeline itself (interval algebra only).

    * ``max_concurrent_kernels``: most kernels of one device running at one instant;
      ``concurrent_kernels_us``: time with two or more of them (summed over devices).
    * ``copies_on_compute_stream``: copies issued on a stream that also ran kernels.
    * ``host_compute_us``: CPU ops on the host's main thread that contain no CUDA
      runtime/driver/sync call (host computation, not GPU driving), as a union;
      ``host_gpu_overlap_us``: the part of it inside the union of GPU busy time (kernels,
      copies, memsets of every device); ``host_kernel_overlap_us``: inside kernels only.
    """
    out: Figures = {"max_concurrent_kernels": 0, "concurrent_kernels_us": 0.0}
    k = tl.kernels
    for _, rows in k.groupby("device"):
        s, e = rows["start"].to_numpy(), rows["end"].to_numpy()
        out["max_concurrent_kernels"] = max(out["max_concurrent_kernels"], max_depth(s, e))
        out["concurrent_kernels_us"] += coverage(s, e, 2).length / 1000.0
    copies = tl.copies
    if not copies.empty:
        on = copies.set_index(["device", "stream"]).index.isin(
            k.set_index(["device", "stream"]).index)
        out["copies_on_compute_stream"] = int(np.count_nonzero(on))
    cpu = tl.cpu
    pid = host_process(cpu)
    mine = cpu[cpu["pid"] == pid] if pid is not None else cpu.iloc[0:0]
    ops = mine[mine["kind"] == "cpu_op"]
    if ops.empty:
        out.update(host_compute_us=0.0, host_gpu_overlap_us=0.0, host_kernel_overlap_us=0.0)
        return out
    counts = ops["tid"].value_counts()
    main = int(counts[counts == counts.max()].index.min())
    ops = ops[ops["tid"] == main]
    rt = mine[mine["kind"].isin(RUNTIME_KINDS) & (mine["tid"] == main)]
    driving = measure_within(spans(rt["start"], rt["end"]), ops["start"], ops["end"]) > 0
    compute = spans(ops["start"].to_numpy()[~driving], ops["end"].to_numpy()[~driving])
    busy = spans(tl.gpu["start"], tl.gpu["end"])
    out["host_compute_us"] = compute.length / 1000.0
    out["host_gpu_overlap_us"] = overlap(compute, busy) / 1000.0
    out["host_kernel_overlap_us"] = overlap(compute, spans(k["start"], k["end"])) / 1000.0
    return out


def cpu_gpu(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    hc = float(v.extra.get("host_compute_us") or 0.0)
    ov = float(v.extra.get("host_gpu_overlap_us") or 0.0)
    frac = ratio(ov, hc)
    hidden = v.figure("hidden_copy_fraction")
    figs: Figures = {
        "host_compute_us": hc,
        "host_gpu_overlap_us": ov,
        "host_kernel_overlap_us": v.extra.get("host_kernel_overlap_us"),
        "host_overlap_fraction": frac,
        "hidden_copy_fraction": hidden,
        "utilization": v.figure("utilization"),
    }
    if v.variant != "serial":
        figs.update(speedups(v, peers.get("serial")))
    short = shortfall(v, 1, "host compute cannot overlap GPU activity without a GPU")
    if short:
        return Decision(CANNOT_TELL, short, figs)
    if frac is None:
        return Decision(CANNOT_TELL, "the trace shows 0 µs of host computation on the main "
                                     "thread", figs)
    host_ok = frac >= HOST_OVERLAP_HOLDS
    copy_ok = hidden is None or hidden >= HIDDEN_HOLDS
    text = f"{pct(frac)} of the host's {dur(hc)} of computation ran while the GPU was busy"
    text += "" if host_ok else f" (at least {pct(HOST_OVERLAP_HOLDS)} needed)"
    if hidden is not None:
        text += f" and {pct(hidden)} of the copy time hid under GPU compute"
        text += "" if copy_ok else f" (at least {pct(HIDDEN_HOLDS)} needed)"
    text += speed_clause(figs, "serial")
    return Decision(HOLDS if host_ok and copy_ok else FAILS, text, figs)


def scheduled(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    expected = int((v.meta.get("profiler") or {}).get("profiled_steps") or 0)
    steps = list(v.report.get("steps") or [])
    per = [measure(s, "cross_device_overlap").value for s in steps]
    figs: Figures = {
        "steps_recorded": len(steps),
        "steps_expected": expected,
        "cross_device_overlap_per_step": per,
        "cross_device_overlap": v.figure("cross_device_overlap"),
    }
    short = shortfall(v, 2, f"both devices busy at once needs two ({len(steps)} of {expected} "
                            "active steps in the trace)")
    if short:
        return Decision(CANNOT_TELL, short, figs)
    if len(steps) != expected:
        return Decision(FAILS, f"the trace holds {len(steps)} ProfilerStep windows where the "
                               f"schedule has {expected} active steps", figs)
    known = [p for p in per if p is not None]
    if len(known) < len(per) or min(known, default=0.0) < OVERLAP_HOLDS:
        ranked = [-1.0 if p is None else p for p in per]  # a step with no figure is worst
        worst = ranked.index(min(ranked))
        n = steps[worst].get("window", {}).get("step", worst)
        return Decision(FAILS, f"in ProfilerStep#{n} the two GPUs were both busy only "
                               f"{pct(per[worst])} of the time either was (at least "
                               f"{pct(OVERLAP_HOLDS)} needed){idle_clause(steps[worst])}", figs)
    a, b = best_pair(v.report)
    return Decision(HOLDS, f"all {len(steps)} active steps are in the trace and in each GPU {a} "
                           f"and GPU {b} were both busy {pct(min(known))} to {pct(max(known))} "
                           "of the time either was", figs)


def dag(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    correct = v.meta.get("correct")
    cs = v.figure("concurrent_streams_us")
    figs: Figures = {
        "correct": correct,
        "concurrent_streams_us": cs,
        "max_concurrent_streams": v.figure("max_concurrent_streams"),
        "streams": len(_rows(v.report, "streams")),
    }
    if v.variant != "serial":
        figs.update(speedups(v, peers.get("serial")))
    if correct is False:
        detail = v.meta.get("correct_detail") or "results differ"
        return Decision(FAILS, f"wrong results ({detail}), whatever the timing "
                               f"({dur(cs)} of stream concurrency)", figs)
    short = shortfall(v, 1, "with 0 CUDA streams the branches ran in order")
    if short:
        return Decision(CANNOT_TELL, short, figs)
    cs = cs or 0.0
    if v.variant == "serial":
        if cs == 0:
            return Decision(HOLDS, f"{figs['streams']} stream ran the DAG with 0 µs of stream "
                                   "concurrency", figs)
        return Decision(FAILS, f"{figs['streams']} streams were busy at once for {dur(cs)}", figs)
    if correct is None:
        return Decision(CANNOT_TELL, f"the recording checked no results ({dur(cs)} of stream "
                                     "concurrency)", figs)
    trace = figs.get("speedup_gpu_span")
    notes = (f"; trace speedup {times(trace)} (wall clock {times(figs.get('speedup_wall'))}), "
             "not the notes' 61.86x, which timed the serial run first, cold")
    if cs > 0:
        return Decision(HOLDS, f"two streams were busy at once for {dur(cs)} (at most "
                               f"{figs['max_concurrent_streams']:.0f} at once) and the results "
                               f"match the serial ones{notes}", figs)
    return Decision(FAILS, f"the branches never ran at once (0 µs on {figs['streams']} streams) "
                           f"although the results match{notes}", figs)


def mlp(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    dp = v if v.variant == "data-parallel" else peers.get("data-parallel")
    single = v if v.variant == "single" else peers.get("single")
    figs: Figures = {
        "cross_device_overlap": dp.figure("cross_device_overlap") if dp else None,
        "cross_device_overlap_of_min": dp.figure("cross_device_overlap_of_min") if dp else None,
        "correct": dp.meta.get("correct") if dp else None,
        "utilization": v.figure("utilization"),
    }
    if dp is not None and single is not None:
        figs.update(speedups(dp, single))
    if dp is None:
        return Decision(CANNOT_TELL, "needs the data-parallel variant recorded beside it "
                                     "(0 of 2 variants to compare)", figs)
    short = shortfall(dp, 2, "data parallelism over two GPUs needs two")
    if v.variant == "single":
        if short:
            return Decision(CANNOT_TELL, f"data-parallel {short}", figs)
        text = (f"two GPUs ran a step {times(figs.get('speedup_gpu_span'))} as fast as one by "
                f"the GPU span ({times(figs.get('speedup_wall'))} by the wall clock)")
        return Decision(HOLDS if clear_speedup(figs) else FAILS, text, figs)
    f_min, f_either = figs["cross_device_overlap_of_min"], figs["cross_device_overlap"]
    if figs["correct"] is False:
        return Decision(FAILS, f"one data-parallel step differs from one single-device step "
                               f"({v.meta.get('correct_detail')}), whatever the timing "
                               f"({pct(f_min)} of the less busy GPU's time computing at once)",
                        figs)
    if short:
        return Decision(CANNOT_TELL, short, figs)
    a, b = best_pair(v.report)
    text = (f"GPU {a} and GPU {b} computed at once for {pct(f_min)} of the less busy GPU's time "
            f"({pct(f_either)} of the time either was busy)")
    if f_min is None or f_min < MLP_OVERLAP_HOLDS:
        return Decision(FAILS, text + f", at least {pct(MLP_OVERLAP_HOLDS)} needed"
                                      + idle_clause(v.report), figs)
    if figs["correct"] is None:
        return Decision(CANNOT_TELL, text + ", but the recording checked no results", figs)
    return Decision(HOLDS, text + " and the update equals one device's", figs)


def ddp(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    hidden = [(r.get("rank"), measure(r, "hidden_comm_fraction").value) for r in v.reports]
    known = [(rank, h) for rank, h in hidden if h is not None]
    cross = [p.get("fraction_of_either") for p in _rows(v.report, "cross_trace", "pairs")]
    cross_known = [c for c in cross if c is not None]
    worst = min(known, key=lambda rh: rh[1], default=(None, None))
    figs: Figures = {
        "hidden_comm_fraction": worst[1],
        "exposed_comm_us": sum(measure(r, "exposed_comm_us").value or 0.0 for r in v.reports),
        "cross_rank_overlap": max(cross_known) if cross_known else None,
        "ranks": len(v.reports),
        "correct": v.meta.get("correct"),
    }
    if figs["correct"] is False:
        return Decision(FAILS, "the ranks' parameters differ after training, whatever the "
                               f"timing ({len(v.reports)} ranks)", figs)
    short = shortfall(v, 2, "NCCL communication between GPUs needs two")
    if short:
        return Decision(CANNOT_TELL, short, figs)
    if worst[1] is None:
        return Decision(CANNOT_TELL, f"the {len(v.reports)} traces hold 0 communication "
                                     "kernels", figs)
    text = (f"{pct(worst[1])} of the all-reduce time ran under compute kernels on rank "
            f"{worst[0]}, the rank that hid least ({dur(figs['exposed_comm_us'])} exposed over "
            f"all ranks), and the ranks' GPUs were busy together "
            f"{pct(figs['cross_rank_overlap'])} of the time either was")
    return Decision(HOLDS if worst[1] >= COMM_HIDDEN_HOLDS else FAILS, text, figs)


RULES: dict[str, Rule] = {
    "two-devices": two_devices,
    "copy": copy,
    "independent-ops": independent_ops,
    "small-ops": small_ops,
    "cpu-gpu": cpu_gpu,
    "scheduled": scheduled,
    "dag": dag,
    "mlp": mlp,
    "ddp": ddp,
}


# -- wall clock against the trace -------------------------------------------------------------


def wall_figures(v: Recorded) -> tuple[Figures, str]:
    """The trace's spans against the metadata's wall-clock times, and what explains the gap."""
    steps, span, gpu_span = v.steps, v.span_us(), v.span_us("gpu_span_us")
    plain, prof = v.plain_step_us, v.profiled_step_us
    walls = [w * 1e6 for w in (v.timing.get("plain") or {}).get("step_wall_s") or []]
    spread = (f" (the plain steps ranged from {dur(min(walls))} to {dur(max(walls))})"
              if walls and min(walls) > 0 and max(walls) > WALL_SPAN_MISMATCH * min(walls)
              else "")
    active_us = None if prof is None else prof * steps  # the traced steps' wall time
    events = (v.timing.get("profiled") or {}).get("cuda_event_ms") or {}
    per_dev = [sum(ms) / len(ms) * 1000.0 for ms in events.values() if ms]
    event_us = max(per_dev) if per_dev else None
    figs: Figures = {
        "steps_profiled": steps,
        "span_us": span,
        "gpu_span_us": gpu_span,
        "host_outside_gpu_us": span - gpu_span if gpu_span else None,
        "plain_step_wall_us": plain,
        "profiled_step_wall_us": prof,
        "profiler_overhead_us": None if plain is None or prof is None else prof - plain,
        "profiled_wall_us": active_us,
        "cuda_event_step_us": event_us,
    }
    s = "" if steps == 1 else "s"
    parts = []
    if plain is not None and prof is not None:
        if prof >= plain:
            parts.append(f"Unprofiled a step took {dur(plain)} on the wall clock{spread}, "
                         f"profiled {dur(prof)}: the profiler added {dur(prof - plain)} "
                         f"({times(prof / plain)}).")
        else:
            parts.append(f"Unprofiled a step took {dur(plain)} on the wall clock{spread}, "
                         f"profiled {dur(prof)}: {dur(plain - prof)} less, which is timing "
                         "noise (other load on the machine, or a short step), not a profiler "
                         "speed-up.")
    if gpu_span:
        parts.append(f"The trace spans {dur(span)} ({steps} step{s}); GPU activity spans "
                     f"{dur(gpu_span)} of it, and the other {dur(span - gpu_span)} is host time "
                     "outside GPU activity (issuing work before the first kernel, synchronizing "
                     "and step bookkeeping after the last).")
    else:
        parts.append(f"The trace spans {dur(span)} ({steps} step{s}) of host activity only: "
                     "it holds no GPU activity.")
    if active_us and span:
        r = active_us / span
        if r > WALL_SPAN_MISMATCH:
            parts.append(f"The profiled steps took {dur(active_us)} on the wall clock, "
                         f"{r:.1f}x the span: that time went outside the traced events "
                         "(setup, the profiler's own bookkeeping, waiting).")
        elif r < 1 / WALL_SPAN_MISMATCH:
            parts.append(f"The span is {1 / r:.1f}x the profiled steps' wall time "
                         f"({dur(active_us)}): the trace also holds events outside the timed "
                         "steps (the profiler's start and stop, other threads or processes).")
        else:
            parts.append(f"The profiled steps' wall time, {dur(active_us)}, matches the span "
                         f"within {abs(r - 1) * 100:.0f}%.")
    if event_us is not None and gpu_span:
        parts.append(f"CUDA events timed {dur(event_us)} of GPU time per profiled step, "
                     f"against {dur(gpu_span / steps)} of GPU span per step in the trace.")
    return figs, " ".join(parts)


# -- putting it together ----------------------------------------------------------------------


def decide(v: Recorded, peers: Mapping[str, Recorded]) -> dict[str, Any]:
    """The verdict object of one variant (``peers``: the workload's other variants)."""
    rule = RULES.get(v.workload)
    if rule is None:
        d = Decision(CANNOT_TELL, f"this traceprobe has no rule for workload {v.workload!r} "
                                  f"(it knows {len(RULES)})")
    else:
        d = rule(v, peers)
    wall, note = wall_figures(v)
    spec_claim = v.meta.get("claim") or ""
    return {
        "workload": v.workload,
        "variant": v.variant,
        "folder": v.folder or f"{v.workload}/{v.variant}",
        "claim": CLAIMS.get((v.workload, v.variant), spec_claim),
        "verdict": d.verdict,
        "why": d.why,
        "figures": {**d.figures, **wall},
        "wall_clock": note,
    }


def verify(recorded: Sequence[Recorded]) -> list[dict[str, Any]]:
    """One verdict per recorded variant: by recording, then in registry order.

    A variant's peers are the other variants of its workload in the same recording.
    """
    by_workload: dict[tuple[str, str], dict[str, Recorded]] = {}
    for v in recorded:
        by_workload.setdefault((v.recording, v.workload), {})[v.variant] = v
    order = {(w.name, var): i for i, (w, var) in enumerate(
        (w, var) for w in registry.WORKLOADS for var in w.variants)}

    def key(v: Recorded) -> tuple[Any, ...]:
        return (v.recording, order.get((v.workload, v.variant), len(order)), v.folder)

    out = []
    for v in sorted(recorded, key=key):
        group = by_workload[(v.recording, v.workload)]
        out.append(decide(v, {k: p for k, p in group.items() if k != v.variant}))
    return out


def find_metadata(root: Path) -> list[Path]:
    """Every finished variant's metadata under ``root`` (hidden staging folders skipped)."""
    found = [p for p in root.rglob(meta_file.FILENAME)
             if not any(part.startswith(".") for part in p.relative_to(root).parts)]
    if (root / meta_file.FILENAME).is_file() and root / meta_file.FILENAME not in found:
        found.append(root / meta_file.FILENAME)
    return sorted(found)


def trace_paths(meta_path: Path, m: Mapping[str, Any]) -> list[Path]:
    folder = meta_path.parent
    listed = [folder / t["file"] for t in m.get("traces") or [] if t.get("file")]
    for p in listed:
        if not p.is_file():
            raise TraceError(p, f"listed in {meta_path} but missing",
                             "record the variant again (traceprobe record --force)")
    if listed:
        return listed
    from traceprobe.loader import find_traces

    return find_traces(folder)


def machine_of(metas: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    first = metas[0]
    mach = first.get("machine") or {}
    out: dict[str, Any] = {
        "kind": mach.get("kind"),
        "gpu_count": len(first.get("gpus") or []),
        "gpus": [g.get("name") for g in first.get("gpus") or []],
        "torch": first.get("torch"),
        "cuda": first.get("cuda"),
        "hostname": first.get("hostname"),
    }
    mixed = [k for k in ("hostname", "torch", "cuda") if len({str(m.get(k)) for m in metas}) > 1]
    if mixed:
        out["note"] = f"the variants were recorded with different {', '.join(mixed)}"
    return out


def units(verdicts: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each figure name's unit: us | fraction | ratio | count | bool | text."""
    out: dict[str, str] = {}
    for v in verdicts:
        for name, value in (v.get("figures") or {}).items():
            if name.endswith("_us"):
                out[name] = "us"
            elif name in FRACTIONS:
                out[name] = "fraction"
            elif name.startswith("speedup") or name.endswith("_ratio"):
                out[name] = "ratio"
            elif isinstance(value, bool):
                out[name] = "bool"
            elif isinstance(value, str):
                out[name] = "text"
            else:
                out.setdefault(name, "count")
    return dict(sorted(out.items()))


def verify_dir(path: str | Path, *, jobs: int | None = None) -> dict[str, Any]:
    """Verdicts for every variant recorded under ``path`` (schema ``traceprobe.verdicts/1``)."""
    from traceprobe import loader
    from traceprobe import report as rp

    root = Path(path)
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory; give the folder `traceprobe record` "
                         "wrote (default traceprobe-out)")
    metas_at = find_metadata(root)
    if not metas_at:
        raise UsageError(f"{root}: no {meta_file.FILENAME} under it; record the experiments "
                         f"first: traceprobe record --out {root}")
    metas = []
    for p in metas_at:
        try:
            metas.append(meta_file.read(p))
        except (OSError, ValueError) as e:
            raise TraceError(p, f"cannot read the metadata ({e})",
                             "record the variant again") from e
    files = [trace_paths(p, m) for p, m in zip(metas_at, metas, strict=True)]
    timelines = iter(loader.load_many([f for fs in files for f in fs], jobs=jobs))
    recorded = []
    for p, m, fs in zip(metas_at, metas, files, strict=True):
        tls = [next(timelines) for _ in fs]
        if not any(t.get("rank") is not None for t in m.get("traces") or []):
            tls = tls[:1]  # --repeat N: one trace per cycle; the first cycle speaks for all
        step = "all" if m.get("workload") == "scheduled" else None
        if len(tls) == 1:
            report = rp.analyze(tls[0], step=step).to_dict()
        else:
            report = rp.analyze_many(tls, step=step).to_dict()
        extra = timeline_figures(tls[0]) if len(tls) == 1 else {}
        recorded.append(Recorded(m, report, extra, p.parent.relative_to(root).as_posix()))
    verdicts = verify(recorded)
    return {
        "schema": SCHEMA,
        "source": str(root),
        "machine": machine_of(metas),
        "thresholds": dict(THRESHOLDS),
        "units": units(verdicts),
        "verdicts": verdicts,
    }
