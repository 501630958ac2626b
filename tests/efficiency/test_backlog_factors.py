"""Kernels launched before the recording began (the warm-up backlog of a GPU-bound loop) take
their name's factor under precision:/roof: (docs/FIGURES.md, "Precision")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from traceprobe.efficiency import _rows, kernel_factors
from traceprobe.load import load

ROOT = Path(__file__).resolve().parents[2]
FP32 = ROOT / "sample_traces" / "h200" / "real-loops" / "transformer-fp32"


@pytest.fixture(scope="module")
def tl():
    if not FP32.is_dir():
        pytest.skip("the real-loops traces are not here")
    return load(str(next(FP32.glob("*.pt.trace.json.gz"))))


@pytest.mark.parametrize("target", ["tf32", "bf16"])
def test_backlog_kernels_take_their_names_mean_factor(tl, target):
    out, note = kernel_factors(tl, f"precision:{target}")
    a, rows, _, _, _ = _rows(tl)
    kg = a.kernel_group
    gpu = tl.gpu.reset_index(drop=True)
    dur = (gpu["end"] - gpu["start"]).to_numpy(float)
    has = kg >= 0
    op = np.full(len(gpu), None, object)
    op[has] = rows["op"].to_numpy(object)[kg[has]]
    frame = pd.DataFrame({"name": gpu["name"].to_numpy(object), "op": op, "dur": dur,
                          "f": out})
    with_op = frame[has & (frame["op"] != "")]
    backlog = frame[has & (frame["op"] == "")]
    # an independent recomputation: per name, sum(dur * f) / sum(dur) over the op's kernels
    mean = (with_op.assign(w=with_op.dur * with_op.f).groupby("name")[["w", "dur"]].sum()
            .pipe(lambda g: g.w / g.dur))
    expect = backlog["name"].map(mean).fillna(1.0).clip(upper=1.0)
    assert len(backlog) > 0, "the fp32 trace starts with a warm-up backlog"
    np.testing.assert_allclose(backlog["f"].to_numpy(), expect.to_numpy(), rtol=1e-12)
    moved = int((expect < 1.0).sum())
    assert moved > 0
    assert f"{moved} kernels launched before the recording began" in note
