"""Many ranks: one compact summary per trace, then the cross-rank reduce.

    from traceprobe.ranks import summarise, reduce_ranks
    summaries = [summarise(f) for f in files]        # where the files are (see engines/)
    section = reduce_ranks(summaries)                # the report's "ranks" section

:func:`summarise` runs once per trace, wherever :mod:`traceprobe.engines` puts it;
:func:`reduce_ranks` reads only the summaries (a few KB each), never a trace.
"""

from __future__ import annotations

from traceprobe.ranks.reduce import reduce_ranks
from traceprobe.ranks.summary import Failure, RankSummary, full_report, summarise

__all__ = ["Failure", "RankSummary", "full_report", "reduce_ranks", "summarise"]
