"""Random small timelines: every figure equals a slow, obvious per-nanosecond computation.

The reference below reads the timeline's rows as Python tuples and works with sets
of integer ticks (time t is busy when some interval has start <= t < end); it
shares nothing with traceprobe's interval code. Report.check() runs on every report.

What it covers (docs/FIGURES.md "What the random-timeline test covers" says the same):
every figure of ``Report`` (whole trace, ``step="all"`` and a device subset), including
launch latency onto an idle stream (``unqueued_*``, less the launches whose kernel waited on
another stream: ``waited_count``) and copies into or out of pageable memory, and
``cross_trace`` of two or three traces (windows apart, touching or overlapping; ranks of one
job, or a separate run that is not compared). Steps are drawn apart or touching (one ends
where the next starts).
Not covered here: headlines (text), the hta block, the loader (JSON to rows).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import fields, is_dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from frames import timeline
from hyp import examples
from traceprobe.report import analyze, analyze_many, check

COPY_KINDS = ["HtoD", "DtoH", "DtoD", "PtoP", "HtoH"]
RUNTIME = ["cuda_runtime", "cuda_sync", "cuda_driver"]

gpu_row = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(["kernel", "kernel", "memcpy", "memset"]),
        "name": st.sampled_from(["a", "b", "c"]),
        "device": st.integers(0, 2),
        "stream": st.integers(1, 3),
        "start": st.integers(0, 40),
        "dur": st.integers(0, 10),
        "correlation": st.sampled_from([-1, 1, 2, 3, 4, 5]),
        "bytes": st.sampled_from([-1, 0, 64, 100]),
        "copy_kind": st.sampled_from(COPY_KINDS + [""]),
        "src_kind": st.sampled_from(["Pageable", "Pinned", "Device"]),
        "dst_kind": st.sampled_from(["Pageable", "Pinned", "Device"]),
        "comm": st.booleans(),
    }
)
cpu_row = st.fixed_dictionaries(
    {
        "kind": st.sampled_from(
            ["cpu_op", "cpu_op", "cuda_runtime", "cuda_driver", "cuda_sync", "user_annotation"]
        ),
        "name": st.sampled_from(["x", "y", "cudaA", "cudaB"]),
        "pid": st.sampled_from([100, 100, 200, 0]),
        "start": st.integers(-5, 45),
        "dur": st.integers(0, 15),
        "correlation": st.sampled_from([-1, 1, 2, 3, 4, 5]),
    }
)


@st.composite
def timeline_rows(draw):
    """(gpu rows, cpu rows, steps) of one random timeline."""
    gpu = []
    for r in draw(st.lists(gpu_row, max_size=12)):
        row = {k: v for k, v in r.items() if k != "dur"}
        row["end"] = r["start"] + r["dur"]
        if r["kind"] != "memcpy":
            row.update(copy_kind="", src_kind="", dst_kind="")
            row["bytes"] = -1 if r["kind"] == "kernel" else r["bytes"]
        if r["kind"] != "kernel":
            row["comm"] = False
        gpu.append(row)
    cpu = [
        {**{k: v for k, v in r.items() if k != "dur"}, "end": r["start"] + r["dur"]}
        for r in draw(st.lists(cpu_row, max_size=10))
    ]
    cuts = sorted(draw(st.lists(st.integers(-5, 50), max_size=4, unique=True)))
    if draw(st.booleans()):  # touching: each step starts where the previous one ends
        steps = [(n + 1, a, b) for n, (a, b) in enumerate(zip(cuts, cuts[1:], strict=False))]
    else:
        steps = [(n + 1, cuts[2 * n], cuts[2 * n + 1]) for n in range(len(cuts) // 2)]
    return gpu, cpu, steps


@st.composite
def timelines(draw):
    gpu, cpu, steps = draw(timeline_rows())
    return timeline(gpu=gpu, cpu=cpu, steps=steps)


# -- the slow reference ----------------------------------------------------------------------


def ticks(rows) -> set[int]:
    out: set[int] = set()
    for r in rows:
        out.update(range(r["start"], r["end"]))
    return out


def clip(rows, lo: int, hi: int) -> list[dict]:
    out = []
    for r in rows:
        s, e = r["start"], r["end"]
        if (s < hi and e > lo) or (s == e and lo <= s < hi):
            out.append({**r, "start": min(max(s, lo), hi), "end": min(max(e, lo), hi)})
    return out


def median(xs: list[float]) -> float:
    return percentile(xs, 50)


def percentile(xs: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    xs = sorted(xs)
    pos = (len(xs) - 1) * q / 100
    i = math.floor(pos)
    j = min(i + 1, len(xs) - 1)
    return xs[i] + (xs[j] - xs[i]) * (pos - i)


def frac(a: float, b: float) -> float | None:
    return None if b == 0 else a / b


def host_pid(cpu: list[dict]) -> int | None:
    for kinds in (("cuda_runtime", "cuda_driver"), ("cpu_op",)):
        counts: dict[int, int] = defaultdict(int)
        for r in cpu:
            if r["kind"] in kinds:
                counts[r["pid"]] += 1
        if counts:
            best = max(counts.values())
            return min(p for p, n in counts.items() if n == best)
    return None


def reference(
    gpu_all, cpu_all, steps_all, lo, hi, step, devices, pid, basis="step"
) -> dict[str, Any]:
    """Every figure for window [lo, hi); a window clips events, except the whole trace's
    window without steps (basis "events"), which holds all."""
    if basis != "events":
        gpu_all, cpu_all, steps_all = (clip(x, lo, hi) for x in (gpu_all, cpu_all, steps_all))
    gpu = [r for r in gpu_all if r["device"] in devices]
    cpu = cpu_all
    span = hi - lo
    window = set(range(lo, hi))
    gpu_span = (max(r["end"] for r in gpu) - min(r["start"] for r in gpu)) if gpu else 0
    on = {d: [r for r in gpu if r["device"] == d] for d in devices}
    busy = {d: ticks(on[d]) for d in devices}
    stream_keys = sorted({(r["device"], r["stream"]) for r in gpu})
    srows = {k: [r for r in gpu if (r["device"], r["stream"]) == k] for k in stream_keys}
    sbusy = {k: ticks(v) for k, v in srows.items()}

    def of(rows, kind):
        return [r for r in rows if r["kind"] == kind]

    def depth_ge(sets, k):
        return sum(1 for t in set().union(*sets) if sum(t in s for s in sets) >= k) if sets else 0

    devs = []
    for d in devices:
        rows = on[d]
        devs.append(
            {
                "device": d,
                "name": None,
                "busy_ns": len(busy[d]),
                "kernel_ns": len(ticks(of(rows, "kernel"))),
                "memcpy_ns": len(ticks(of(rows, "memcpy"))),
                "memset_ns": len(ticks(of(rows, "memset"))),
                "idle_ns": span - len(busy[d]),
                "utilization": frac(len(busy[d]), span),
                "active_span_ns": (max(r["end"] for r in rows) - min(r["start"] for r in rows))
                if rows
                else 0,
                "kernels": len(of(rows, "kernel")),
                "memcpys": len(of(rows, "memcpy")),
                "memsets": len(of(rows, "memset")),
                "streams": len({r["stream"] for r in rows}),
            }
        )
    streams = []
    for (d, s), rows in srows.items():
        streams.append(
            {
                "device": d,
                "stream": s,
                "busy_ns": len(sbusy[(d, s)]),
                "kernels": len(of(rows, "kernel")),
                "memcpys": len(of(rows, "memcpy")),
                "memsets": len(of(rows, "memset")),
                "kernel_ns": len(ticks(of(rows, "kernel"))),
                "memcpy_ns": len(ticks(of(rows, "memcpy"))),
                "self_overlap_ns": depth_ge([set(range(r["start"], r["end"])) for r in rows], 2),
            }
        )
    cross = []
    for i, a in enumerate(devices):
        for b in devices[i + 1 :]:
            both, either = len(busy[a] & busy[b]), len(busy[a] | busy[b])
            cross.append(
                {
                    "devices": [a, b],
                    "overlap_ns": both,
                    "either_ns": either,
                    "fraction_of_either": frac(both, either),
                    "fraction_of_min": frac(both, min(len(busy[a]), len(busy[b]))),
                }
            )
    copies = []
    for d in devices:
        kt = ticks(of(on[d], "kernel"))
        cps = of(on[d], "memcpy")
        for direction in ["all"] + [c for c in COPY_KINDS if any(r["copy_kind"] == c for r in cps)]:
            sub = [r for r in cps if direction in ("all", r["copy_kind"])]
            ct = ticks(sub)
            copies.append(
                {
                    "device": d,
                    "direction": direction,
                    "memcpy_ns": len(ct),
                    "hidden_ns": len(ct & kt),
                    "exposed_ns": len(ct - kt),
                    "hidden_fraction": frac(len(ct & kt), len(ct)),
                    "copies": len(sub),
                    "bytes": sum(max(r["bytes"], 0) for r in sub),
                    "pageable": sum(1 for r in sub if "Pageable" in (r["src_kind"], r["dst_kind"])),
                }
            )
    comms = []
    for d in devices:
        ks = of(on[d], "kernel")
        if any(r["comm"] for r in ks):
            c = ticks([r for r in ks if r["comm"]])
            o = ticks([r for r in ks if not r["comm"]])
            comms.append(
                {
                    "device": d,
                    "comm_ns": len(c),
                    "hidden_ns": len(c & o),
                    "exposed_ns": len(c - o),
                    "hidden_fraction": frac(len(c & o), len(c)),
                }
            )
    conc = []
    for d in devices:
        keys = [k for k in stream_keys if k[0] == d]
        sets = [sbusy[k] for k in keys]
        conc.append(
            {
                "device": d,
                "streams": len(keys),
                "concurrent_ns": depth_ge(sets, 2),
                "max_concurrent": max(
                    (sum(t in s for s in sets) for t in set().union(*sets)), default=0
                )
                if sets
                else 0,
                "pairs": [
                    {"streams": [a[1], b[1]], "overlap_ns": len(sbusy[a] & sbusy[b])}
                    for i, a in enumerate(keys)
                    for b in keys[i + 1 :]
                ],
            }
        )
    multi = sum(1 for t in window if sum(t in busy[d] for d in devices) >= 2)

    host = host_events(cpu, pid)
    host_devs = [idle_reference(d, window - busy[d], host, busy, devices, lo, hi)
                 for d in devices]
    first_kernel: dict[int, int] = {}
    for r in of(gpu, "kernel"):
        if r["correlation"] >= 0:
            c = r["correlation"]
            first_kernel[c] = min(first_kernel.get(c, r["start"]), r["start"])
    launch: dict[int, int] = {}
    for r in cpu:
        if r["kind"] in ("cuda_runtime", "cuda_driver") and r["correlation"] >= 0:
            launch.setdefault(r["correlation"], r["start"])
    matched = [c for c in first_kernel if c in launch and first_kernel[c] >= launch[c]]
    lats = [first_kernel[c] - launch[c] for c in matched]
    unqueued, waited = [], 0
    for c in matched:  # onto an idle stream: all that started earlier on it had ended by then
        k = min(  # earliest start, then lowest device, stream, then the first recorded
            (r["start"], r["device"], r["stream"], i, r["comm"])
            for i, r in enumerate(gpu)
            if r["kind"] == "kernel" and r["correlation"] == c
        )
        k = (k[0], k[1], k[2], k[4])
        earlier = [r for r in srows[(k[1], k[2])] if r["start"] < k[0]]
        if not all(r["end"] <= launch[c] for r in earlier):
            continue
        # waited on another stream: a comm kernel, or one starting within 10 us after an
        # activity of another stream of its device ended, that end at or after the call began
        other_ends = [r["end"] for r in gpu if r["device"] == k[1] and r["stream"] != k[2]]
        if k[3] or any(max(launch[c], k[0] - 10_000) <= e <= k[0] for e in other_ends):
            waited += 1
        else:
            unqueued.append(first_kernel[c] - launch[c])
    latency = {
        "count": len(lats),
        "mean_ns": None,
        "p50_ns": None,
        "p95_ns": None,
        "max_ns": None,
        "unqueued_count": len(unqueued),
        "unqueued_p50_ns": median(unqueued) if unqueued else None,
        "unqueued_max_ns": max(unqueued) if unqueued else None,
        "waited_count": waited,
    }
    if lats:
        latency.update(
            mean_ns=sum(lats) / len(lats),
            p50_ns=median(lats),
            p95_ns=percentile(lats, 95),
            max_ns=max(lats),
        )
    gaps = []
    for (d, s), rows in srows.items():
        ks = sorted((r["start"], r["end"], r["correlation"]) for r in of(rows, "kernel"))
        if len(ks) < 2:
            continue
        dev_busy = ticks([r for r in gpu if r["device"] == d])
        latest, gs, late = ks[0][1], [], []
        for (ps, _, _), (start, end, corr) in zip(ks[:-1], ks[1:], strict=True):
            g = max(0, start - latest)
            gs.append(g)
            call = launch.get(corr) if corr >= 0 else None
            if g > 0 and not (set(range(latest, start)) & dev_busy) and call is not None \
                    and call > ps:
                late.append(g)
            latest = max(latest, end)
        kp50 = median([e - b for b, e, _ in ks])
        gaps.append(
            {
                "device": d,
                "stream": s,
                "gaps": sum(1 for g in gs if g > 0),
                "mean_ns": sum(gs) / len(gs),
                "p50_ns": median(gs),
                "max_ns": max(gs),
                "kernel_p50_ns": kp50,
                "launch_bound": len(late) >= 10 and kp50 < median(late),
                "host_late_gaps": len(late),
                "host_late_p50_ns": median(late) if late else None,
            }
        )
    serial = sum(len(v) for v in sbusy.values())
    union = len(set().union(*busy.values())) if devices else 0
    totals: dict[tuple, list[int]] = defaultdict(lambda: [0, 0])
    for r in of(gpu, "kernel"):
        t = totals[(r["name"], r["device"])]
        t[0] += 1
        t[1] += r["end"] - r["start"]
    all_k = sum(t[1] for t in totals.values())
    top_k = sorted(totals.items(), key=lambda kv: (-kv[1][1], kv[0][0], kv[0][1]))
    ops: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    op_rows = of(cpu, "cpu_op")
    for r, own in zip(op_rows, self_times(op_rows), strict=True):
        ops[r["name"]][0] += 1
        ops[r["name"]][1] += r["end"] - r["start"]
        ops[r["name"]][2] += own
    top_o = sorted(ops.items(), key=lambda kv: (-kv[1][2], -kv[1][1], kv[0]))
    return {
        "window": {"start_ns": lo, "end_ns": hi, "step": step, "basis": basis},
        "span_ns": span,
        "gpu_span_ns": gpu_span,
        "counts": {
            "kernels": len(of(gpu, "kernel")),
            "memcpys": len(of(gpu, "memcpy")),
            "memsets": len(of(gpu, "memset")),
            "cpu_ops": len(of(cpu, "cpu_op")),
            "runtime_calls": sum(r["kind"] in ("cuda_runtime", "cuda_driver") for r in cpu),
            "steps": len(steps_all),
        },
        "devices": devs,
        "streams": streams,
        "overlap": {
            "cross_device": cross,
            "multi_device_ns": multi,
            "copy_compute": copies,
            "comm_compute": comms,
            "streams": conc,
        },
        "host": {"devices": host_devs, "launch_latency": latency, "kernel_gaps": gaps},
        "serial": {
            "serial_ns": serial,
            "busy_union_ns": union,
            "gpu_span_ns": gpu_span,
            "speedup_vs_span": frac(serial, gpu_span),
            "parallelism": frac(serial, union),
        },
        "top_kernels": [
            {
                "name": n,
                "device": d,
                "count": c,
                "total_ns": t,
                "mean_ns": t / c,
                "fraction": frac(t, all_k),
            }
            for (n, d), (c, t) in top_k
        ],
        "top_ops": [
            {"name": n, "count": c, "total_ns": t, "mean_ns": t / c, "self_ns": own,
             "input_dims": ""}
            for n, (c, t, own) in top_o
        ],
        "copies": copy_reference(gpu),
        "step_breakdown": breakdown_reference(gpu, host, steps_all, devices),
    }


def host_events(cpu: list[dict], pid: int | None) -> list[dict]:
    """The process's events with their class (metrics/regions.py), in frame order."""
    out = []
    for r in cpu:
        if pid is None or r["pid"] != pid or r["name"].startswith("ProfilerStep#"):
            continue
        cls = {"user_annotation": "region", "cuda_sync": "sync", "cuda_runtime": "runtime",
               "cuda_driver": "runtime", "cpu_op": "cpu_op"}.get(r["kind"])
        if cls is not None:
            out.append({**r, "cls": cls, "pos": len(out)})
    return out


