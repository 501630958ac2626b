"""What-if scenarios: each changes a :class:`~traceprobe.graph.replay.Plan`; they compose in
the order given.

``copies-on-side-stream``
    Every memcpy moves to a side stream of its device and direction and waits only for
    its *producer*; later ops of its old stream no longer wait for it. As the side-stream
    pattern does (an event recorded after the producer, the copy stream waits on it), the
    copy is issued right after its producer: its launch constraint becomes the producer's
    launch call (the host's own time for the copy call stays where it was). The trace does not
    say which op produced a copy's data, so the producer is inferred by position: a run
    of n copies on a stream that follows a run of m >= n other ops pairs copy j with op
    m-n+j (``ys = [f(x) ...]; [y.cpu() for y in ys]``); with m < n the first copies pair
    with the run's first op. Copies with no op before them on their stream wait for nothing.
``no-host-sync``
    Drops every host wait (synchronize, blocking copy) that is followed, on the same
    thread and in the same step, by another GPU launch: such a wait only ordered GPU work.
    The waits after a step's last launch (those that end it) stay. The call keeps its own
    cost (the typical duration of a call that did not wait).
``comm-overlap``
    Every collective (NCCL/RCCL kernel) moves to a stream of its own per device and waits
    only for the last non-collective op before it on its old stream.
``no-launch-overhead``
    As if the step were a CUDA graph: launch calls take no time, neither does the host
    time inside CPU ops that launch GPU work, and an op starts the typical queue gap
    after its launch instead of the launch latency.
``cuda-graph``
    The step captured whole as one CUDA graph: inside each ProfilerStep every host call and
    every gap between calls takes no time, except one graph launch (the typical launch
    call) at the step's first launch, the DataLoader's time (the data is still fetched
    outside the graph) and the host waits, which still wait. Inside a graph the GPU starts
    each node ``GRAPH_GAP_NS`` (256 ns) after what it waits for (the median kernel-to-kernel
    gap of the committed H200 ``small-ops/cuda-graph`` replay; an eager stream's typical
    queue gap is several µs), so the step becomes its GPU work back to back; the kernels
    keep their stream order, resources and cross-stream dependencies.
``dataloader``
    The DataLoader's time on the host threads (the host account's ``dataloader`` class, in
    the gaps between calls) is removed: as if the next batch were always ready.
``dataloader:workers=N``
    The DataLoader's fetch shared by N worker processes. Per step with host span T,
    DataLoader wait D and the rest C = T - D, each as the scenarios before it left them (a
    replay of their plan; with the default no-profiler first, as if run unprofiled; alone,
    as measured): one batch takes a worker F = W x T when the
    loop waits for data (W workers, all busy: each delivers a batch every W steps; the trace
    does not record ``num_workers``, so W is 1 for a multi-process DataLoader, the default,
    and ``workers=N/W`` says it) or F = D for a single-process one (W = 0: the main thread
    fetches). N workers deliver a batch every F / N, so the step becomes max(C, F / N): each
    DataLoader gap of the step shrinks in proportion, to a total wait of max(0, F / N - C).
``no-profiler``
    The profiler's own host cost removed, as if the loop ran unprofiled: each CPU event the
    trace recorded (CPU op, runtime call, annotation) cost the host NS nanoseconds to record,
    charged to the gap between calls in which it starts (never below 0; what a gap cannot
    hold comes off its call's own time). NS is calibrated on the loop's measured unprofiled
    host time where the trace carries one (top-level ``traceprobeUnprofiled``, as
    ``traceprobe profile --host-steps N`` records it; :mod:`traceprobe.graph.calibrate`: the
    NS at which the replayed host span, GPU instant, equals it), else estimated from the
    trace itself (:mod:`traceprobe.graph.overhead`: the median parent-start to child-start
    interval plus the median child-end to parent-end interval of its threads).
    ``traceprobe whatif`` applies it to both sides by default, base and prediction
    (``--keep-profiler`` keeps the profiled host's time); docs/WHATIF.md checks the
    unchanged replay under it against every real loop's unprofiled ms/step.
``no-profiler:NS``
    The same with NS given: e.g. measured on a loop of one's own as (profiled step −
    unprofiled step) / CPU events per step, on a loop the host bounds.
``kernels:REGEX=F``
    Kernels whose name matches REGEX (``re.search``) run F times faster; F is a finite
    number from ``MIN_FACTOR`` (1e-3: 1000x slower) to ``MAX_FACTOR`` (1e9).
``precision:tf32|bf16``
    fp32 GEMM and convolution kernels off tensor cores (bf16: also attention, and fp32 kernels
    on tensor cores, TF32 or 3xTF32) as if run at the target precision: each op shape's
    kernels scaled by the ratio of its roof time at the new precision to its roof time now,
    keeping its achieved share of the roof (:mod:`traceprobe.efficiency.precision`; needs
    recorded shapes and a known device).
``roof:REGEX=S``
    Kernels whose name matches REGEX run at share S (0 < S <= 1) of their op shape's roof
    (never slower than measured).
``spread:REGEX=N``
    Kernels (and memsets) matching REGEX are asserted independent of each other and go
    round-robin on N (1 to 1024) new streams per device: each waits for the last non-matching op
    before it on its old stream (the fork), and the next non-matching op after it waits
    for it (the join). GPU-filling kernels still do not run together.

REGEX is Python's ``re``, matched once per distinct kernel name (on its first ``MAX_NAME``
characters). A pattern that can backtrack in time exponential in a name's length is
refused before anything is loaded: a quantifier inside a repeated group (``(a+)+``,
``(a|b*)*``, ``(\\w+\\s?)*``), or alternatives inside one that can start with the same
character (``(a|ab)*``). No pattern needs them (``(a+)+`` means ``a+``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from traceprobe.errors import UsageError
from traceprobe.graph.calibrate import calibrate, measured_host_ms, no_profiler
from traceprobe.graph.model import COPY, GPU, HOST, KERNEL, MARK, MEMSET, NO_SYNC, Graph
from traceprobe.graph.replay import Plan, replay
from traceprobe.timeline import Timeline

MIN_FACTOR, MAX_FACTOR = 1e-3, 1e9  # kernels:REGEX=F: durations stay well inside int64 ns
MAX_NAME = 4096  # characters of a kernel name a scenario's REGEX is matched against

NAMES = ("copies-on-side-stream", "no-host-sync", "comm-overlap", "no-launch-overhead",
         "cuda-graph", "dataloader", "dataloader:workers=N", "no-profiler", "no-profiler:NS",
         "kernels:REGEX=F", "spread:REGEX=N", "precision:tf32", "precision:bf16", "roof:REGEX=S")
GRAPH_GAP_NS = 256  # GPU gap between graph nodes (H200 small-ops/cuda-graph, median)
PROFILER = "no-profiler"  # the profiler's host cost, estimated from the trace, removed


def unprofiled(scenarios: Sequence[str], keep_profiler: bool = False) -> list[str]:
    """The scenarios of a prediction for the *unprofiled* loop: :data:`PROFILER` first,
    unless ``keep_profiler`` or a ``no-profiler`` scenario is among them already."""
    given = list(scenarios)
    if keep_profiler or any(s.strip().partition(":")[0] == PROFILER for s in given):
        return given
    return [PROFILER, *given]


_WORKERS = re.compile(r"^dataloader:workers=(\d+)(?:/(\d+))?$")


@dataclass(frozen=True)
class Scenario:
    text: str
    apply: Callable[[Graph, Plan], None]


def parse(text: str, tl: Timeline | None = None) -> Scenario:
    """``tl``: the trace the scenario will replay (the efficiency scenarios read its op
    shapes; without it they can only be checked)."""
    t = text.strip()
    head = t.partition(":")[0]
    if head in ("precision", "roof"):
        return _efficiency_scenario(t, tl)
    simple = {
        "copies-on-side-stream": copies_on_side_stream,
        "no-host-sync": no_host_sync,
        "comm-overlap": comm_overlap,
        "no-launch-overhead": no_launch_overhead,
        "cuda-graph": cuda_graph,
        "dataloader": lambda g, p: dataloader(g, p, None, None),
    }
    if t in simple:
        return Scenario(t, simple[t])
    if t == PROFILER:
        def estimated(g: Graph, p: Plan) -> None:
            from traceprobe.graph.overhead import profiler_cost

            if tl is None:
                raise UsageError(f"scenario {t!r} needs the trace (parse(text, timeline))")
            host = measured_host_ms(tl)
            cost = calibrate(g, host) if host else profiler_cost(tl)
            no_profiler(g, p, cost.ns)
            p.notes[-1] += f", {cost.describe()}"

        return Scenario(t, estimated)
    if t.startswith("no-profiler:"):
        try:
            ns = float(t.split(":", 1)[1])
        except ValueError:
            ns = -1.0
        if ns < 0:
            raise UsageError(f"scenario {t!r}: write no-profiler:NS, NS >= 0 the host "
                             "nanoseconds the profiler spent per recorded CPU event")
        return Scenario(t, lambda g, p: no_profiler(g, p, ns))
    if t.startswith("dataloader:"):
        m = _WORKERS.match(t)
        if not m or int(m.group(1)) < 1:
            raise UsageError(f"scenario {t!r}: write dataloader:workers=N (N >= 1), or "
                             "dataloader:workers=N/W when the traced run had W workers")
        n, w = int(m.group(1)), None if m.group(2) is None else int(m.group(2))
        return Scenario(t, lambda g, p: dataloader(g, p, n, w))
    head, _, rest = t.partition(":")
    if head in ("kernels", "spread") and "=" in rest:
        rx, _, val = rest.rpartition("=")
        pattern = _compile(t, rx)
        try:
            num = float(val) if head == "kernels" else int(val)
        except ValueError:
            num = 0
        if head == "kernels" and not MIN_FACTOR <= num <= MAX_FACTOR:  # nan fails too
            raise UsageError(f"scenario {t!r}: after '=' comes a factor from {MIN_FACTOR:g} "
                             f"to {MAX_FACTOR:g} (above 1: faster), e.g. kernels:gemm=2")
        if head == "spread" and not 1 <= num <= 1024:
            raise UsageError(f"scenario {t!r}: after '=' comes a stream count from 1 to 1024, "
                             "e.g. spread:gemm=2")
        if head == "kernels":
            return Scenario(t, lambda g, p: faster_kernels(g, p, pattern, float(num)))
        return Scenario(t, lambda g, p: spread(g, p, pattern, int(num)))
    raise UsageError(f"unknown scenario {text!r}; valid: {', '.join(NAMES)}")


def _compile(text: str, rx: str) -> re.Pattern[str]:
    """The scenario's REGEX, refused when it is bad or could backtrack without bound."""
    try:
        pattern = re.compile(rx)
    except (re.error, OverflowError, RecursionError) as e:
        raise UsageError(f"scenario {text!r}: bad regular expression {rx!r} ({e})") from None
    if _nested_repeat(rx):
        raise UsageError(
            f"scenario {text!r}: the regular expression {rx!r} repeats a group that holds a "
            "quantifier (like (a+)+), which can take exponential time; write it without the "
            "nesting, e.g. a+ for (a+)+")
    return pattern


