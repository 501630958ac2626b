"""Headlines: a report's main findings as short plain-English sentences with numbers.

Read only from figures already in the report, so a headline can never disagree
with the JSON next to it. Order: what the GPUs did, what overlapped, what the host did.
"""

from __future__ import annotations

from traceprobe.report.model import Report

MAX_PAIRS = 3  # more device pairs than this are summarised in one sentence
MAX_LAUNCH_BOUND = 3
BUSY_ENOUGH = 0.9  # above this utilization a device's idle time gets no sentence


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
                f"The CPU op with the most time was {op.name} "
                f"({duration(op.total_ns)} over {op.count} calls)"
            )
        return tuple(out)
    out += _devices(r)
    out += _cross_device(r)
    out += _copies_and_comm(r)
    out += _streams(r)
    out += _serial(r)
    out += _launch(r)
    return tuple(out)


def _devices(r: Report) -> list[str]:
    out = []
    causes = {h.device: h.causes for h in r.host.devices}
    for d in r.devices:
        if d.utilization is None:
            continue
        if d.utilization >= BUSY_ENOUGH:
            out.append(f"{_gpu(d.device)} busy {percent(d.utilization)} of the window")
            continue
        line = f"{_gpu(d.device)} idle {percent(1 - d.utilization)} of the window"
        top = causes.get(d.device, ())
        if top:
            line += f"; the host spent {duration(top[0].ns)} in {top[0].name} meanwhile"
        out.append(line)
    return out


def _cross_device(r: Report) -> list[str]:
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


def _copies_and_comm(r: Report) -> list[str]:
    out = []
    for c in r.overlap.copy_compute:
        if c.direction == "all" and c.memcpy_ns > 0:
            out.append(
                f"Copies on {_gpu(c.device)}: {percent(c.hidden_fraction)} hidden under compute "
                f"({duration(c.exposed_ns)} exposed)"
            )
    for cc in r.overlap.comm_compute:
        if cc.comm_ns > 0:
            out.append(
                f"Communication on {_gpu(cc.device)}: {percent(cc.hidden_fraction)} hidden under "
                f"compute ({duration(cc.exposed_ns)} exposed)"
            )
    return out


def _streams(r: Report) -> list[str]:
    out = []
    busy = {d.device: d.busy_ns for d in r.devices}
    for s in r.overlap.streams:
        if s.streams < 2:
            continue
        if s.concurrent_ns == 0:
            out.append(f"Streams on {_gpu(s.device)} never ran concurrently")
        else:
            share = s.concurrent_ns / busy[s.device] if busy[s.device] else None
            out.append(
                f"Up to {s.max_concurrent} streams on {_gpu(s.device)} ran at once; two or more "
                f"were busy for {duration(s.concurrent_ns)} ({percent(share)} of its busy time)"
            )
    return out


def _serial(r: Report) -> list[str]:
    s = r.serial
    if s.parallelism is None or s.serial_ns == s.busy_union_ns:
        return []
    return [
        f"{duration(s.serial_ns)} of stream work ran in {duration(s.busy_union_ns)} of GPU busy "
        f"time ({s.parallelism:.2f}x parallelism)"
    ]


def _launch(r: Report) -> list[str]:
    out = []
    bound = [g for g in r.host.kernel_gaps if g.launch_bound]
    for g in bound[:MAX_LAUNCH_BOUND]:
        out.append(
            f"Kernels on {_gpu(g.device)} stream {g.stream} are launch-bound: median kernel "
            f"{duration(g.kernel_p50_ns or 0)}, median gap {duration(g.p50_ns or 0)}"
        )
    if len(bound) > MAX_LAUNCH_BOUND:
        more = len(bound) - MAX_LAUNCH_BOUND
        out.append(f"{more} more stream{' is' if more == 1 else 's are'} launch-bound")
    lat = r.host.launch_latency
    if lat.count and lat.unqueued_count:
        queued = lat.count - lat.unqueued_count
        tail = (f"; {queued} more waited behind earlier work on their stream" if queued else "")
        out.append(
            f"Median launch latency {duration(lat.unqueued_p50_ns or 0)} onto an idle stream "
            f"({lat.unqueued_count} launch{'' if lat.unqueued_count == 1 else 'es'}){tail}"
        )
    elif lat.count:
        out.append(
            f"All {lat.count} kernels were queued behind earlier work on their stream "
            f"(median launch-to-start {duration(lat.p50_ns or 0)}): launch overhead is hidden"
        )
    return out
