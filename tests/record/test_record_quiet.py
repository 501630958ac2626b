"""record/quiet.py: what torch's C++ side writes to descriptors 1 and 2 lands in the log; the
progress bar's stream still reaches the console. Run in a child process so that the real
descriptors are captured (an in-process capture would only see Python's streams)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = r"""
import ctypes, os, sys
from pathlib import Path
from traceprobe.record.quiet import console, drop_if_empty, to_log

log = Path(sys.argv[1])
print("before", flush=True)
with console() as out:
    with to_log(log):
        os.write(2, b"USDT: from C, fd 2\n")
        os.write(1, b"STAGE: from C, fd 1\n")
        ctypes.CDLL(None).printf(b"buffered printf from C\n")  # flushed before the switch back
        print("python print inside")
        out.write("bar on the console\n")
    print("after", flush=True)
empty = log.with_name("empty.log")
with to_log(empty):
    pass
drop_if_empty(empty)
print("empty log dropped:", not empty.exists())
"""


def test_c_level_output_goes_to_the_log_and_the_console_stream_to_the_console(
    tmp_path: Path,
) -> None:
    log = tmp_path / "torch.log"
    r = subprocess.run([sys.executable, "-c", CHILD, str(log)], capture_output=True, text=True,
                       cwd=Path(__file__).resolve().parents[2])
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["before", "after", "empty log dropped: True"]
    assert r.stderr == "bar on the console\n"
    assert sorted(log.read_text().splitlines()) == sorted([
        "USDT: from C, fd 2", "STAGE: from C, fd 1", "buffered printf from C",
        "python print inside"])
