"""`traceprobe profile`: outlier steps, time windows labelled downstream, a second main.py,
a slow optimizer step, and where a crashed script failed.

GIVEN step timings with one step 15x the others, a trace whose ProfilerSteps carry the time
window mark, an output folder that holds a run already, an optimizer step begun but not ended
when the fallback timer fires, and scripts that raise, WHEN each is handled, THEN the outlier
is flagged with the median and left out of the ratio, the report says the steps are time
windows, the run goes to main-2, no fallback to windows happens, and the message names the
script's line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tracebuild import TraceBuilder
from traceprobe import report as rp
from traceprobe.load import load
from traceprobe.record.profile import summary
from traceprobe.record.profile import target as tgt
from traceprobe.record.profile.job import free_name
from traceprobe.record.profile.session import outliers, timing
from traceprobe.record.registry import Schedule

ROOT = Path(__file__).resolve().parents[2]


def _rows(walls: list[tuple[str, float]]) -> list[dict]:  # type: ignore[type-arg]
    return [{"index": i, "phase": p, "wall_s": w} for i, (p, w) in enumerate(walls)]


def test_an_outlier_step_is_flagged_with_the_median_and_left_out_of_the_ratio() -> None:
    # steps of 42, 46 (recorded) and 715 ms among unprofiled ones of 40 and 44 ms
    rows = _rows([("wait", 0.050), ("wait", 0.040), ("wait", 0.044), ("active", 0.042),
                  ("active", 0.046), ("active", 0.715)])
    out = outliers(rows)
    assert [o["index"] for o in out] == [5]
    med = sorted(r["wall_s"] for r in rows)[2:4]
    assert out[0]["median_s"] == pytest.approx(sum(med) / 2)  # median of all six steps
    assert out[0]["times_median"] == pytest.approx(0.715 / out[0]["median_s"])
    stepper = SimpleNamespace(started_at=0.0, stopped_at=1.0, transitions_s=lambda: 0.0,
                              host_issue_s=lambda: [])
    t = timing(stepper, rows, 0.0, 1.0)  # type: ignore[arg-type]
    # the ratio of medians of the usual steps: recorded 42, 46 -> 44; unprofiled (wait, not
    # #0) 40, 44 -> 42; the 715 ms step would have made it 46 / 42 -> 1.10 with, not 0.05
    assert t["step_overhead"] == pytest.approx(0.044 / 0.042)
    assert t["step_overhead_of"] == [2, 2]
    [line] = summary.outlier_lines(t["outlier_steps"])
    assert line.startswith("  Outlier step: #5 (active) took 715 ms, ")
    assert f"the median step ({out[0]['median_s'] * 1000:.1f} ms)" in line
    assert outliers(_rows([("active", 0.01), ("active", 0.011), ("active", 0.012)])) == []


def test_time_windows_are_labelled_in_every_report(tmp_path: Path) -> None:
    t = TraceBuilder()
    for n, ts in ((1, 0), (2, 1000)):
        t.step(n, ts, 1000)
        t.cpu("user_annotation", "traceprobe.time_window: 1000 ms", ts + 1, 0)
        t.op("aten::mm", ts + 10, 100)
    marked = rp.analyze(load(t.write(tmp_path / "w.json")), step="all")
    [note] = [w for w in marked.warnings if "time windows" in w]
    assert note.startswith("the ProfilerStep#N of this trace are time windows of 1000 ms")
    assert note in marked.to_dict()["warnings"]
    plain = TraceBuilder()
    plain.step(1, 0, 1000)
    plain.op("aten::mm", 10, 100)
    assert not rp.analyze(load(plain.write(tmp_path / "p.json"))).warnings


def test_a_second_main_py_gets_a_numbered_sibling(tmp_path: Path) -> None:
    assert free_name(tmp_path, "main") == "main"
    (tmp_path / "main").mkdir()
    assert free_name(tmp_path, "main") == "main-2"
    (tmp_path / "main-2").mkdir()
    assert free_name(tmp_path, "main") == "main-3"


def test_a_named_run_that_exists_is_refused_with_the_way_out(tmp_path: Path) -> None:
    script = tmp_path / "main.py"
    script.write_text("print('hi')\n")
    (tmp_path / "out" / "main").mkdir(parents=True)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "traceprobe.cli", "profile", "-o",
                        str(tmp_path / "out"), "--name", "main", "--", str(script)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=120)
    assert r.returncode == 4
    assert r.stderr.strip().endswith("; or choose another --name")


CRASH = """
def load_batch(i):
    raise RuntimeError(f"corrupt sample {i}")

for i in range(3):
    load_batch(i)
"""


def test_failed_at_names_the_scripts_own_line(tmp_path: Path) -> None:
    script = tmp_path / "crash.py"
    script.write_text(CRASH)
    target = tgt.Target("script", str(script), ())
    ended = tgt.run(target)
    assert ended.status == 1
    where = tgt.failed_at(target, ended.error)
    assert where == "RuntimeError: corrupt sample 0 at crash.py:3 in load_batch"
    assert tgt.failed_at(target, None) is None
    res = {"exit_status": 1, "boundaries": 0, "step_source": "optimizer", "failed_at": where}
    text = summary.no_trace(target, res, Schedule(3, 2, 3, 1))
    assert "failed (exit status 1) after 0 optimizer steps, before the first recorded step" \
        in text
    assert where in text and "--wait" not in text  # no advice to shorten the schedule
    ok = {**res, "exit_status": 0, "failed_at": None}
    assert "lower them" in summary.no_trace(target, ok, Schedule(3, 2, 3, 1))


def test_a_slow_first_optimizer_step_is_not_no_optimizer() -> None:
    pytest.importorskip("torch")
    from traceprobe.record.profile.steps import OPTIMIZER, StepOptions, Stepper

    st = Stepper(StepOptions(window_after_s=30.0), lambda prof: None, Path(os.devnull))
    assert st.mode == OPTIMIZER
    st._optimizer_began(None, (), {})  # an LBFGS step has begun, not ended, when time is up
    st._alarm(0, None)
    assert (st.mode, st.fell_back, st.started_at) == (OPTIMIZER, False, None)
