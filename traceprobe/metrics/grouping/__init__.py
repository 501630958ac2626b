"""Many analysis windows at once: the window set, grouping rows by window and key, the cut.

``traceprobe analyze --step all`` asks for every figure of every ProfilerStep. Computing
them one window after another costs a few dozen pandas calls per window (≈40 ms), so
10,000 steps would take minutes. Instead the timeline is *cut* once
(:meth:`traceprobe.timeline.Timeline.cut`): each frame holds every event once per window
it falls in, clipped to that window, with the window's index in a ``win`` column. The
metrics then group by ``win`` and return one result per window. A frame without a ``win``
column is a single window (index 0), so the same functions serve the whole-trace report,
one ``--step N`` and ``--step all``.

Every figure has one signature: ``f(inputs..., windows: Windows, options...)`` returns a
list, item ``i`` the figure of window ``i``; the one-window case is ``f(..., Windows.one(lo,
hi))[0]``. Because a window's rows are exactly the rows :meth:`Timeline.window` keeps for it,
every figure of window ``i`` equals the figure computed on ``timeline.window(lo[i], hi[i])``
alone (tested for every metric). The interval algebra of many groups at once (unions, depth
sweeps, overlaps) is in :mod:`traceprobe.intervals`; this package holds the grouping, in two
modules (:mod:`.windows`: the windows and the cut; :mod:`.keys`: rows grouped by keys):

* the windows: :class:`Windows`, :func:`win_of`, and :class:`Axis` (windows laid end to end
  on one time axis, so that one interval sweep serves them all);
* groups of sorted rows: :func:`key_changes` (the first row where the key changes),
  :func:`group_ids`, :func:`grouped_sum` (exact int64), :func:`grouped_max`,
  :func:`grouped_quantile`, :func:`pairs_within`;
* rows grouped by (window, key columns) as ``groupby`` would: :func:`key_groups`;
* look-ups among rows keyed by several integer columns: :func:`first_of_each`,
  :func:`lookup`, :func:`rank`, :func:`latest_end_before`, :func:`positions`,
  :func:`report_rows`;
* the per-window cut of result rows: :func:`per_window` (rows ordered by window),
  :func:`cut` (rows and their groups' offsets) and :func:`chunks` (the same number of rows
  per window), and :func:`rows_of` (many rows of a frozen dataclass at once).
"""

from __future__ import annotations

from traceprobe.intervals import offsets, sorted_unique
from traceprobe.metrics.grouping.keys import (
    NONE,
    KeyGroups,
    factorized,
    first_of_each,
    group_ids,
    grouped_max,
    grouped_quantile,
    grouped_sum,
    key_changes,
    key_groups,
    latest_end_before,
    lookup,
    of_kind,
    pairs_within,
    positions,
    rank,
    report_rows,
    string_ranks,
    values_at,
)
from traceprobe.metrics.grouping.windows import (
    Axis,
    Windows,
    chunks,
    cut,
    per_window,
    rows_of,
    win_of,
)

__all__ = [
    "NONE", "Axis", "KeyGroups", "Windows", "chunks", "cut", "factorized", "first_of_each",
    "group_ids",
    "grouped_max", "grouped_quantile", "grouped_sum", "key_changes", "key_groups",
    "latest_end_before", "lookup", "of_kind", "offsets", "pairs_within", "per_window",
    "positions", "rank", "report_rows", "rows_of", "sorted_unique", "string_ranks",
    "values_at", "win_of",
]