def innermost_at(events: list[dict], t: int) -> dict | None:
    cover = [e for e in events if e["start"] <= t < e["end"]]
    return max(cover, key=lambda e: (e["start"], -e["end"], e["pos"])) if cover else None


KIND_ORDER = ["dataloader", "optimizer", "region", "wait", "sync", "cpu_op", "runtime",
              "host_idle"]


def idle_reference(d, idle, host, busy, devices, lo, hi) -> dict:
    """The idle partition of metrics/idle.py, one tick at a time."""
    others = set().union(*(busy[x] for x in devices if x != d))
    regions = [e for e in host if e["cls"] == "region"]
    syncs = [e for e in host if e["cls"] == "sync"]
    leaves = [e for e in host if e["cls"] in ("runtime", "cpu_op")]
    gap_of, g, prev = {}, -1, None
    for t in sorted(idle):
        if prev is None or t != prev + 1:
            g += 1
        gap_of[t], prev = g, t
    ns: dict[tuple, int] = defaultdict(int)
    owners: dict[tuple, set] = defaultdict(set)
    kids: dict[tuple, dict] = defaultdict(lambda: defaultdict(int))
    for t in idle:
        reg, syn, leaf = (innermost_at(x, t) for x in (regions, syncs, leaves))
        inner = syn or leaf
        if reg:
            key, owner = (reg["cls"], reg["name"]), reg["pos"]
            kids[key][inner["name"] if inner else "(no CPU op)"] += 1
        elif syn:
            key = ("wait", "waiting on another device") if t in others else (
                "sync", "synchronization")
            owner = syn["pos"]
            kids[key][syn["name"]] += 1
        elif leaf:
            key, owner = (leaf["cls"], leaf["name"]), leaf["pos"]
        else:
            key, owner = ("host_idle", "Python (untraced)"), ("gap", gap_of[t])
        ns[key] += 1
        owners[key].add(owner)
    causes = sorted(ns, key=lambda k: (-ns[k], KIND_ORDER.index(k[0]), k[1]))[:5]
    n = len(idle)
    return {
        "device": d,
        "idle_ns": n,
        "idle_host_busy_ns": len(idle & ticks(host)),
        "causes": [
            {"name": k[1], "kind": k[0], "ns": ns[k], "calls": len(owners[k]),
             "share": ns[k] / n,
             "children": [{"name": c, "ns": v, "share": v / n} for c, v in sorted(
                 kids[k].items(), key=lambda cv: (-cv[1], cv[0]))[:3]]}
            for k in causes
        ],
    }