def _nested_repeat(rx: str) -> bool:
    """True when a repeat (``*``, ``+``, ``{m,n}`` with n > 1) holds another repeat."""
    import re._parser as sre  # type: ignore[import-not-found]

    repeats = {sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)}

    def walk(items: object, inside: bool) -> bool:
        for op, av in items:  # type: ignore[attr-defined]
            if op in repeats:
                lo, hi, sub = av
                if inside and hi != lo:
                    return True
                if walk(sub, inside or hi > 1):
                    return True
            elif op is sre.SUBPATTERN:
                if walk(av[-1], inside):
                    return True
            elif op is sre.BRANCH:
                if inside and not _distinct_starts(av[1], sre):
                    return True  # (a|ab)* backtracks as (a+)+ does
                if any(walk(b, inside) for b in av[1]):
                    return True
            elif op in (sre.ASSERT, sre.ASSERT_NOT):
                if walk(av[1], inside):
                    return True
            elif op is sre.GROUPREF_EXISTS:
                if any(b is not None and walk(b, inside) for b in av[1:]):
                    return True
        return False

    return walk(sre.parse(rx), False)


def _distinct_starts(branches: list, sre: object) -> bool:
    """Every alternative starts with a literal character of its own."""
    firsts = []
    for b in branches:
        items = list(b)
        if not items or items[0][0] is not sre.LITERAL:  # type: ignore[attr-defined]
            return False
        firsts.append(items[0][1])
    return len(set(firsts)) == len(firsts)


