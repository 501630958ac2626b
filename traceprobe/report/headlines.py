"""Headlines: a report's main findings as short plain-English sentences with numbers.

Read only from figures already in the report, so a headline can never disagree
with the JSON next to it. Each finding carries the time at stake (idle time, exposed
copy or communication time, concurrent time, host-late gaps, launch overhead ...); a
finding is *material* when that time is at least :data:`MATERIAL` of the window, and
only material findings become headlines, ranked by the time at stake (ties keep the
order: what the GPUs did, what overlapped, what the host did). A median over fewer than
:data:`MIN_SAMPLE` values is not stated as a median: the sentence says "n = k".
"""

from __future__ import annotations

import re

from traceprobe.report.model import Report

MAX_PAIRS = 3  # more device pairs than this are summarised in one sentence
MAX_LAUNCH_BOUND = 3
BUSY_ENOUGH = 0.9  # above this utilization a device's idle time gets no sentence
MATERIAL = 0.01  # a finding must put at least this share of the window at stake
MIN_SAMPLE = 5  # fewer values than this: no median in a headline
# kernel classes of the GPU-bound headline: the first pattern a kernel's name matches
KERNEL_CLASSES = (
    ("communication", re.compile(r"nccl|rccl", re.I)),
    ("attention", re.compile(r"fmha|flash|attention|softmax", re.I)),
    ("convolution", re.compile(r"conv|cudnn|wgrad|dgrad|fprop|implicit_gemm", re.I)),
    ("GEMM", re.compile(r"gemm|xmma|cutlass|nvjet|cublas|matmul", re.I)),
    ("reduction", re.compile(r"reduce|norm", re.I)),
    ("elementwise", re.compile(r"elementwise|vectorized|unrolled|pointwise|triton", re.I)),
)
KIND_WORDS = {"dataloader": "the DataLoader", "optimizer": "the optimizer",
              "region": "the region", "cpu_op": "CPU op", "runtime": "runtime call"}