def self_times(ops: list[dict]) -> list[int]:
    """Per op: duration minus direct children's; a child's parent is the last op before it
    (by start, longer first, then frame order) of its thread still open at its start, when the
    child ends within it."""
    order = sorted(range(len(ops)), key=lambda i: (ops[i]["pid"], ops[i]["tid"],
                                                   ops[i]["start"], -ops[i]["end"], i))
    own = [r["end"] - r["start"] for r in ops]
    for k, j in enumerate(order):
        rj = ops[j]
        before = [i for i in order[:k] if (ops[i]["pid"], ops[i]["tid"]) == (rj["pid"], rj["tid"])
                  and ops[i]["end"] > rj["start"]]
        if before and rj["end"] <= ops[before[-1]]["end"]:
            own[before[-1]] -= rj["end"] - rj["start"]
    return [max(0, x) for x in own]


def copy_reference(gpu: list[dict]) -> list[dict]:
    groups: dict[tuple, list[int]] = defaultdict(lambda: [0, 0, 0])
    for r in gpu:
        if r["kind"] != "memcpy":
            continue
        g = groups[(r["device"], r["copy_kind"], r["src_kind"], r["dst_kind"])]
        g[0] += 1
        if r["bytes"] >= 0:
            g[1] += r["bytes"]
            g[2] += r["end"] - r["start"]
    out = [{"device": k[0], "direction": k[1], "src_kind": k[2], "dst_kind": k[3],
            "copies": c, "bytes": b, "ns": t,
            "gb_per_s": b / t if b > 0 and t > 0 else None} for k, (c, b, t) in groups.items()]
    return sorted(out, key=lambda x: (x["device"], -x["bytes"], x["direction"], x["src_kind"],
                                      x["dst_kind"]))


