"""The report: every figure of one analysed trace, as a value object.

    from traceprobe.report import analyze, check
    report = analyze(timeline)            # model.Report (ns inside, µs in to_dict())
    report.to_dict()                      # the JSON contract, docs/REPORT_SCHEMA.md
    check(report)                         # assert the invariants (tests call it everywhere)

``model`` holds the value objects (no pandas); ``build`` computes them from a Timeline
(``blocks``: the step reports of ``step="all"``, made a block of steps at a time when read);
``headlines`` and ``invariants`` are functions of a finished report (the model imports
neither). The functions here import ``build`` when called, so importing the package is light.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING

from traceprobe.report.model import (
    MULTI_SCHEMA,
    SCHEMA,
    Counts,
    MultiReport,
    Report,
    Step,
    Window,
    plain,
)

if TYPE_CHECKING:
    from traceprobe.timeline import Timeline

__all__ = [
    "MULTI_SCHEMA",
    "SCHEMA",
    "Counts",
    "MultiReport",
    "Report",
    "Step",
    "Window",
    "analyze",
    "analyze_many",
    "check",
    "plain",
]


def analyze(
    trace: Timeline | str | os.PathLike[str],
    *,
    step: Step = None,
    devices: Sequence[int] | None = None,
    window: str = "steps",
) -> Report:
    """Every figure of one trace: a Timeline, or the path of a trace file to load first.

    ``step``: None for the whole window, N for ProfilerStep#N only, ``"all"`` for the whole
    plus one sub-report per step. ``devices``: only these GPUs (None: every GPU with work).
    ``window``: what "the whole window" is: ``"steps"`` (the profiled steps), ``"profiler"``
    (the profiler's recording span) or ``"events"`` (every event); docs/FIGURES.md.
    """
    from traceprobe.report.build import analyze as _analyze

    if isinstance(trace, (str, os.PathLike)):
        from traceprobe.load import load

        trace = load(trace)
    return _analyze(trace, step=step, devices=devices, window=window)


def analyze_many(
    timelines: Sequence[Timeline], *, step: Step = None, devices: Sequence[int] | None = None,
    window: str = "steps",
) -> MultiReport:
    """Each timeline analysed, plus device overlap across them (one host clock assumed)."""
    from traceprobe.report.build import analyze_many as _analyze_many

    return _analyze_many(timelines, step=step, devices=devices, window=window)


def check(report: Report | MultiReport) -> None:
    """Assert every invariant of the figures; AssertionError names the one that broke."""
    from traceprobe.report.invariants import check as _check

    _check(report)