def duration(ns: float) -> str:
    """'850 ns', '3 µs', '12.3 ms', '2.7 s': three significant figures, a readable unit."""
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if abs(ns) >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def percent(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _gpu(d: int) -> str:
    return f"GPU {d}"


def headlines(r: Report) -> tuple[str, ...]:
    out: list[str] = []
    if r.salvaged is not None:  # first: every figure below depends on it
        out.append(
            f"The trace was cut short ({r.salvaged['reason']}): these figures describe only "
            f"the {r.salvaged['events_kept']:,} complete events before the cut"
        )
    if not r.devices:
        out.append("No GPU activity in the window: the trace shows CPU work only")
        if r.top_ops:
            op = r.top_ops[0]
            out.append(
                f"The CPU op with the most self time was {op.name} "
                f"({duration(op.self_ns)} of {duration(op.total_ns)} over {op.count} calls)"
            )
        out += [line for _, line in _dataloader(r)]
        return tuple(out)
    found: list[tuple[float, str]] = []
    for part in (_devices, _gpu_bound, _cross_device, _copies_and_comm, _bandwidth, _dataloader,
                 _streams, _serial, _launch, _precision):
        found += part(r)
    floor = MATERIAL * r.span_ns
    ranked = sorted(enumerate(found), key=lambda t: (-t[1][0], t[0]))
    return tuple(out + [line for _, (stake, line) in ranked if stake >= floor and stake > 0])


def cause_phrase(c: object) -> str:
    """'the DataLoader (enumerate(DataLoader)#...) 14.4 ms (74.0% of the idle time)'."""
    kind, name = getattr(c, "kind", ""), getattr(c, "name", "")
    share = percent(getattr(c, "share", None))
    what = name if kind in ("host_idle", "wait", "sync") else f"{KIND_WORDS.get(kind, kind)} {name}"
    if kind in ("dataloader",):
        what = f"the DataLoader ({name})"
    return f"{what} {duration(getattr(c, 'ns', 0))} ({share} of the idle time)"


def _devices(r: Report) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    causes = {h.device: h.causes for h in r.host.devices}
    for d in r.devices:
        if d.utilization is None:
            continue
        if d.utilization >= BUSY_ENOUGH:
            out.append((d.busy_ns, f"{_gpu(d.device)} busy {percent(d.utilization)} of the window"))
            continue
        line = f"{_gpu(d.device)} idle {percent(1 - d.utilization)} of the window"
        top = causes.get(d.device, ())
        if top:
            line += f"; main cause: {cause_phrase(top[0])}"
        out.append((d.idle_ns, line))
    return out


def kernel_class(name: str) -> str:
    """The class (:data:`KERNEL_CLASSES`) of a GPU op's name; copies and memsets are "copy"."""
    if name.startswith(("Memcpy", "Memset")):
        return "copy"
    return next((c for c, rx in KERNEL_CLASSES if rx.search(name)), "other")


def _gpu_bound(r: Report) -> list[tuple[float, str]]:
    """When the critical path is bound by the GPU: its GPU share and the kernel classes that
    fill that GPU time (the three largest)."""
    cp = r.critical_path
    if not cp or cp.get("bound_by") != "GPU" or not cp.get("length_us"):
        return []
    by: dict[str, float] = {}
    for seg in cp["segments"]:
        if seg["kind"] in ("kernel", "communication", "copy"):
            c = kernel_class(str(seg["name"]))
            by[c] = by.get(c, 0.0) + seg["end_us"] - seg["start_us"]
    gpu = sum(cp["breakdown"][k] for k in ("kernel", "communication", "copy", "sync_wait"))
    work = sum(by.values())
    if not work:
        return []
    top = sorted(by.items(), key=lambda kv: (-kv[1], kv[0]))[:3]
    classes = ", ".join(f"{c} {percent(v / work)}" for c, v in top)
    return [(gpu * 1000, f"The GPU bounds the critical path: {percent(gpu / cp['length_us'])} "
             f"of it is GPU work ({classes} of the kernel time on it)")]


def _cross_device(r: Report) -> list[tuple[float, str]]:
    stake = max((p.either_ns for p in r.overlap.cross_device), default=0)
    return [(stake, line) for line in _cross_device_lines(r)]


def _cross_device_lines(r: Report) -> list[str]:
    pairs = [p for p in r.overlap.cross_device if p.fraction_of_either is not None]
    if not pairs:
        return []
    if len(pairs) <= MAX_PAIRS:
        return [
            f"{_gpu(p.devices[0])} and {_gpu(p.devices[1])} were both busy "
            f"{percent(p.fraction_of_either)} of the time either was"
            for p in pairs
        ]
    lo = min(pairs, key=lambda p: p.fraction_of_either or 0.0)
    hi = max(pairs, key=lambda p: p.fraction_of_either or 0.0)
    return [
        f"Across {len(pairs)} GPU pairs, both were busy between {percent(lo.fraction_of_either)} "
        f"(GPUs {lo.devices[0]} and {lo.devices[1]}) and {percent(hi.fraction_of_either)} "
        f"(GPUs {hi.devices[0]} and {hi.devices[1]}) of the time either was",
        f"At least two GPUs were busy for {duration(r.overlap.multi_device_ns)} "
        f"({percent(r.overlap.multi_device_ns / r.span_ns if r.span_ns else None)} of the window)",
    ]


def _copies_and_comm(r: Report) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    for c in r.overlap.copy_compute:
        if c.direction == "all" and c.memcpy_ns > 0:
            out.append((c.memcpy_ns,  # at stake: the copy time there was to hide
                f"Copies on {_gpu(c.device)}: {percent(c.hidden_fraction)} hidden under compute "
                f"({duration(c.exposed_ns)} exposed)"
            ))
    for cc in r.overlap.comm_compute:
        if cc.comm_ns > 0:
            out.append((cc.comm_ns,  # at stake: the communication time there was to hide
                f"Communication on {_gpu(cc.device)}: {percent(cc.hidden_fraction)} hidden under "
                f"compute ({duration(cc.exposed_ns)} exposed)"
            ))
    return out


def _bandwidth(r: Report) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    for c in r.copies:
        if not c.pageable or c.gb_per_s is None:
            continue
        link = (f" ({percent(c.link_share)} of {c.link}'s {c.link_gb_per_s:.3g} GB/s)"
                if c.link_share is not None else "")
        out.append((c.ns, f"{c.direction} copies {c.src_kind} -> {c.dst_kind} on "
                    f"{_gpu(c.device)} ran at {c.gb_per_s:.3g} GB/s{link}: pageable host memory "
                    "is staged and blocks the host; pin it (pin_memory)"))
    return out


def _dataloader(r: Report) -> list[tuple[float, str]]:
    rows = [b for b in r.step_breakdown if b.device == (r.devices[0].device if r.devices else None)]
    total = sum(b.end_ns - b.start_ns for b in rows)
    dl = sum(p.ns for b in rows for p in b.parts if p.name == "dataloader")
    if not total or not dl:
        return []
    return [(dl, f"The DataLoader took {duration(dl)} of {len(rows)} step"
             f"{'' if len(rows) == 1 else 's'} ({percent(dl / total)})")]


def _streams(r: Report) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    busy = {d.device: d.busy_ns for d in r.devices}
    for s in r.overlap.streams:
        if s.streams < 2:
            continue
        if s.concurrent_ns == 0:
            # at stake: the device's busy time outside its busiest stream, which could overlap
            top = max((x.busy_ns for x in r.streams if x.device == s.device), default=0)
            out.append((busy[s.device] - top, f"Streams on {_gpu(s.device)} never ran "
                        "concurrently"))
        else:
            share = s.concurrent_ns / busy[s.device] if busy[s.device] else None
            out.append((s.concurrent_ns,
                f"Up to {s.max_concurrent} streams on {_gpu(s.device)} ran at once; two or more "
                f"were busy for {duration(s.concurrent_ns)} ({percent(share)} of its busy time)"
            ))
    return out


def _serial(r: Report) -> list[tuple[float, str]]:
    s = r.serial
    if s.parallelism is None or s.serial_ns == s.busy_union_ns:
        return []
    if not any(o.streams >= 2 for o in r.overlap.streams):
        return []  # one stream per GPU: no overlap to speak of
    return [(s.serial_ns - s.busy_union_ns,
        f"{duration(s.serial_ns)} of stream work ran in {duration(s.busy_union_ns)} of GPU busy "
        f"time ({s.parallelism:.2f}x parallelism)")
    ]


def _launch(r: Report) -> list[tuple[float, str]]:
    out: list[tuple[float, str]] = []
    bound = [g for g in r.host.kernel_gaps if g.launch_bound]
    for g in bound[:MAX_LAUNCH_BOUND]:
        share = percent(g.host_late_ns / r.span_ns if r.span_ns else None)
        out.append((g.host_late_ns,
            f"Kernels on {_gpu(g.device)} stream {g.stream} are launch-bound: "
            f"{g.host_late_gaps} of {g.gaps} gaps waited for the host, "
            f"{duration(g.host_late_ns)}, {share} of the window (median kernel "
            f"{duration(g.kernel_p50_ns or 0)}, median host-late gap "
            f"{duration(g.host_late_p50_ns or 0)})"
        ))
    if len(bound) > MAX_LAUNCH_BOUND:
        more = len(bound) - MAX_LAUNCH_BOUND
        stake = float(sum(g.host_late_ns for g in bound[MAX_LAUNCH_BOUND:]))
        out.append((stake, f"{more} more stream{' is' if more == 1 else 's are'} launch-bound"))
    lat = r.host.launch_latency
    n = lat.unqueued_count
    if n:
        stake = n * (lat.unqueued_p50_ns or 0)
        if n >= MIN_SAMPLE:
            line = (f"Median launch overhead {duration(lat.unqueued_p50_ns or 0)} over {n} "
                    "launches onto an idle stream")
        else:
            line = f"Launch overhead {duration(lat.unqueued_max_ns or 0)} at most (n = {n})"
        out.append((stake, line))
    return out


def _precision(r: Report) -> list[tuple[float, str]]:
    """fp32 GEMMs/convolutions off tensor cores on a GPU that has them (traceprobe.efficiency:
    material when TF32 would save at least a tenth of the kernel time)."""
    e = r.efficiency
    p = e.get("precision") if e else None
    if not e or not p or not p["material"]:
        return []
    us = 1e3
    rate = "" if p["fp32_tflops"] is None else f" at {p['fp32_tflops']:.3g} TFLOP/s"
    gemm = p["gemm_us"] * 2 >= p["fp32_off_tensor_cores_us"]
    what = "GEMMs" if gemm else "convolutions"
    flag = "torch.backends.cuda.matmul.allow_tf32" if gemm else "torch.backends.cudnn.allow_tf32"
    return [(p["tf32_saving_us"] * us,
        f"fp32 {what} run without tensor cores on {e['device']}: "
        f"{duration(p['fp32_off_tensor_cores_us'] * us)}{rate} of "
        f"{duration(p['kernel_us'] * us)} kernel time; TF32 ({flag} = True) would save "
        f"about {duration(p['tf32_saving_us'] * us)}, bf16 autocast about "
        f"{duration(p['bf16_saving_us'] * us)}{_per_step(p)}")]


def _per_step(p: dict) -> str:
    k, t, b = (p.get(f) for f in ("kernel_per_step_us", "tf32_kernel_per_step_us",
                                  "bf16_kernel_per_step_us"))
    if k is None or t is None or b is None:
        return ""
    us = 1e3
    return (f"; kernel time per step {duration(k * us)} -> {duration(t * us)} (TF32), "
            f"{duration(b * us)} (bf16)")