CATS = ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec"]


def breakdown_reference(gpu, host, steps, devices) -> list[dict]:
    out = []
    for dev in list(devices) or [None]:
        g = [r for r in gpu if r["device"] == dev]
        layers = [
            ticks([r for r in g if r["kind"] == "kernel" and not r["comm"]]),
            ticks([r for r in g if r["kind"] == "memcpy"]),
            ticks([r for r in g if r["kind"] == "memset"]),
            ticks([r for r in g if r["kind"] == "kernel" and r["comm"]]),
            ticks([e for e in host if e["cls"] in ("runtime", "sync")]),
            set(),  # no DataLoader ranges among the generated names
            ticks([e for e in host if e["cls"] in ("cpu_op", "region")]),
        ]
        regions = [e for e in host if e["cls"] == "region"]
        for st_ in sorted(steps, key=lambda x: x["start"]):
            s, e = st_["start"], st_["end"]
            n = e - s
            parts = dict.fromkeys(CATS, 0)
            names: dict[str, int] = defaultdict(int)
            for t in range(s, e):
                for c, layer in zip(CATS, layers, strict=True):
                    if t in layer:
                        parts[c] += 1
                        break
                r = innermost_at(regions, t)
                names[r["name"] if r else "(no region)"] += 1
            parts["other"] = n - sum(parts.values())
            out.append({
                "step": st_["step"], "device": dev, "start_ns": s, "end_ns": e,
                "parts": [{"name": c, "ns": v, "share": frac(v, n)} for c, v in parts.items()],
                "regions": [{"name": k, "ns": v, "share": frac(v, n)} for k, v in sorted(
                    names.items(), key=lambda kv: (-kv[1], kv[0]))],
            })
    return out


