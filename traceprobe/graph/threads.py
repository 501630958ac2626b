"""Host threads: cross-thread hand-offs, and each thread's host account.

**Hand-offs.** PyTorch runs a step's backward pass on autograd's own thread (one per
device) while the main thread waits inside ``backward()``; nothing in a trace records that
wait. It is inferred from nesting and timing, as cross-stream waits are:

    Between two threads A and B of one process that both launch GPU work somewhere in the
    trace, a gap of A — from its call ``p`` to its next node ``n`` (a call or a step
    marker) — *hands off* to B when B's calls inside the gap lie
    wholly in it (no call of B spans ``p``'s end or ``n``'s start) and at least one of
    them launches GPU work. Then B's first call there waits for ``p`` (delay: the
    measured time from ``p``'s end to its start) and ``n`` waits for B's last call there
    (delay: from its end to ``n``'s start). A node a hand-off wakes keeps no gap of its
    own thread (the hand-off's delay holds that time), so the replay follows B's work.

The rule is symmetric, so the other direction (B waiting between two backward passes
while A runs the forward) gives the same edges. A thread that launches nothing (the c10d
watchdog polling events, the DataLoader's pin-memory thread) takes no part: the
main thread's time waiting for the pin-memory thread lies inside the DataLoader's
``__next__`` and is the DataLoader's on the path. Every edge runs from an earlier end to a
later start, so the graph stays acyclic and the unchanged replay reproduces every time.

**Accounts.** Each host lane's :func:`~traceprobe.metrics.regions.account` over the trace:
what its thread was doing at every instant, which the critical path's host pieces read.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from traceprobe.graph.model import GPU, HOST, Graph
from traceprobe.intervals import sorted_unique
from traceprobe.metrics.host import host_process
from traceprobe.metrics.regions import RangedAccount, account, host_events


def handoffs(g: Graph) -> None:
    """Set ``g.hand`` (and shrink the waiting gaps) by the rule of the module docstring."""
    host = np.flatnonzero(g.ntype != GPU)
    if not len(host):
        return
    by_lane: dict[int, np.ndarray] = {}
    for ln in sorted_unique(g.lane[host]).tolist():
        nodes = host[g.lane[host] == ln]
        by_lane[int(ln)] = nodes[np.argsort(g.start[nodes], kind="stable")]
    rows: list[tuple[int, int, int]] = []
    launching = {ln for ln, nodes in by_lane.items() if g.launches[nodes].any()}
    for a, na in by_lane.items():
        if len(na) < 2 or a not in launching:
            continue
        a_s, a_e = g.start[na], g.end[na]
        for b, nb in by_lane.items():
            if b == a or b not in launching or g.lanes[b][1] != g.lanes[a][1]:
                continue
            calls = nb[g.ntype[nb] == HOST]
            if not len(calls):
                continue
            b_s, b_e = g.start[calls], g.end[calls]
            k = np.searchsorted(a_s, b_s, side="right")  # A's next node after each B call
            inside = (k >= 1) & (k < len(na))
            kk = np.clip(k, 1, len(na) - 1)
            inside &= (a_e[kk - 1] <= b_s) & (b_e <= a_s[kk])
            # a B call spanning a gap's edge makes it no clean hand-off
            straddle = np.zeros(len(na) + 1, bool)
            edge = (k >= 1) & (k < len(na)) & ~inside
            straddle[kk[edge]] = True
            gid = np.where(inside, kk, -1)
            ok = gid >= 0
            if not ok.any():
                continue
            frame = pd.DataFrame({"gap": gid[ok], "i": calls[ok], "launch": g.launches[calls[ok]]})
            grp = frame.groupby("gap", sort=True).agg(first=("i", "min"), last=("i", "max"),
                                                      launch=("launch", "any"))
            grp = grp[grp["launch"] & ~straddle[grp.index.to_numpy()]]
            for gap, first, last in zip(grp.index.tolist(), grp["first"].tolist(),
                                        grp["last"].tolist(), strict=True):
                p, n = int(na[gap - 1]), int(na[gap])
                d_in = int(g.start[first] - g.end[p])
                d_out = int(g.start[n] - g.end[last])
                rows.append((int(first), p, d_in))
                rows.append((n, int(last), d_out))
    if rows:
        hand = np.array(sorted(set(rows)), np.int64)
        g.hand = hand
        # a node a hand-off wakes waits for the other thread, not for its own thread's
        # previous call: its own gap becomes 0 (the hand-off's delay holds the time)
        woken = sorted_unique(hand[:, 0])
        g.gap[woken] = np.where(g.prev[woken] >= 0, 0, g.gap[woken])


PROCESS = -1  # g.accounts' key of the trace process's whole account


def accounts(g: Graph, cpu: pd.DataFrame) -> None:
    """``g.accounts``: the host account of each host lane over the trace's span, and under
    :data:`PROCESS` that of the trace's process, its threads as one (a
    :class:`~traceprobe.metrics.regions.RangedAccount`: only its pieces are read)."""
    pids = {lane[1] for lane in g.lanes if lane[0] == "host"}
    main = host_process(cpu)
    events = {pid: host_events(cpu, pid) for pid in pids | ({main} if main is not None else set())}
    if main is not None and len(events[main].start):  # read for a few intervals: made so
        g.accounts[PROCESS] = RangedAccount.of(cpu, main)  # its events made when first read
    for li, lane in enumerate(g.lanes):
        if lane[0] == "host":
            on = (cpu["pid"].to_numpy() == lane[1]) & (cpu["tid"].to_numpy() == lane[2])
            g.event_starts[li] = np.sort(cpu["start"].to_numpy(np.int64)[on])
    for pid in sorted(pids):
        acc = account(events[pid], g.origin, max(g.span_end, g.origin))
        for li, lane in enumerate(g.lanes):
            if lane[0] == "host" and lane[1] == pid and lane[2] in acc:
                g.accounts[li] = acc[lane[2]]
