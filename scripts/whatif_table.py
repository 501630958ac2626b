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
from traceprobe.load import find_traces, load  # noqa: E402

ROOTS = ("sample_traces/h200", "sample_traces/h200x2")
GOAL_ROW, GOAL_MEDIAN = 0.10, 0.05


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
the change for real (recorded on H200, mean over each trace's steps).
*error* = (predicted − measured) / measured. Goal: every row within 10%, median within 5%.
The graph, the replay, the scenarios and every figure are defined in docs/FIGURES.md
("Critical path and what-if"); the JSON schema is below.

"""

SCHEMA = """

## Output of `traceprobe whatif --format json` (`traceprobe.whatif/1`)

```json
{"schema": "traceprobe.whatif/1", "trace": "seq.pt.trace.json.gz",
 "windows": [{"step": 1, "measured_us": 262515.9, "replayed_us": 262515.9,
              "predicted_us": 133733.2, "speedup": 1.96,
              "critical_path": {"length_us": 133733.2, "bound_by": "kernel",
                                "breakdown": {"cpu_op": 0.0, "...": 0.0},
                                "segments": [{"start_us": 0.0, "end_us": 0.0,
                                              "kind": "kernel", "name": "..."}]},
              "measured_critical_path": {"...": "the same, of the unchanged replay"}}],
 "scenarios": ["no-host-sync"], "notes": ["no-host-sync: dropped 1 of 4 host waits"]}
```

`windows` has one object per `ProfilerStep#N` (or one with `"step": null` for a trace without
steps, or with `--step N` one). `critical_path` is the *predicted* replay's path, on the trace's
clock from the step's measured start; `measured_critical_path` the unchanged replay's (equal
to the one `traceprobe analyze` reports).

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
  node; its pieces tile the step, by category (`cpu_op`, `runtime`, `kernel`, `copy`,
  `communication`, `sync_wait`, `dataloader`, `idle`).

## Limits

* A replay keeps the host's program order: only `copies-on-side-stream` re-issues work (each
  copy right after its producer's launch, as the side-stream pattern does); no scenario moves
  other host code.
* Cross-thread dependencies on the host are not modelled: each thread's first call keeps its
  measured start (the autograd thread of a backward pass runs as measured).
* Cross-stream event waits are inferred from timing only where they bound an op; a wait that
  did not bind in the measured run is invisible to a scenario that makes it bind.
* Launch-queue back-pressure is not modelled either: when the host runs ahead of a busy GPU
  until the driver's launch queue is full, each launch call blocks until a slot frees, and the
  replay counts that as host time.
* So on a GPU-bound job a step's path (which ends at a host marker) can follow the host. Example:
  on HTA's corpus trace `ns_resolution_trace_rank-0…` GPU 0 is busy 97.4% of the profiled steps,
  yet the path is "bound by idle" (281 ms of its 394 ms). Of that, 240 ms is the main thread
  inside `## backward ##`, waiting for the autograd thread that runs the backward pass (the
  cross-thread limit above). The path also holds launch calls that ran long as the queue filled
  (`runtime`, 23%). Read `bound_by` together with the GPUs' utilization. A host-side scenario
  on such a trace over-predicts.

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
* HTA models CPU ops (nested) as nodes; traceprobe keeps CPU time as the gap between runtime
  calls and classifies it (cpu_op / dataloader / idle) by the op that covers it.
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
    doc = HEAD + table(rows) + SCHEMA + _scenario_doc() + TAIL
    if a.write:
        Path(a.write).write_text(doc)
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