# -- comparison -------------------------------------------------------------------------------


def tree(value: Any) -> Any:
    """A report as nested dicts/lists in ns, internal fields left out."""
    if is_dataclass(value):
        return {
            f.name: tree(getattr(value, f.name))
            for f in fields(value)
            if not f.metadata.get("internal")
        }
    if isinstance(value, (list, tuple)):
        return [tree(v) for v in value]
    return value


def assert_same(ours: Any, want: Any, where: str = "$") -> None:
    if isinstance(want, dict):
        for k, v in want.items():
            assert_same(ours[k], v, f"{where}.{k}")
    elif isinstance(want, list):
        assert len(ours) == len(want), (
            f"{where}: {len(ours)} rows, want {len(want)}: {ours} / {want}"
        )
        for i, (o, w) in enumerate(zip(ours, want, strict=True)):
            assert_same(o, w, f"{where}[{i}]")
    elif isinstance(want, float) and not isinstance(want, bool):
        assert ours is not None and math.isclose(ours, want, rel_tol=1e-12, abs_tol=1e-12), (
            f"{where}: {ours} != {want}"
        )
    else:
        assert ours == want, f"{where}: {ours!r} != {want!r}"


def rows(frame) -> list[dict]:
    return frame.to_dict("records")


@pytest.mark.slow
@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    timelines(),
    st.sampled_from([None, "all"]),
    st.one_of(st.none(), st.lists(st.integers(0, 3), min_size=1, max_size=3)),
)
def test_every_figure_matches_the_slow_computation(tl, step, devices) -> None:
    r = analyze(tl, step=step, devices=devices)
    check(r)
    gpu, cpu, steps = rows(tl.gpu), rows(tl.cpu), rows(tl.steps)
    devs = sorted(set(devices)) if devices is not None else sorted({g["device"] for g in gpu})
    pid = host_pid(cpu)
    # the default window (docs/REPORT_SCHEMA.md): the steps, else every event
    if steps:
        lo, hi = min(x["start"] for x in steps), max(x["end"] for x in steps)
        basis = "steps"
    else:
        spans = [(x["start"], x["end"]) for x in gpu + cpu]
        lo, hi = (min(s for s, _ in spans), max(e for _, e in spans)) if spans else (0, 0)
        basis = "events"
    assert_same(tree(r), reference(gpu, cpu, steps, lo, hi, None, devs, pid, basis))
    if step == "all":
        assert len(r.steps) == len(steps)
        for sub, srow in zip(r.steps, steps, strict=True):
            want = reference(gpu, cpu, steps, srow["start"], srow["end"], srow["step"], devs, pid)
            assert_same(tree(sub), want, f"$.steps[{srow['step']}]")


