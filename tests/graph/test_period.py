"""Every step's period and end-of-step GPU op at once (:mod:`traceprobe.graph.period`)
against the plain per-step scans of every node they replaced, on real traces."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from traceprobe import load
from traceprobe.graph.build import build
from traceprobe.graph.model import GPU
from traceprobe.graph.period import gpu_end_nodes, periods
from traceprobe.graph.replay import Plan, replay

ROOT = Path(__file__).resolve().parents[2] / "sample_traces"
TRACES = ["h200/real-loops/transformer-tf32-item", "h200/real-loops/mnist-workers1",
          "h200/many-steps", "h200/real-loops/mlp-graph"]


def _slow_period(g, rp, s, e):
    host = int(rp.start[e]) - int(rp.start[s])
    ops = np.flatnonzero(g.ntype == GPU)
    lnode = g.launch[ops]
    mine = ops[(lnode > s) & (lnode < e)]
    if not len(mine):
        return host, 0
    before = ops[lnode < s]
    prev = max(int(rp.start[s]), int(rp.end[before].max()) if len(before) else 0)
    return host, max(int(rp.end[mine].max()) - prev, 0)


def _slow_end(g, rp, hi, default):
    ops = np.flatnonzero((g.ntype == GPU) & (rp.start < hi))
    return default if not len(ops) else int(ops[np.argmax(rp.end[ops])])


@pytest.mark.parametrize("folder", TRACES)
def test_all_steps_at_once_equal_one_step_at_a_time(folder: str) -> None:
    tl = load(str(next((ROOT / folder).glob("*.pt.trace.json.gz"))))
    g = build(tl)
    rp = replay(g, Plan.of(g))
    rows = [(int(s), int(e)) for _, s, e in g.steps]
    # and windows that are not steps: across steps, inside one, before the first op
    n = len(g)
    rows += [(rows[0][0], rows[-1][1]), (0, n - 1), (0, 1), (n // 3, n // 2)]
    assert periods(g, rp, rows) == [_slow_period(g, rp, s, e) for s, e in rows]
    his = [int(rp.start[e]) for _, e in rows] + [int(rp.start.min()), int(rp.end.max()) + 1]
    defaults = list(range(len(his)))
    assert gpu_end_nodes(g, rp, his, defaults) == [_slow_end(g, rp, h, d)
                                                    for h, d in zip(his, defaults, strict=True)]
