"""The Timeline keeps the kernel launch figures, the CPU ops' inputs and a dur_ns column."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

from traceprobe.load import from_document, load

DDP = sorted((Path(__file__).resolve().parents[2] / "sample_traces" / "h200x2" / "ddp" /
              "train").glob("vm_0.*.pt.trace.json.gz"))[0]


def test_kernel_fields_and_input_dims_match_the_raw_json() -> None:
    tl = load(DDP)
    tl.check()
    doc = json.loads(gzip.decompress(DDP.read_bytes()))
    raw_k = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "kernel"]
    k = tl.kernels.sort_values("start", kind="stable")
    raw_k.sort(key=lambda e: e["ts"])
    assert len(k) == len(raw_k)
    for row, e in zip(k.itertuples(), raw_k, strict=True):
        a = e["args"]
        assert json.loads(row.grid) == a["grid"] and json.loads(row.block) == a["block"]
        assert row.registers_per_thread == a["registers per thread"]
        assert row.shared_memory == a["shared memory"]
        assert row.blocks_per_sm == a["blocks per SM"] and row.warps_per_sm == a["warps per SM"]
        assert row.occupancy == a["est. achieved occupancy %"]
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    got = tl.cpu[tl.cpu["kind"] == "cpu_op"]
    want = sorted((e["name"], json.dumps(e["args"].get("Input Dims", None))) for e in ops)
    have = sorted((n, json.dumps(json.loads(d)) if d else "null")
                  for n, d in zip(got["name"], got["input_dims"], strict=True))
    assert have == want
    for df in (tl.gpu, tl.cpu, tl.steps):
        assert (df["dur_ns"] == df["end"] - df["start"]).all()


def test_unknown_fields_and_windows() -> None:
    tl = from_document({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 0, "dur": 10,
         "args": {"device": 0, "stream": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 4,
         "args": {"Input Dims": [[2, 3], [3, 4]], "Input type": ["float", "long int"]}},
    ]})
    k = tl.gpu.iloc[0]
    assert (k["grid"], k["registers_per_thread"], np.isnan(k["occupancy"])) == ("", -1, True)
    op = tl.cpu.iloc[0]
    assert (op["input_dims"], op["input_types"]) == ("[[2,3],[3,4]]", '["float","long int"]')
    w = tl.window(2000, 6000)  # ns: the kernel clipped to [2000, 6000), the op to [2000, 4000)
    w.check()
    assert list(w.gpu["dur_ns"]) == [4000] and list(w.cpu["dur_ns"]) == [2000]
