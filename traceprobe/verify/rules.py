"""The rules, one per workload: does the variant's claim hold, judged from its figures?

    decision = RULES[v.workload](v, peers)   # peers: the workload's other recorded variants

Every rule is a pure function of report and metadata dicts (:class:`Recorded`), so tests
feed it hand-built ones. It first checks the machine (a two-GPU claim on one GPU cannot be
told), then compares figures with the thresholds of :mod:`traceprobe.verify.thresholds`,
and says why in one sentence with numbers.
"""

from __future__ import annotations

from collections.abc import Mapping

from traceprobe.expect.names import measure
from traceprobe.verify.clauses import (
    best_pair,
    clear_speedup,
    copy_row,
    dur,
    idle_clause,
    pct,
    ratio,
    rows_at,
    shortfall,
    speed_clause,
    speedups,
    speedups_over,
    times,
)
from traceprobe.verify.decision import CANNOT_TELL, FAILS, HOLDS, PARTLY, Decision, Rule
from traceprobe.verify.figures import Figures
from traceprobe.verify.recorded import Recorded
from traceprobe.verify.thresholds import (
    COMM_HIDDEN_HOLDS,
    COMM_HIDDEN_PARTLY,
    HIDDEN_HOLDS,
    HOST_OVERLAP_HOLDS,
    KERNEL_CONCURRENCY_MIN,
    MLP_OVERLAP_HOLDS,
    OVERLAP_HOLDS,
    OVERLAP_NONE,
    SAME_OPS_TOLERANCE,
    SERIAL_RATIO_TOLERANCE,
    SPEEDUP_CLEAR,
)


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
    figs["copy_gb_per_s"] = _copy_rate(v)
    figs.update(speedups_over(v, peers, "blocking"))
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
    reason += _rate_clause(v, peers.get("blocking"), figs)
    return Decision(FAILS, f"{where}: {pct(hidden)} hidden ({dur(row['exposed_us'])} exposed); "
                           f"{reason}", figs)


def _copy_rate(v: Recorded) -> float | None:
    """All copies' bytes over their summed time (report ``copies`` rows), GB/s."""
    rows = rows_at(v.report, "copies")
    nbytes = sum(float(r.get("bytes") or 0) for r in rows)
    us = sum(float(r.get("us") or 0) for r in rows)
    return nbytes / (us * 1000) if us > 0 and nbytes > 0 else None


def _memory(v: Recorded) -> str:
    kinds = {str(r.get("dst_kind") if r.get("direction") == "DtoH" else r.get("src_kind"))
             for r in rows_at(v.report, "copies")}
    return "/".join(sorted(k.lower() for k in kinds if k)) or "host"


def _rate_clause(v: Recorded, blocking: Recorded | None, figs: Figures) -> str:
    """How fast the copies ran, and what a speedup over blocking came from when not hiding."""
    rate = figs.get("copy_gb_per_s")
    if rate is None:
        return ""
    text = f"; the copies ran at {rate:.3g} GB/s into {_memory(v)} memory"
    base = _copy_rate(blocking) if blocking is not None and blocking is not v else None
    speed = figs.get("speedup_gpu_span") or figs.get("speedup_span")
    if base and speed and speed >= SPEEDUP_CLEAR:
        text += (f" against {base:.3g} GB/s into {_memory(blocking)} memory in blocking "  # type: ignore[arg-type]
                 f"({times(rate / base)}): the {times(speed)} speedup over blocking comes from "
                 "faster copies, not from hiding them")
    return text


def _matmuls(v: Recorded) -> int:
    facts = v.meta.get("facts") or {}
    sizes = v.meta.get("sizes") or {}
    n = facts.get("matmuls_per_step")
    if n is None:
        n = sizes.get("reps", 1) if v.variant == "one-stream" else 1
    return max(int(n), 1)


def _kernel_us(v: Recorded) -> float:
    return sum(float(d.get("kernel_us") or 0) for d in rows_at(v.report, "devices"))


