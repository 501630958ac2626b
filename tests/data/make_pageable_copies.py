"""Writes tests/data/pageable-copies.pt.trace.json.gz: copies into and out of pageable memory.

The committed traces recorded on H200s have pageable copies in one direction only (DtoH into
pageable memory, sample_traces/h200x2/copy/blocking); the third-party corpus, which has more,
is not in every checkout. This small hand-built Kineto trace gives the raw-JSON check of
tests/metrics/test_metrics_corpus.py both directions, pinned ones beside them, on two devices and
several streams, with kernels that hide some copies partly. Rerun to regenerate:

    PYTHONPATH=.:tests python tests/data/make_pageable_copies.py
"""

from __future__ import annotations

from pathlib import Path

from tracebuild import TraceBuilder

T0 = 5_125_146_449_164.516  # a µs clock of the magnitude of the recorded samples


def build() -> TraceBuilder:
    t = TraceBuilder(distributedInfo={"rank": 0, "world_size": 1})
    t.device_properties(0, 1)
    t.step(1, ts=T0, dur=400.5)
    t.op("aten::copy_", ts=T0 + 1, dur=390.25)
    copies = [  # (name, start, duration, device, stream, bytes)
        ("Memcpy HtoD (Pageable -> Device)", 10.125, 20.5, 0, 20, 4096),
        ("Memcpy DtoH (Device -> Pageable)", 40.001, 30.333, 0, 20, 8192),
        ("Memcpy HtoD (Pinned -> Device)", 15.5, 12.25, 0, 21, 2048),
        ("Memcpy DtoH (Device -> Pinned)", 80.75, 5.125, 0, 21, 1024),
        ("Memcpy HtoH (Pageable -> Pinned)", 90.0, 3.5, 0, 22, 512),
        ("Memcpy DtoH (Device -> Pageable)", 120.2, 44.4, 1, 20, 65536),
        ("Memcpy HtoD (Pageable -> Device)", 170.0, 10.0, 1, 21, 16384),
        ("Memcpy DtoD (Device -> Device)", 200.5, 2.25, 1, 7, 256),
    ]
    for name, start, dur, device, stream, size in copies:
        t.runtime("cudaMemcpyAsync", ts=T0 + start - 3, dur=2.5)
        t.memcpy(name, ts=T0 + start, dur=dur, device=device, stream=stream, bytes=size)
    for i, (start, dur, device) in enumerate([(0.5, 25.0, 0), (50.0, 10.0, 0), (130.0, 60.0, 1)]):
        t.launch(f"gemm_{i}", cpu_ts=T0 + start - 2, cpu_dur=1.5, gpu_ts=T0 + start, gpu_dur=dur,
                 device=device)
    return t


if __name__ == "__main__":
    out = Path(__file__).with_name("pageable-copies.pt.trace.json.gz")
    build().write(out)
    print(out)