@st.composite
def several_traces(draw):
    """Two or three timelines; each later one shifted apart from, onto the end of, or into the
    previous one's window, so windows are disjoint, touching or overlapping. Most are ranks of
    one job (distributedInfo rank and world size, one folder); a trace drawn without a rank is a
    separate run, which cross_trace does not compare."""
    out = []
    n = draw(st.integers(2, 3))
    for _ in range(n):
        gpu, cpu, steps = draw(timeline_rows())
        spans = [(r["start"], r["end"]) for r in gpu + cpu]
        if out and spans:
            prev = out[-1]
            plo, phi = prev.span if prev.span else (0, 0)
            lo = min(a for a, _ in spans)
            how = draw(st.sampled_from(["touch", "apart", "overlap", "as drawn"]))
            shift = {
                "touch": phi - lo,
                "apart": phi - lo + 1,
                "overlap": phi - lo - draw(st.integers(1, 10)),
                "as drawn": 0,
            }[how]
            for r in gpu + cpu:
                r["start"] += shift
                r["end"] += shift
            steps = [(n, a + shift, b + shift) for n, a, b in steps]
        ranked = draw(st.sampled_from([True, True, True, False]))
        out.append(
            timeline(
                gpu=gpu,
                cpu=cpu,
                steps=steps,
                source=f"run/r{len(out)}.json",
                rank=len(out) if ranked else None,
                world_size=n if ranked else None,
            )
        )
    return out


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(several_traces())
def test_cross_trace_matches_the_slow_computation(tls) -> None:
    m = analyze_many(tls)
    check(m)
    windows, busy = [], []
    for tl in tls:
        gpu, cpu = rows(tl.gpu), rows(tl.cpu)
        steps = rows(tl.steps)
        spans = [(x["start"], x["end"]) for x in (steps or gpu + cpu)]  # the default window
        lo, hi = (min(s for s, _ in spans), max(e for _, e in spans)) if spans else (0, 0)
        windows.append((lo, hi))
        inside = set(range(lo, hi)) if steps else set().union(*(ticks([g]) for g in gpu))
        devs = sorted({g["device"] for g in gpu})
        busy.append([(d, ticks([g for g in gpu if g["device"] == d]) & inside) for d in devs])
    pairs, skipped = [], []
    # only ranks of one job are compared: a rank and a world size above 1 (here all agree, all
    # ranks differ and all lie in one folder), at least two of them
    job = [i for i, tl in enumerate(tls) if tl.meta.rank is not None and tl.meta.world_size > 1]
    for i in job if len(job) >= 2 else []:
        for j in [x for x in job if x > i]:
            (a0, a1), (b0, b1) = windows[i], windows[j]
            if not set(range(a0, a1)) & set(range(b0, b1)):  # no shared instant
                skipped.append((i, j))
                continue
            for da, ta in busy[i]:
                for db, tb in busy[j]:
                    both, either = len(ta & tb), len(ta | tb)
                    pairs.append(((i, da), (j, db), both, either, frac(both, either)))
    got = [
        ((p.a.trace, p.a.device), (p.b.trace, p.b.device), p.overlap_ns, p.either_ns,
         p.fraction_of_either)
        for p in m.cross_trace.pairs
    ]  # fmt: skip
    assert got == pairs
    assert [s.traces for s in m.cross_trace.skipped] == skipped
    assert [(r.window.start_ns, r.window.end_ns) for r in m.reports] == windows
