"""The step sub-reports of ``--step all``, built a block of steps at a time.

``StepReports`` is the ``steps`` of a whole-trace report made with ``step="all"``: a
sequence of one :class:`~.model.Report` per ProfilerStep, in step order. Its reports are
made when they are read, :data:`BLOCK` steps at a time: the timeline cut at those steps
(:meth:`~traceprobe.timeline.Timeline.cut`) and every metric once for the block
(:func:`.windows.window_reports`). Only the block read last is kept, so a writer that
streams the steps (:func:`traceprobe.render.jsonfmt.pieces`) holds one block's reports,
not thousands, and its memory does not grow with the number of steps.

A step's report is the same whichever block it is built in: each window of a cut is
exactly that window alone (tests/test_timeline_windows.py, tests/report/test_blocks.py).
The sequence keeps the timeline it reads (and the steps' critical paths) alive.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, overload

from traceprobe.metrics.grouping import Windows
from traceprobe.report.model import Report
from traceprobe.report.windows import window_reports
from traceprobe.timeline import Timeline

BLOCK = 500  # steps whose reports are built together (a few MB of reports at a time)


class StepReports(Sequence[Report]):
    """One report per row of ``rows`` (``(step, start_ns, end_ns)``, in order), over
    ``timeline``, with ``paths[step]`` as that step's critical path (None when absent)."""

    def __init__(
        self,
        timeline: Timeline,
        rows: Sequence[tuple[int, int, int]],
        devices: list[int],
        pid: int | None,
        paths: Mapping[int, Any],
        block: int | None = None,
    ) -> None:
        self._timeline = timeline
        self._rows = list(rows)
        self._devices = devices
        self._pid = pid
        self._paths = paths
        self._block = max(1, int(block or BLOCK))
        self._kept: tuple[int, list[Report]] | None = None  # the block read last

    def __len__(self) -> int:
        return len(self._rows)

    @overload
    def __getitem__(self, i: int) -> Report: ...

    @overload
    def __getitem__(self, i: slice) -> tuple[Report, ...]: ...

    def __getitem__(self, i: int | slice) -> Report | tuple[Report, ...]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        n = len(self._rows)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError(f"step report {i} of {n}")
        return self._reports(j // self._block)[j % self._block]

    def __iter__(self) -> Iterator[Report]:
        for b in range(-(-len(self._rows) // self._block)):
            yield from self._reports(b)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, (str, bytes)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"StepReports({len(self)} steps, built {self._block} at a time)"

    def _reports(self, b: int) -> list[Report]:
        if self._kept is not None and self._kept[0] == b:
            return self._kept[1]
        self._kept = None  # the previous block's reports go before the next one's are made
        rows = self._rows[b * self._block : (b + 1) * self._block]
        bounds = [(s, e) for _, s, e in rows]
        reports = window_reports(
            self._timeline.cut(bounds), Windows.of(bounds), [(n, "step") for n, _, _ in rows],
            self._devices, self._pid, [self._paths.get(n) for n, _, _ in rows])
        self._kept = (b, reports)
        return reports