def _efficiency_scenario(t: str, tl: Timeline | None) -> Scenario:
    from traceprobe.efficiency import kernel_factors

    _, _, arg = t.partition(":")
    if t.startswith("roof:"):
        rx, _, val = arg.rpartition("=")
        _compile(t, rx)  # a bad or exponentially backtracking REGEX: refused here
        try:
            share = float(val)
        except ValueError:
            share = -1.0
        if not rx or not 0 < share <= 1:
            raise UsageError(f"scenario {t!r}: write roof:REGEX=S with a valid regular "
                             "expression and 0 < S <= 1, e.g. roof:gemm=0.7")
    elif arg not in ("tf32", "bf16"):
        raise UsageError(f"scenario {t!r}: the precisions are tf32 and bf16")

    def apply(g: Graph, p: Plan) -> None:
        if tl is None:
            raise UsageError(f"scenario {t!r} needs the trace (parse(text, timeline))")
        factor, note = kernel_factors(tl, t)
        rescale_gpu_rows(g, p, tl, factor)
        p.notes.append(note)
        if t.startswith("precision:"):
            conv = _conv_kernels(tl.gpu["name"].to_numpy()[factor != 1.0])
            if conv:
                p.notes.append(f"{t}: {conv} {CONV_WARNING}")

    return Scenario(t, apply)


