"""A trace's dependency graph, complete: its structure (:mod:`.model`) with the delays of
every edge calibrated from the measured times (:mod:`.delays`), the hand-offs between host
threads and each thread's host account (:mod:`.threads`)."""

from __future__ import annotations

from traceprobe.graph.delays import gpu_delays, host_waits
from traceprobe.graph.model import Graph, structure
from traceprobe.graph.threads import accounts, handoffs
from traceprobe.timeline import Timeline


def build(tl: Timeline) -> Graph:
    """The graph of one trace (one rank), ready to replay."""
    g = structure(tl)
    host_waits(g)
    gpu_delays(g)
    handoffs(g)
    accounts(g, tl.cpu)
    return g
