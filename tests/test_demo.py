"""`make demo` on a machine without a GPU (as CI is): the Makefile's own demo steps, with a
subset of the experiments so that it stays short, run as a user runs them, with the console
(file descriptors 1 and 2 of the whole process tree) captured.

It checks what the user sees: the output ends on the committed GPU verdicts, labelled as
recorded elsewhere with the machine and the date, and no line of torch's own logging (Kineto's
``STAGE:``, the profiler handler's ``USDT: ... profiler_start``) reaches the console; they are in
the variant's ``torch.log`` instead.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "sample_traces" / "verdicts-h200x2.json"
BIN = Path(sys.executable).parent
TORCH_LINE = re.compile(r"USDT:|STAGE:|profiler_start|profiler_stop|Completed Stage")


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    if shutil.which("make") is None or not (BIN / "traceprobe").exists():
        pytest.skip("needs make and the traceprobe command beside this python")
    out = tmp_path_factory.mktemp("demo") / "out"
    r = subprocess.run(
        ["make", "-s", "--no-print-directory", "demo-steps", f"BIN={BIN}", f"OUT={out}",
         "DEMO_RECORD=two-devices"],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},  # as on a machine without a GPU
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out, r.stdout, r.stderr


@pytest.mark.slow
def test_no_torch_log_line_reaches_the_console_and_torch_log_keeps_them(demo) -> None:
    out, stdout, stderr = demo
    leaked = [line for line in (stdout + stderr).splitlines() if TORCH_LINE.search(line)]
    assert leaked == []
    # the lines were diverted, not absent: this torch prints them at the profiler's start/stop
    log = (out / "two-devices" / "parallel" / "torch.log").read_text()
    assert "profiler_start" in log and "profiler_stop" in log


@pytest.mark.slow
def test_the_demo_ends_on_the_committed_gpu_verdicts_labelled_as_recorded_elsewhere(
    demo,
) -> None:
    _, stdout, _ = demo
    ref = json.loads(REFERENCE.read_text())
    meta = json.loads((ROOT / ref["source"] / "two-devices" / "parallel"
                       / "traceprobe.meta.jsonc").read_text())
    lines = stdout.rstrip("\n").splitlines()
    label = next(i for i, line in enumerate(lines) if line.startswith("Recorded elsewhere"))
    assert "not on this machine" in lines[label]
    assert f"{len(ref['machine']['gpus'])} x {ref['machine']['gpus'][0]}" in lines[label]
    assert meta["started"][:10] in lines[label]  # the day the GPU traces were recorded
    # everything after the label's two lines is the committed verdicts, in order, in full
    shown = " ".join(" ".join(lines[label + 2:]).split())
    expected = " ".join(f"{v['workload']}/{v['variant']}: {v['verdict']} {v['why']}"
                        for v in ref["verdicts"])
    assert shown == " ".join(expected.split())
    # and before it, the table puts this run beside them
    table = lines[lines.index("Verdicts side by side"):label]
    row = next(line for line in table if line.lstrip().startswith("two-devices/parallel "))
    here_verdict = "cannot tell on this machine"  # recorded on the CPU: one device only
    assert row.split() == ["two-devices/parallel", *here_verdict.split(), "holds"]