def rescale_gpu_rows(g: Graph, p: Plan, tl: Timeline, factor: np.ndarray) -> None:
    """Multiply the planned duration of each GPU node by ``factor`` of its ``tl.gpu`` row
    (matched by device, stream, start and end)."""
    gpu = np.flatnonzero(g.ntype == GPU)
    if not len(gpu) or not len(tl.gpu):
        return
    lane_stream = np.array([int(ln[2]) for ln in g.lanes], np.int64)  # one per lane
    lanes = lane_stream[g.lane[gpu]]
    nodes = pd.DataFrame({"device": g.device[gpu], "stream": lanes, "start": g.start[gpu],
                          "end": g.end[gpu], "node": gpu})
    rows = pd.DataFrame({"device": tl.gpu["device"].to_numpy(), "stream":
                         tl.gpu["stream"].to_numpy(), "start": tl.gpu["start"].to_numpy(),
                         "end": tl.gpu["end"].to_numpy(), "factor": factor})
    rows = rows.drop_duplicates(["device", "stream", "start", "end"])
    m = nodes.merge(rows, on=["device", "stream", "start", "end"], how="inner")
    m = m[m["factor"].to_numpy() != 1.0]
    hit = m["node"].to_numpy()
    p.dur[hit] = np.round(p.dur[hit] * m["factor"].to_numpy()).astype(np.int64)


def plan(g: Graph, scenarios: Sequence[Scenario]) -> Plan:
    p = Plan.of(g)
    for s in scenarios:
        s.apply(g, p)
    return p


# --------------------------------------------------------------------------- helpers


def _lane_runs(g: Graph, p: Plan, ops: np.ndarray) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for i in ops.tolist():
        out.setdefault(int(p.lane[i]), []).append(i)
    return out


def _queue(g: Graph) -> int:
    return int(g.typical.get("queue_ns", 1000))


def _move(g: Graph, p: Plan, moved: np.ndarray, label: Callable[[int], tuple],
          producer: Callable[[list[int], int], int | None], reissue: bool = False) -> None:
    """Move ``moved`` ops to the lanes ``label`` names; each waits for ``producer``
    (``reissue``: and is issued by its producer's launch call)."""
    ops = np.flatnonzero(g.ntype == GPU)
    is_moved = np.zeros(len(g), bool)
    is_moved[moved] = True
    for _, lane_ops in _lane_runs(g, p, ops).items():
        for j, i in enumerate(lane_ops):
            if not is_moved[i]:
                continue
            src = producer(lane_ops, j)
            if src is not None:
                p.deps.append((i, src, _queue(g)))
                if reissue and g.launch[src] >= 0:
                    p.launch[i] = g.launch[src]
    for i in moved.tolist():
        p.lane[i] = p.new_lane(label(i))


# --------------------------------------------------------------------------- scenarios


def copies_on_side_stream(g: Graph, p: Plan) -> None:
    copies = np.flatnonzero((g.ntype == GPU) & (g.gkind == COPY))
    if not len(copies):
        p.notes.append("copies-on-side-stream: the trace has no copies")
        return
    is_copy = np.zeros(len(g), bool)
    is_copy[copies] = True

    def producer(lane_ops: list[int], j: int) -> int | None:
        # the run of copies j belongs to, and the run of other ops before it
        a = j
        while a > 0 and is_copy[lane_ops[a - 1]]:
            a -= 1
        b = j
        while b + 1 < len(lane_ops) and is_copy[lane_ops[b + 1]]:
            b += 1
        m0 = a
        while m0 > 0 and not is_copy[lane_ops[m0 - 1]]:
            m0 -= 1
        m, n = a - m0, b - a + 1
        if m == 0:
            return None
        k = max(m - n + (j - a), 0)
        return lane_ops[m0 + k]

    _move(g, p, copies, lambda i: ("side", int(g.device[i]), str(g.copy_dir[i])), producer,
          reissue=True)


