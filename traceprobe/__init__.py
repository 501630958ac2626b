"""traceprobe: measure, from PyTorch Profiler traces, whether work actually ran in parallel.

The analysis API (no torch, no GPU needed)::

    import traceprobe
    tl = traceprobe.load("trace.pt.trace.json.gz")       # Timeline: pandas frames, int ns
    tl.kernels, tl.copies, tl.cpu, tl.steps               # DataFrames
    report = traceprobe.analyze(tl)                       # Report (a path works too)
    report.devices_frame()                                # figures as DataFrames, in µs
    report.to_dict()                                      # the JSON contract
    traceprobe.compare(report_a, report_b)                # what changed between two runs
    traceprobe.check(report, ["utilization[0] >= 0.8"])   # expectations, as `traceprobe check`

Recording lives in :mod:`traceprobe.record` and needs torch. Importing this package is
light: each function imports what it needs when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traceprobe.errors import TraceError, TraceprobeError, UsageError
from traceprobe.load import find_traces, from_document, from_events, load, load_many
from traceprobe.report import MultiReport, Report, analyze, analyze_many
from traceprobe.timeline import Timeline, TraceMeta

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence
    from typing import Any

    from traceprobe.expect import Expectation, Result

    ReportLike = Report | Mapping[str, Any] | Timeline | str | os.PathLike[str]

__version__ = "0.1.0"

__all__ = [
    "MultiReport",
    "Report",
    "Timeline",
    "TraceError",
    "TraceMeta",
    "TraceprobeError",
    "UsageError",
    "__version__",
    "analyze",
    "analyze_many",
    "check",
    "compare",
    "find_traces",
    "from_document",
    "from_events",
    "load",
    "load_many",
]


def _report_dict(report: ReportLike) -> Mapping[str, Any]:
    """The report dict of a Report, a report dict, a Timeline or a trace path."""
    from collections.abc import Mapping

    if isinstance(report, (Report, MultiReport)):
        return report.to_dict()
    if isinstance(report, Mapping):
        return report
    return analyze(report).to_dict()


def compare(a: ReportLike, b: ReportLike, *, step_stat: str = "median",
            batch: tuple[int | None, int | None] = (None, None)) -> dict[str, Any]:
    """What changed from ``a`` to ``b``, as ``traceprobe compare -f json`` prints it.

    Each side is a Report, its ``to_dict()``, a Timeline or a trace path (analysed whole).
    The result: ``speedup``, the ``steps`` (their statistics; ``step_stat``: ``median``,
    ``p90`` or ``mean``; per sample with ``batch=(A's, B's)``), every figure side by side
    (``figures``: a, b, delta) and the ``changes`` ranked by the step time at stake;
    ``traceprobe.comparison.format_text(result)`` gives the table.
    """
    from traceprobe.comparison import compare as _compare

    return _compare(_report_dict(a), _report_dict(b), step_stat=step_stat, batch=batch)


def check(report: ReportLike, expectations: str | Sequence[str | Expectation], *,
          baseline: ReportLike | None = None) -> list[Result]:
    """Each expectation (``"utilization[0] >= 0.8"``...) checked, as ``traceprobe check``.

    Returns one Result per expectation (``.passed``, ``.value``, ``.describe()``); an undefined
    figure fails. ``baseline``: the report that ``baseline.NAME`` reads (as ``--baseline``).
    ``traceprobe check --help`` lists the names. Never raises on a failure: see
    ``traceprobe.expect.require`` for that.
    """
    from traceprobe.expect import evaluate

    exps = [expectations] if isinstance(expectations, str) else list(expectations)
    base = None if baseline is None else _report_dict(baseline)
    return evaluate(_report_dict(report), exps, baseline=base)