def independent_ops(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    if v.variant == "many-streams":
        return independent_ops_many_streams(v, peers)
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
    return {str(o.get("name")) for o in rows_at(v.report, "top_ops")}


def small_ops(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    if v.variant == "cuda-graph":
        return small_ops_cuda_graph(v, peers)
    gaps = [g for g in rows_at(v.report, "host", "kernel_gaps") if g.get("p50_us") is not None]
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
    figs.update(speedups_over(v, peers, "serial"))
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
        "streams": len(rows_at(v.report, "streams")),
    }
    figs.update(speedups_over(v, peers, "serial"))
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
        text = (f"two streams were busy at once for {dur(cs)} (at most "
                f"{figs['max_concurrent_streams']:.0f} at once) and the results match the "
                f"serial ones{notes}")
        if clear_speedup(figs):  # the notes claim a speedup, not merely that streams touched
            return Decision(HOLDS, text, figs)
        return Decision(PARTLY, text + f": the streams overlapped, but the DAG ran no faster "
                                       f"(at least {times(SPEEDUP_CLEAR)} needed)", figs)
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
    cross = [p.get("fraction_of_either") for p in rows_at(v.report, "cross_trace", "pairs")]
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
    buckets = _comm_kernels(v)
    figs["allreduce_kernels"] = buckets
    text = (f"{pct(worst[1])} of the all-reduce time ran under compute kernels on rank "
            f"{worst[0]}, the rank that hid least ({dur(figs['exposed_comm_us'])} exposed over "
            f"all ranks), and the ranks' GPUs were busy together "
            f"{pct(figs['cross_rank_overlap'])} of the time either was")
    if worst[1] >= COMM_HIDDEN_HOLDS:
        return Decision(HOLDS, text, figs)
    if worst[1] >= COMM_HIDDEN_PARTLY:
        return Decision(PARTLY, text + f"; most ({pct(COMM_HIDDEN_HOLDS)}) needs more buckets: "
                                       f"with {buckets} all-reduce kernel"
                                       f"{'' if buckets == 1 else 's'} per rank the last bucket, "
                                       "reduced after the backward pass, cannot hide", figs)
    return Decision(FAILS, text + f", under {pct(COMM_HIDDEN_PARTLY)}", figs)


def _comm_kernels(v: Recorded) -> int:
    """Communication kernels of the first rank's trace (NCCL launches: the buckets reduced)."""
    rows = rows_at(v.reports[0], "top_kernels") if v.reports else []
    return sum(int(k.get("count") or 0) for k in rows if "nccl" in str(k.get("name", "")).lower())


def small_ops_cuda_graph(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    """The loop's GPU part replayed from a CUDA graph: clearly faster than the loop?"""
    loop = peers.get("loop")
    figs: Figures = {"cuda_graph": bool((v.meta.get("facts") or {}).get("cuda_graph"))}
    figs.update(speedups(v, loop))
    short = shortfall(v, 1, "a CUDA graph needs a GPU, so this variant ran the plain loop")
    if short or not figs["cuda_graph"]:
        return Decision(CANNOT_TELL, short or "no CUDA graph was captured (0 graphs)", figs)
    if loop is None:
        return Decision(CANNOT_TELL, "needs the loop variant recorded beside it "
                                     "(0 of 2 variants to compare)", figs)
    text = (f"one graph replay instead of the loop's launches: span ratio loop/graph "
            f"{times(figs.get('speedup_span'))} (wall clock {times(figs.get('speedup_wall'))})")
    sp = {"speedup_span": figs.get("speedup_span"), "speedup_wall": figs.get("speedup_wall")}
    return Decision(HOLDS if clear_speedup(sp) else FAILS, text, figs)


def independent_ops_many_streams(v: Recorded, peers: Mapping[str, Recorded]) -> Decision:
    """The matmuls on several streams: little gain over one stream, as each fills the GPU."""
    one = peers.get("one-stream")
    figs: Figures = {"streams": (v.meta.get("facts") or {}).get("streams"),
                     "max_concurrent_kernels": v.extra.get("max_concurrent_kernels")}
    figs.update(speedups(v, one))
    short = shortfall(v, 1, "streams are a GPU's, and this trace has 0 kernels")
    if short:
        return Decision(CANNOT_TELL, short, figs)
    if one is None:
        return Decision(CANNOT_TELL, "needs the one-stream variant recorded beside it "
                                     "(0 of 2 variants to compare)", figs)
    sp = figs.get("speedup_gpu_span") or figs.get("speedup_span")
    text = (f"{figs['streams']} streams against one: {times(sp)} by the GPU span "
            f"({times(figs.get('speedup_wall'))} by the wall clock)")
    if sp is not None and sp < SPEEDUP_CLEAR:
        return Decision(HOLDS, text + ": the matmuls fill the GPU, streams add no room", figs)
    return Decision(FAILS, text, figs)


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