def comm_overlap(g: Graph, p: Plan) -> None:
    comm = np.flatnonzero((g.ntype == GPU) & g.comm)
    if not len(comm):
        p.notes.append("comm-overlap: the trace has no collectives")
        return
    is_comm = np.zeros(len(g), bool)
    is_comm[comm] = True

    def producer(lane_ops: list[int], j: int) -> int | None:
        for k in range(j - 1, -1, -1):
            if not is_comm[lane_ops[k]]:
                return lane_ops[k]
        return None

    _move(g, p, comm, lambda i: ("comm", int(g.device[i])), producer)


def no_host_sync(g: Graph, p: Plan) -> None:
    waits = np.flatnonzero((g.sync != NO_SYNC) & p.wait_kept & ~g.queued)
    dropped = 0
    for c in waits.tolist():
        ln = g.lane[c]
        nxt = np.flatnonzero((g.lane == ln) & (np.arange(len(g)) > c)
                             & (((g.ntype == HOST) & g.launches) | (g.ntype == MARK)))
        if len(nxt) and g.ntype[nxt[0]] == HOST and not _ends_step(g, c, int(nxt[0])):
            p.wait_kept[c] = False
            dropped += 1
    p.notes.append(f"no-host-sync: dropped {dropped} of {len(waits)} host waits")


def _ends_step(g: Graph, a: int, b: int) -> bool:
    """Whether a step boundary lies between nodes a and b (in node order)."""
    return any(a < s < b or a < e < b for _, s, e in g.steps)


def no_launch_overhead(g: Graph, p: Plan) -> None:
    calls = np.flatnonzero((g.ntype == HOST) & g.launches & (g.sync == NO_SYNC))
    p.dur[calls] = 0
    p.gap[g.launch_gap & (g.ntype != GPU)] = 0
    ops = np.flatnonzero((g.ntype == GPU) & (g.launch >= 0))
    p.d_launch[ops] = _queue(g)


def _loader_in_gaps(g: Graph) -> np.ndarray:
    """Per node: the DataLoader's time (host account) in the gap before it, on its thread."""
    out = np.zeros(len(g), np.int64)
    host = np.flatnonzero(g.ntype != GPU)
    for ln, acc in g.accounts.items():
        if ln < 0:  # the process's: on no lane
            continue
        on = host[g.lane[host] == ln]
        if len(on):
            out[on] = acc.time_in("dataloader", g.start[on] - g.gap[on], g.start[on])
    return np.minimum(out, np.maximum(g.gap, 0))


def _step_of(g: Graph) -> np.ndarray:
    """Per node: the index into ``g.steps`` of the step whose markers enclose it (node order;
    an end marker is its own step's), -1 outside every step."""
    out = np.full(len(g), -1, np.int64)
    for k, (_, s, e) in enumerate(g.steps):
        out[s + 1 : e + 1] = k
    return out


def dataloader(g: Graph, p: Plan, n: int | None, w: int | None) -> None:
    """The DataLoader scenarios on the plan as the scenarios before left it (with the default
    no-profiler first: the loop as if unprofiled): its loader time still in each gap, and each
    step's host span and other work C from a replay of that plan."""
    dl = np.minimum(_loader_in_gaps(g), np.maximum(p.gap, 0))
    if not dl.any():
        p.notes.append("dataloader: no DataLoader time between the host's calls")
        return
    if n is None:
        p.gap -= dl
        p.notes.append(f"dataloader: {dl.sum() / 1e6:.3g} ms of DataLoader time removed")
        return
    rp = replay(g, p)
    step = _step_of(g)
    multi = any("MultiProcessing" in str(v) for ln, a in g.accounts.items() if ln >= 0
                for v in set(a.name[a.cls == "dataloader"].tolist()))  # threads' accounts
    workers = w if w is not None else (1 if multi else 0)
    for k, (_, s, e) in enumerate(g.steps):
        mine = step == k
        d = int(dl[mine].sum())
        if not d:
            continue
        t = int(rp.start[e] - rp.start[s])
        fetch = workers * t if workers else d
        keep = max(0, fetch / n - (t - d))
        p.gap[mine] -= np.round(dl[mine] * (1 - keep / d)).astype(np.int64)
    p.notes.append(f"dataloader: {n} workers (the trace's run taken as {workers})")


