"""Verdicts: does each recorded experiment's claim hold, judged from its traces?

    verdicts = verify_dir("traceprobe-out")   # -> dict, schema "traceprobe.verdicts/1"
    text = render(verdicts, "markdown")       # traceprobe.render.verdicts

The flow: every ``traceprobe.meta.jsonc`` under the folder (any depth) -> its variant's
traces (loader) -> the report dict (report.analyze, docs/REPORT_SCHEMA.md) plus a few
timeline figures the report lacks (:func:`timeline_figures`) -> one :class:`Recorded`
per variant -> one small rule per workload -> one verdict per variant::

    {"workload", "variant", "folder", "claim", "verdict", "why", "figures", "wall_clock"}

``verdict`` is :data:`HOLDS`, :data:`PARTLY` (the effect is there, short of the claim),
:data:`FAILS` or :data:`CANNOT_TELL`; ``why`` is one
sentence with numbers; ``wall_clock`` explains how the trace's spans compare with the
independent wall-clock times in the metadata. A rule is a pure function of report and
metadata dicts, ``rule(v: Recorded, peers: dict[str, Recorded]) -> Decision`` (``peers``:
the other recorded variants of the workload), so tests feed it hand-built dicts.

Each verdict answers the claim printed beside it: the registry's claim for the variant
that tests it, a variant-specific claim (:data:`CLAIMS`) for controls and baselines.
docs/FIGURES.md ("Verdicts") gives the reasoning behind the thresholds.

Where to look, in the order of the flow:

* ``recorded.py``: finding the metadata under a folder, loading each variant (:class:`Recorded`)
* ``figures.py``: the timeline-only figures (interval algebra), and each figure's unit
* ``thresholds.py``: the thresholds, each with its reason
* ``decision.py``: the three verdicts, a rule's :class:`Decision`, the controls' claims
* ``clauses.py``: readings and words the rules share (``shortfall``, ``speedups``, ``pct``)
* ``rules.py``: one rule per workload (:data:`RULES`)
* ``wallclock.py``: the trace against the wall clock, and the sentence that explains it
* this module: one verdict per variant (:func:`decide`, :func:`verify`), and :func:`verify_dir`
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from traceprobe.errors import TraceError
from traceprobe.record import registry
from traceprobe.verify.clauses import (
    best_pair,
    clear_speedup,
    copy_row,
    dur,
    gpus_used,
    idle_clause,
    pct,
    ratio,
    shortfall,
    speed_clause,
    speedups,
    times,
)
from traceprobe.verify.decision import (
    CANNOT_TELL,
    CLAIMS,
    FAILS,
    HOLDS,
    PARTLY,
    VERDICTS,
    Decision,
    Rule,
)
from traceprobe.verify.figures import FRACTIONS, Figures, timeline_figures, units
from traceprobe.verify.recorded import (
    Recorded,
    find_metadata,
    load_recorded,
    machine_of,
    trace_paths,
)
from traceprobe.verify.rules import (
    RULES,
    copy,
    cpu_gpu,
    dag,
    ddp,
    independent_ops,
    mlp,
    scheduled,
    small_ops,
    two_devices,
)
from traceprobe.verify.thresholds import (
    COMM_HIDDEN_HOLDS,
    HIDDEN_HOLDS,
    HOST_OVERLAP_HOLDS,
    KERNEL_CONCURRENCY_MIN,
    MLP_OVERLAP_HOLDS,
    OVERLAP_HOLDS,
    OVERLAP_NONE,
    SAME_OPS_TOLERANCE,
    SERIAL_RATIO_TOLERANCE,
    SPEEDUP_CLEAR,
    THRESHOLDS,
    WALL_SPAN_MISMATCH,
)
from traceprobe.verify.wallclock import wall_figures

SCHEMA = "traceprobe.verdicts/1"

__all__ = [
    "CANNOT_TELL", "CLAIMS", "COMM_HIDDEN_HOLDS", "FAILS", "FRACTIONS", "HIDDEN_HOLDS",
    "HOLDS", "HOST_OVERLAP_HOLDS", "PARTLY", "KERNEL_CONCURRENCY_MIN", "MLP_OVERLAP_HOLDS",
    "OVERLAP_HOLDS", "OVERLAP_NONE", "RULES", "SAME_OPS_TOLERANCE", "SCHEMA",
    "SERIAL_RATIO_TOLERANCE", "SPEEDUP_CLEAR", "THRESHOLDS", "VERDICTS",
    "WALL_SPAN_MISMATCH", "Decision", "Figures", "Recorded", "Rule", "best_pair",
    "clear_speedup", "copy", "copy_row", "cpu_gpu", "dag", "ddp", "decide", "dur",
    "find_metadata", "gpus_used", "idle_clause", "independent_ops", "load_recorded",
    "machine_of", "mlp", "pct", "ratio", "scheduled", "shortfall", "small_ops",
    "speed_clause", "speedups", "timeline_figures", "times", "trace_paths", "two_devices",
    "units", "verify", "verify_dir", "wall_figures",
]


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
    out = {
        "workload": v.workload,
        "variant": v.variant,
        "folder": v.folder or f"{v.workload}/{v.variant}",
        "claim": CLAIMS.get((v.workload, v.variant), spec_claim),
        "verdict": d.verdict,
        "why": d.why,
        "figures": {**d.figures, **wall},
        "wall_clock": note,
    }
    notices = input_notices(v)
    if notices:  # a cut-short or leniently read trace: the verdict rests on what was kept
        out["notices"] = notices
    return out


def input_notices(v: Recorded) -> list[str]:
    """``notice: FILE: ...`` per salvaged trace and ``warning: FILE: ...`` per lenient
    reading, for the variant's traces (its verdict rests on what was read)."""
    out = []
    for r in v.reports:
        src = r.get("trace", "?")
        s = r.get("salvaged")
        if s:
            out.append(f"notice: {src}: {s.get('reason')}; only the {s.get('events_kept', 0):,} "
                       "complete events before the cut were analysed")
        out += [f"warning: {src}: {w}" for w in r.get("warnings") or ()]
    return out


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


def verify_dir(
    path: str | Path, *, jobs: int | None = None, errors: list[TraceError] | None = None
) -> dict[str, Any]:
    """Verdicts for every variant recorded under ``path`` (schema ``traceprobe.verdicts/1``).

    ``errors``: as :func:`load_recorded` (a list collects the variants that cannot be read,
    which are then left out; None raises the first). ``machine`` is empty when no variant
    could be read.
    """
    root = Path(path)
    recorded = load_recorded(root, jobs=jobs, errors=errors)
    verdicts = verify(recorded)
    return {
        "schema": SCHEMA,
        "source": str(root),
        "machine": machine_of([v.meta for v in recorded]) if recorded else {},
        "thresholds": dict(THRESHOLDS),
        "units": units(verdicts),
        "verdicts": verdicts,
    }
