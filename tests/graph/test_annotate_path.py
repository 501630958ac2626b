"""`traceprobe annotate` adds the critical path as a track."""

from __future__ import annotations

import gzip
import json

from tiny import Trace

from traceprobe.annotate import PATH_PROCESS, annotate_file


def test_annotate_has_the_critical_path_track(tmp_path):
    t = Trace().step(1, 0, 115).launch("big", 0, 10, 100)
    t.call("cudaDeviceSynchronize", 20, 92)
    src = tmp_path / "t.json"
    src.write_text(json.dumps({"traceEvents": t.events}))
    out = tmp_path / "t.annotated.json.gz"
    annotate_file(src, out)
    events = json.loads(gzip.decompress(out.read_bytes()))["traceEvents"]
    (pid,) = [e["pid"] for e in events
              if e.get("ph") == "M" and e["name"] == "process_name"
              and e["args"]["name"] == PATH_PROCESS]
    path = sorted((e for e in events if e.get("ph") == "X" and e["pid"] == pid),
                  key=lambda e: e["ts"])
    # the whole trace (0..115 µs): launch latency, the kernel, the wait, the host's tail
    assert [e["name"] for e in path] == [
        "runtime: launch latency of big", "kernel: big",
        "sync_wait: cudaDeviceSynchronize", "python: Python (untraced)"]
    assert [(e["ts"], e["dur"]) for e in path] == [(0, 10), (10, 100), (110, 2), (112, 3)]
    assert all(e["args"]["kind"] in e["name"] for e in path)