def cuda_graph(g: Graph, p: Plan) -> None:
    step = _step_of(g)
    inside = (step >= 0) & (g.ntype != GPU)
    if not inside.any():
        p.notes.append("cuda-graph: the trace has no ProfilerStep to capture")
        return
    dl = np.minimum(_loader_in_gaps(g), np.maximum(p.gap, 0))
    p.gap[inside] = dl[inside]
    calls = np.flatnonzero(inside & (g.ntype == HOST) & (g.sync == NO_SYNC))
    durs = g.end[calls] - g.start[calls]
    launch_calls = calls[g.launches[calls]]
    one = int(np.median(g.end[launch_calls] - g.start[launch_calls])) if len(launch_calls) else 0
    p.dur[calls] = 0
    for k in range(len(g.steps)):
        first = launch_calls[step[launch_calls] == k]
        if len(first):
            p.dur[first[0]] = one
    ops = np.flatnonzero((g.ntype == GPU) & (g.launch >= 0))
    ops = ops[step[g.launch[ops]] >= 0]
    p.d_launch[ops] = GRAPH_GAP_NS
    if len(p.hand):  # the backward pass is in the graph too: no thread hands off
        p.hand[inside[p.hand[:, 0]], 2] = 0
    p.d_stream[ops] = np.minimum(p.d_stream[ops], GRAPH_GAP_NS)
    p.d_res[ops] = np.minimum(p.d_res[ops], GRAPH_GAP_NS)
    p.notes.append(f"cuda-graph: {len(calls)} host calls ({durs.sum() / 1e6:.3g} ms) "
                   f"replaced by one launch of {one / 1e3:.3g} µs per step")


CONV_WARNING = (
    "convolution kernels rescaled, as the same kernels run faster; a precision change can "
    "also change cuDNN's choice of convolution algorithms (other kernels, often more of "
    "them per step), which the trace does not show: read the prediction as the gain if the "
    "kernels stayed the same, not as a bound (on the committed resnet18 loops TF32 and bf16 "
    "launched more kernels per step and ran slower than fp32: docs/WHATIF.md)")


def _conv_kernels(names: np.ndarray) -> int:
    """How many of these kernel names are convolution kernels (efficiency's name rules)."""
    from traceprobe.efficiency.kernels import category
    from traceprobe.efficiency.work import CONV

    kinds = {str(n): category(str(n)[:MAX_NAME]) == CONV for n in set(names.tolist())}
    return sum(kinds[str(n)] for n in names.tolist())


def faster_kernels(g: Graph, p: Plan, rx: re.Pattern[str], factor: float) -> None:
    hit = _matching(g, rx)
    p.dur[hit] = np.round(p.dur[hit] / factor).astype(np.int64)
    p.notes.append(f"{rx.pattern}: {len(hit)} kernels {factor:g}x faster")
    conv = _conv_kernels(g.name[hit]) if factor > 1 else 0
    if conv:
        p.notes.append(f"{rx.pattern}: {conv} {CONV_WARNING}")


def _matching(g: Graph, rx: re.Pattern[str], memsets: bool = False) -> np.ndarray:
    kinds = [KERNEL, MEMSET] if memsets else [KERNEL]
    k = np.flatnonzero((g.ntype == GPU) & np.isin(g.gkind, kinds))
    names = g.name[k]
    uniq = {str(n): bool(rx.search(str(n)[:MAX_NAME])) for n in set(names.tolist())}
    return k[np.array([uniq[str(n)] for n in names], bool)] if len(k) else k


def spread(g: Graph, p: Plan, rx: re.Pattern[str], n: int) -> None:
    hit = _matching(g, rx, memsets=True)
    p.notes.append(f"spread {rx.pattern}: {len(hit)} kernels over {n} streams")
    if not len(hit):
        return
    is_hit = np.zeros(len(g), bool)
    is_hit[hit] = True
    ops = np.flatnonzero(g.ntype == GPU)
    q = _queue(g)
    rr: dict[int, int] = {}
    for _, lane_ops in _lane_runs(g, p, ops).items():
        last = None
        pending: list[int] = []
        for i in lane_ops:
            if is_hit[i]:
                if last is not None:
                    p.deps.append((i, last, q))
                pending.append(i)
                d = int(g.device[i])
                k = rr.get(d, 0)
                rr[d] = k + 1
                p.lane[i] = p.new_lane(("spread", d, k % n))
            else:
                p.deps.extend((i, m, q) for m in pending)
                pending = []
                last = i
