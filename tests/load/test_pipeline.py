"""Loading: formats, exact timestamps, devices, steps, directories, parallel loads.

Tiny hand-built traces with exact expected values, GIVEN / WHEN / THEN.
"""

from __future__ import annotations

import gzip
import json
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hyp import examples
from tracebuild import TraceBuilder
from traceprobe.errors import TraceError
from traceprobe.load import pipeline as kineto
from traceprobe.load import pipeline as loader
from traceprobe.load.read import EventStream, decode_document, us_to_ns
from traceprobe.report import check


def write_text(path: Path, text: str, gz: bool = False) -> Path:
    data = text.encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def rows(df, *cols):
    return [tuple(r) for r in df[list(cols)].itertuples(index=False)]


# --------------------------------------------------------------------------- current format


def test_current_format_gives_exact_frames(tmp_path):
    # GIVEN a current Kineto trace: a launch, a copy, a memset on another device, an op, a step
    t = TraceBuilder(
        distributedInfo={"rank": 1, "world_size": 2, "backend": "nccl"},
        baseTimeNanoseconds=1700000000000000000,
        traceName="t.json",
    )
    t.device_properties(0, 1)
    _, k = t.launch("gemm", cpu_ts=0, cpu_dur=5, gpu_ts=10, gpu_dur=20, device=0, stream=7)
    t.memcpy(
        "Memcpy HtoD (Pageable -> Device)",
        ts=40,
        dur=10,
        device=0,
        stream=20,
        bytes=4096,
        **{"External id": 77},
    )
    t.memset(ts=60, dur=1.5, device=1, stream=7, bytes=64)
    t.op("aten::mm", ts=-1, dur=8, **{"External id": 5})
    t.step(1, ts=-2, dur=100)
    t.add(ph="i", name="instant", pid=1, tid=1, ts=3)
    t.add(ph="M", name="process_name", pid=0, tid=0, args={"name": "python"})
    path = t.write(tmp_path / "t.json")

    # WHEN it is loaded
    tl = loader.load(path)

    # THEN every GPU row has exact integer-ns times and parsed copy fields
    tl.check()
    corr = k["args"]["correlation"]
    assert rows(tl.gpu, "kind", "name", "device", "stream", "start", "end", "correlation") == [
        ("kernel", "gemm", 0, 7, 10_000, 30_000, corr),
        ("memcpy", "Memcpy HtoD (Pageable -> Device)", 0, 20, 40_000, 50_000, corr + 1),
        ("memset", "Memset (Device)", 1, 7, 60_000, 61_500, corr + 2),
    ]
    assert rows(
        tl.gpu, "bytes", "copy_kind", "src_kind", "dst_kind", "peer", "comm", "external_id"
    ) == [
        (-1, "", "", "", -1, False, -1),
        (4096, "HtoD", "Pageable", "Device", -1, False, 77),
        (64, "", "", "", -1, False, -1),
    ]
    assert rows(
        tl.cpu, "kind", "name", "pid", "tid", "start", "end", "correlation", "external_id"
    ) == [
        ("cuda_runtime", "cudaLaunchKernel", 1000, 1000, 0, 5_000, corr, -1),
        ("cpu_op", "aten::mm", 1000, 1000, -1_000, 7_000, -1, 5),
        ("user_annotation", "ProfilerStep#1", 1000, 1000, -2_000, 98_000, -1, -1),
    ]
    assert rows(tl.steps, "step", "start", "end") == [(1, -2_000, 98_000)]
    assert tl.devices == [0, 1]
    m = tl.meta
    assert (m.source, m.format, m.rank, m.world_size, m.backend) == (
        str(path),
        "kineto",
        1,
        2,
        "nccl",
    )
    assert (m.base_time_ns, m.schema_version, m.trace_name, m.event_count) == (
        1700000000000000000,
        1,
        "t.json",
        8,
    )
    assert m.device_name(1) == "NVIDIA H200"
    assert m.extra["complete_events"] == 6
    assert str(tl.gpu["name"].dtype) == "object" and str(tl.cpu["kind"].dtype) == "object"


def test_sparse_args_take_device_from_pid_and_stream_from_tid():
    # GIVEN GPU events without args.device / args.stream
    tl = kineto.from_events(
        [
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 3, "tid": 12, "ts": 1, "dur": 1},
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "pid": "GPU 2",
                "tid": "stream 5",
                "ts": 2,
                "dur": 1,
                "args": {"correlation": 4},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "pid": 9,
                "tid": 9,
                "ts": 3,
                "dur": 1,
                "args": {"device": 1, "stream": 20},
            },
        ]
    )
    # THEN device falls back to the pid's number, stream to the tid's
    assert rows(tl.gpu, "device", "stream", "correlation") == [(3, 12, -1), (2, 5, 4), (1, 20, -1)]


def test_missing_dur_is_zero_and_negative_dur_is_clamped():
    tl = kineto.from_events(
        [
            {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 5},
            {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 9, "dur": -2},
        ]
    )
    assert rows(tl.gpu, "start", "end") == [(5_000, 5_000), (9_000, 9_000)]
    assert tl.meta.extra["clamped_durations"] == 1
    tl.check()


def test_gpu_user_annotation_and_profiler_span_get_no_rows():
    # GIVEN a GPU-side annotation and the profiler's own "Trace" span
    tl = kineto.from_events(
        [
            {
                "ph": "X",
                "cat": "gpu_user_annotation",
                "name": "ProfilerStep#1",
                "pid": 0,
                "tid": 7,
                "ts": 0,
                "dur": 100,
            },
            {
                "ph": "X",
                "cat": "Trace",
                "name": "PyTorch Profiler (0)",
                "pid": "Spans",
                "tid": "PyTorch Profiler",
                "ts": -50,
                "dur": 500,
            },
            {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5},
        ]
    )
    # THEN only the kernel is a row; the others are counted, and no step is taken from the GPU
    assert len(tl.gpu) == 1 and tl.cpu.empty and tl.steps.empty
    assert tl.meta.extra["skipped"] == {"gpu_user_annotation": 1, "Trace": 1}
    assert tl.meta.extra["profiler_span_ns"] == [-50_000, 450_000]


def test_cpu_only_trace():
    tl = kineto.from_events(
        [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 0, "dur": 3}]
    )
    assert tl.meta.format == "cpu-only" and tl.gpu.empty and tl.devices == []
    tl.check()


def test_empty_event_list_is_a_valid_empty_trace():
    tl = kineto.from_document({"traceEvents": []})
    assert tl.gpu.empty and tl.cpu.empty and tl.steps.empty and tl.span is None
    assert tl.meta.event_count == 0
    tl.check()


def test_string_tids_are_ints_or_stable_hashes():
    tl = kineto.from_events(
        [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "a",
                "pid": "1234",
                "tid": "456",
                "ts": 0,
                "dur": 1,
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "b",
                "pid": 1234,
                "tid": "main thread",
                "ts": 1,
                "dur": 1,
            },
        ]
    )
    assert tl.cpu["pid"].tolist() == [1234, 1234]
    hashed = tl.cpu["tid"].tolist()[1]
    assert tl.cpu["tid"].tolist()[0] == 456 and hashed >= 2**32
    again = kineto.from_events(
        [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "b",
                "pid": 1,
                "tid": "main thread",
                "ts": 1,
                "dur": 1,
            }
        ]
    )
    assert again.cpu["tid"].tolist() == [hashed]


# --------------------------------------------------------------------------- 2021 format

TRACE_2021 = """{
  "schemaVersion": 1,
  "traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#3", "pid": 13721, "tid": "123",
   "ts": 50, "dur": 400, "args": {"Input Dims": [], "External id": 1, "Device": 13721}},
  {"ph": "X", "cat": "Operator", "name": "aten::mm", "pid": 13721, "tid": "456",
   "ts": 340, "dur": 70, "args": {"External id": 4}},
  {"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 13721, "tid": "456",
   "ts": 360, "dur": 20, "args": {"correlation": 334, "external id": 4}},
  {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
   "tid": "stream 7", "ts": 405, "dur": 10,
   "args": {"stream": 7, "correlation": 334, "external id": 4}},
  {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 1, "tid": "stream 9",
   "ts": 420, "dur": 5, "args": {"correlation": 335}},
  {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7",
   "ts": 430, "dur": 5, "args": {}}
  ]
}"""


def test_2021_format(tmp_path):
    # GIVEN a 2021-style trace: old category names, "stream N" tids, sparse args
    path = write_text(tmp_path / "old.pt.trace.json", TRACE_2021)
    # WHEN it is loaded
    tl = loader.load(path)
    # THEN categories are renamed, device comes from pid and stream from tid
    tl.check()
    assert tl.meta.format == "kineto-2021"
    assert rows(
        tl.gpu,
        "kind",
        "device",
        "stream",
        "start",
        "end",
        "correlation",
        "external_id",
        "copy_kind",
    ) == [
        ("memcpy", 0, 7, 405_000, 415_000, 334, 4, "HtoD"),
        ("kernel", 1, 9, 420_000, 425_000, 335, -1, ""),
        ("memset", 0, 7, 430_000, 435_000, -1, -1, ""),
    ]
    assert rows(tl.cpu, "kind", "tid", "correlation", "external_id") == [
        ("cpu_op", 123, -1, 1),
        ("cpu_op", 456, -1, 4),
        ("cuda_runtime", 456, 334, 4),
    ]
    assert rows(tl.steps, "step", "start", "end") == [(3, 50_000, 450_000)]


# --------------------------------------------------------------------------- ROCm


def test_rocm_trace_reads_copy_direction_and_size_from_hip_calls():
    # GIVEN a ROCm trace: a HIP copy call (size as a string) and its copy without "bytes"
    tl = kineto.from_events(
        [
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "hipMemcpyWithStream",
                "pid": 10,
                "tid": 10,
                "ts": 0,
                "dur": 60,
                "args": {"stream": "0x0", "correlation": 117, "size": "2560", "kind": "1"},
            },
            {
                "ph": "X",
                "cat": "gpu_memcpy",
                "name": "Memcpy HtoD (Host -> Device)",
                "pid": 2,
                "tid": 0,
                "ts": 16,
                "dur": 22,
                "args": {"device": 2, "stream": 0, "correlation": 117, "kind": "HtoD"},
            },
            {
                "ph": "X",
                "cat": "gpu_memcpy",
                "name": "CopyDeviceToHost",
                "pid": 2,
                "tid": 0,
                "ts": 50,
                "dur": 3,
                "args": {"device": 2, "stream": 0, "correlation": 119, "kind": "DtoH", "bytes": 8},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "Cijk_Ailk_Bljk_SB_MT64x64x16",
                "pid": 2,
                "tid": 0,
                "ts": 40,
                "dur": 5,
                "args": {"device": 2, "stream": 0, "correlation": 118},
            },
        ],
        deviceProperties=[{"id": 2, "name": "AMD Instinct MI250X"}],
    )
    # THEN the format is rocm, the copy takes its size from the call and its kinds from the name
    tl.check()
    assert tl.meta.format == "rocm"
    assert rows(
        tl.gpu, "kind", "device", "stream", "bytes", "copy_kind", "src_kind", "dst_kind"
    ) == [
        ("memcpy", 2, 0, 2560, "HtoD", "Host", "Device"),
        ("memcpy", 2, 0, 8, "DtoH", "", ""),
        ("kernel", 2, 0, -1, "", "", ""),
    ]


def test_hip_runtime_names_alone_mark_rocm():
    tl = kineto.from_events(
        [
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "hipLaunchKernel",
                "pid": 1,
                "tid": 1,
                "ts": 0,
                "dur": 1,
                "args": {"correlation": 1},
            },
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "pid": 0,
                "tid": 0,
                "ts": 1,
                "dur": 1,
                "args": {"device": 0, "stream": 0, "correlation": 1},
            },
        ]
    )
    assert tl.meta.format == "rocm"


# --------------------------------------------------------------------------- exact ns

ADJACENT = """{"traceEvents": [
 {"ph": "X", "cat": "kernel", "name": "a", "pid": 0, "tid": 7, "ts": 1712195495519689.046,
  "dur": 0.001, "args": {"device": 0, "stream": 7}},
 {"ph": "X", "cat": "kernel", "name": "b", "pid": 0, "tid": 7, "ts": 1712195495519689.047,
  "dur": 0.001, "args": {"device": 0, "stream": 7}},
 {"ph": "X", "cat": "kernel", "name": "c", "pid": 0, "tid": 7, "ts": 1712195495519689.048,
  "dur": 1.5, "args": {"device": 0, "stream": 7}}
]}"""


def test_adjacent_kernels_at_ns_boundaries_do_not_overlap(tmp_path):
    # GIVEN three back-to-back 1 ns kernels whose µs timestamps float64 cannot tell apart
    assert float("1712195495519689.046") == float("1712195495519689.047")
    path = write_text(tmp_path / "ns.json.gz", ADJACENT, gz=True)
    # WHEN loaded
    tl = loader.load(path)
    # THEN starts and ends are exact to the ns and each ends where the next begins
    assert rows(tl.gpu, "name", "start", "end") == [
        ("a", 1712195495519689046, 1712195495519689047),
        ("b", 1712195495519689047, 1712195495519689048),
        ("c", 1712195495519689048, 1712195495519690548),
    ]
    s, e = tl.gpu["start"].to_numpy(), tl.gpu["end"].to_numpy()
    assert (e[:-1] <= s[1:]).all()


def test_unusual_numbers_convert_exactly():
    # GIVEN timestamps with exponents, signs, sub-ns digits and a quoted number
    doc = (
        '{"traceEvents": ['
        '{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1e3,"dur":2.5E-1},'
        '{"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":-0.0005,"dur":1.0004},'
        '{"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":1,"ts":1.0005,"dur":"3"}]}'
    )
    tl = kineto.build(EventStream([doc.encode()], "<t>"), "<t>")
    # THEN they are ns, rounded half away from zero beyond the ns
    assert rows(tl.cpu, "start", "end") == [(1_000_000, 1_000_250), (-1, 999), (1_001, 4_001)]


@st.composite
def decimal_text(draw):
    sign = draw(st.sampled_from(["", "", "-"]))
    whole = str(draw(st.integers(0, 10**17)))
    frac = draw(st.text("0123456789", max_size=8))
    exp = draw(st.one_of(st.just(""), st.builds(lambda e: f"e{e}", st.integers(-9, 4))))
    return f"{sign}{whole}{'.' + frac if frac else ''}{exp}"


def expected_ns(text: str) -> tuple[int, int]:
    v = int((Decimal(text) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))
    return (v, 0) if -(2**63) < v < 2**63 else (0, 2)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(decimal_text(), min_size=1, max_size=40))
def test_us_to_ns_matches_decimal(texts):
    # GIVEN random decimal strings WHEN converted in one batch THEN each equals Decimal's answer
    ns, status = us_to_ns([t.encode() for t in texts])
    assert list(zip(ns.tolist(), status.tolist(), strict=True)) == [expected_ns(t) for t in texts]


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, (2**63 - 1) // 1000 - 1), st.integers(0, 999)),
        min_size=1,
        max_size=30,
    )
)
def test_us_to_ns_is_exact_for_kineto_style_values(values):
    texts = [f"{w}.{f:03d}" for w, f in values]
    ns, status = us_to_ns([t.encode() for t in texts])
    assert not status.any()
    assert ns.tolist() == [w * 1000 + f for w, f in values]


def test_us_to_ns_reports_absent_and_junk():
    ns, status = us_to_ns([b"", b"null", b"true", b'"x"', b"{}", b"12"])
    assert status.tolist() == [1, 1, 2, 2, 2, 0] and ns.tolist()[-1] == 12_000


# --------------------------------------------------------------------------- copies, comm


def test_peer_to_peer_copy_belongs_to_its_source_device():
    # GIVEN P2P copies that name fromDevice/toDevice and no "device" (as Kineto writes them)
    tl = kineto.from_events(
        [
            {
                "ph": "X",
                "cat": "gpu_memcpy",
                "name": "Memcpy PtoP (Device -> Device)",
                "pid": 1,
                "tid": 30,
                "ts": 0,
                "dur": 10,
                "args": {
                    "fromDevice": 1,
                    "inDevice": 1,
                    "toDevice": 3,
                    "stream": 30,
                    "correlation": 9,
                    "bytes": 1048576,
                },
            },
            {
                "ph": "X",
                "cat": "gpu_memcpy",
                "name": "Memcpy PtoP (Device -> Device)",
                "pid": 3,
                "tid": 31,
                "ts": 5,
                "dur": 10,
                "args": {"fromDevice": 0, "inDevice": 3, "toDevice": 3, "stream": 31},
            },
            {
                "ph": "X",
                "cat": "gpu_memcpy",
                "name": "Memcpy DtoD (Device -> Device)",
                "pid": 2,
                "tid": 7,
                "ts": 5,
                "dur": 10,
                "args": {"device": 2, "stream": 7},
            },
        ]
    )
    # THEN each is attributed to fromDevice, with the other end as peer
    assert rows(tl.gpu, "device", "peer", "copy_kind", "src_kind", "dst_kind", "bytes") == [
        (1, 3, "PtoP", "Device", "Device", 1048576),
        (0, 3, "PtoP", "Device", "Device", -1),
        (2, -1, "DtoD", "Device", "Device", -1),
    ]


def test_comm_flag_marks_nccl_and_rccl_kernels_only():
    names = [
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "RCCLKernel_x",
        "void gemm<float>",
        "ncclKernel_SendRecv",
    ]
    events = [
        {"ph": "X", "cat": "kernel", "name": n, "pid": 0, "tid": 7, "ts": i, "dur": 1}
        for i, n in enumerate(names)
    ]
    events.append(
        {
            "ph": "X",
            "cat": "gpu_memcpy",
            "name": "nccl copy Memcpy DtoD",
            "pid": 0,
            "tid": 7,
            "ts": 9,
            "dur": 1,
        }
    )
    tl = kineto.from_events(events)
    assert tl.gpu["comm"].tolist() == [True, True, False, True, False]
    assert str(tl.gpu["comm"].dtype) == "bool"


# --------------------------------------------------------------------------- steps


def test_steps_come_from_the_busiest_thread_without_duplicates():
    # GIVEN ProfilerStep annotations on two threads, one repeated, one overlapping its successor
    def step(n, ts, dur, tid=1, cat="user_annotation"):
        return {
            "ph": "X",
            "cat": cat,
            "name": f"ProfilerStep#{n}",
            "pid": 1,
            "tid": tid,
            "ts": ts,
            "dur": dur,
        }

    tl = kineto.from_events(
        [
            step(6, 100, 50),
            step(5, 0, 110),  # runs past step 6's start
            step(5, 0, 110),  # duplicate
            step(7, 150, 10),
            step(5, 0, 500, tid=2),
            step(9, 0, 1000, cat="gpu_user_annotation"),
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": "ProfilerStep#x",
                "pid": 1,
                "tid": 1,
                "ts": 0,
                "dur": 1,
            },
        ]
    )
    # THEN thread 1 is used, step 5 appears once and is cut at step 6's start
    assert rows(tl.steps, "step", "start", "end") == [
        (5, 0, 100_000),
        (6, 100_000, 150_000),
        (7, 150_000, 160_000),
    ]
    assert tl.meta.extra["steps_thread"] == [1, 1]
    tl.check()


def test_steps_from_cpu_op_in_older_traces():
    tl = kineto.from_events(
        [
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "ProfilerStep#2",
                "pid": 1,
                "tid": 1,
                "ts": 10,
                "dur": 5,
            },
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "ProfilerStep#1",
                "pid": 1,
                "tid": 1,
                "ts": 0,
                "dur": 5,
            },
        ]
    )
    assert rows(tl.steps, "step", "start", "end") == [(1, 0, 5_000), (2, 10_000, 15_000)]


# --------------------------------------------------------------------------- documents


def test_bare_event_list_is_a_valid_trace(tmp_path):
    path = write_text(
        tmp_path / "list.json",
        '[{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2}]',
    )
    tl = loader.load(path)
    assert rows(tl.gpu, "name", "start", "end") == [("k", 1_000, 3_000)]


def test_from_document_and_from_events_agree_with_a_file(tmp_path):
    t = TraceBuilder()
    t.launch("k", cpu_ts=0, cpu_dur=1, gpu_ts=2, gpu_dur=3)
    t.step(1, ts=0, dur=10)
    from_file = loader.load(t.write(tmp_path / "t.json"))
    from_doc = kineto.from_document(t.document())
    from_list = kineto.from_events(t.events, **t.top)
    for other in (from_doc, from_list):
        for name in ("gpu", "cpu", "steps"):
            assert getattr(other, name).equals(getattr(from_file, name))
    assert from_doc.source == "<memory>"


def test_decimal_timestamps_in_python_documents_stay_exact():
    tl = kineto.from_events(
        [
            {
                "ph": "X",
                "cat": "kernel",
                "name": "k",
                "pid": 0,
                "tid": 7,
                "ts": Decimal("1712195495519689.047"),
                "dur": Decimal("0.001"),
            }
        ]
    )
    assert rows(tl.gpu, "start", "end") == [(1712195495519689047, 1712195495519689048)]


def test_from_document_rejects_what_json_cannot_hold():
    with pytest.raises(TraceError, match="cannot encode"):
        kineto.from_document({"traceEvents": [{"ts": object()}]})


# --------------------------------------------------------------------------- streaming

TRICKY_EVENTS = [
    {
        "ph": "X",
        "cat": "cpu_op",
        "name": 'a}, {"b"',
        "pid": 1,
        "tid": 1,
        "ts": 1,
        "dur": 1,
        "args": {"nested": [{"x": 1}, {"y": [{"z": "}, {"}]}], "External id": 3},
    },
    {
        "ph": "X",
        "cat": "kernel",
        "name": 'k\\"}, {',
        "pid": 0,
        "tid": 7,
        "ts": 2.5,
        "dur": 1,
        "args": {"device": 0, "stream": 7, "grid": [1, 1, 1]},
    },
    {"ph": "f", "id": 1, "pid": 0, "tid": 7, "ts": 2, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {
        "ph": "X",
        "cat": "user_annotation",
        "name": "ProfilerStep#4",
        "pid": 1,
        "tid": 1,
        "ts": 0,
        "dur": 9,
    },
] * 5


@pytest.mark.parametrize("chunk", [1, 7, 64, 100_000])
@pytest.mark.parametrize("batch_bytes", [1, 40, 300, 10**6])
def test_batches_give_the_same_timeline_as_one_decode(chunk, batch_bytes):
    # GIVEN a trace with "}, {" inside strings and nested arrays of objects, and keys
    # both before and after traceEvents
    doc = {
        "schemaVersion": 1,
        "distributedInfo": {"rank": 3},
        "traceEvents": TRICKY_EVENTS,
        "traceName": "after.json",
        "baseTimeNanoseconds": 17,
    }
    data = json.dumps(doc, indent=1).encode()
    whole = kineto.from_document(doc)
    # WHEN the text arrives in small chunks and is decoded in small batches
    pieces = [data[i : i + chunk] for i in range(0, len(data), chunk)]
    stream = EventStream(pieces, "<memory>", batch_bytes=batch_bytes)
    tl = kineto.build(stream, "<memory>")
    # THEN the result equals the one-shot decode, metadata included
    for name in ("gpu", "cpu", "steps"):
        assert getattr(tl, name).equals(getattr(whole, name))
    assert (tl.meta.rank, tl.meta.trace_name, tl.meta.base_time_ns, tl.meta.event_count) == (
        3,
        "after.json",
        17,
        20,
    )
    assert tl.cpu["name"].tolist()[0] == 'a}, {"b"'
    assert tl.cpu["external_id"].tolist()[0] == 3


def test_whole_document_decode_matches_stream():
    data = json.dumps({"traceEvents": TRICKY_EVENTS}).encode()
    doc = decode_document(data, "<t>")
    assert len(doc.traceEvents) == len(TRICKY_EVENTS)


# --------------------------------------------------------------------------- files and dirs


def small_trace(device: int = 0, rank: int = 0) -> TraceBuilder:
    t = TraceBuilder(distributedInfo={"rank": rank, "world_size": 4})
    t.launch(f"k{rank}", cpu_ts=0, cpu_dur=1, gpu_ts=2, gpu_dur=3, device=device)
    return t


def test_gzip_is_detected_by_content_not_name(tmp_path):
    # GIVEN the same trace as .json, .json.gz, gzip under a .json name and text under .gz
    data = json.dumps(small_trace().document()).encode()
    paths = [
        tmp_path / "a.json",
        tmp_path / "b.json.gz",
        tmp_path / "c.json",
        tmp_path / "d.json.gz",
    ]
    paths[0].write_bytes(data)
    paths[1].write_bytes(gzip.compress(data))
    paths[2].write_bytes(gzip.compress(data))
    paths[3].write_bytes(data)
    # WHEN each is loaded THEN all four give the same frames
    tls = [loader.load(p) for p in paths]
    for tl in tls[1:]:
        assert tl.gpu.equals(tls[0].gpu) and tl.cpu.equals(tls[0].cpu)


def test_find_traces_reads_the_tensorboard_layout(tmp_path):
    # GIVEN tensorboard_trace_handler output under two run folders, plus other files
    (tmp_path / "run1").mkdir()
    (tmp_path / "run2" / "plugins" / "profile").mkdir(parents=True)
    small_trace(rank=0).write(tmp_path / "run1" / "host_2.10.pt.trace.json.gz")
    small_trace(rank=1).write(tmp_path / "run1" / "host_10.9.pt.trace.json")
    small_trace(rank=2).write(tmp_path / "run2" / "plugins" / "profile" / "h.1.pt.trace.json.gz")
    (tmp_path / "run1" / "config.json").write_text("{}")
    (tmp_path / "notes.txt").write_text("x")
    # WHEN the directory is expanded and loaded
    found = loader.find_traces(tmp_path)
    errors: list = []
    with loader.start(tmp_path, jobs=1) as loading:
        tls = loading.result(errors=errors)
    # THEN every *.json[.gz] counts, in natural order (none is silently left out)...
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "run1/config.json",
        "run1/host_2.10.pt.trace.json.gz",
        "run1/host_10.9.pt.trace.json",
        "run2/plugins/profile/h.1.pt.trace.json.gz",
    ]
    # ...the one that is no trace is named as such, and the traces load, one Timeline each
    [err] = errors
    assert err.path == str(tmp_path / "run1" / "config.json") and "traceEvents" in err.problem
    assert [tl.meta.rank for tl in tls] == [0, 1, 2]
    assert [tl.source for tl in tls] == [str(p) for p in found[1:]]


def test_rank_files_in_a_directory_load_in_natural_order(tmp_path):
    for rank in (10, 2, 0, 1):
        suffix = ".json.gz" if rank % 2 else ".json"
        small_trace(device=rank % 8, rank=rank).write(tmp_path / f"rank-{rank}{suffix}")
    tls = loader.load_many([tmp_path])
    assert [tl.meta.rank for tl in tls] == [0, 1, 2, 10]
    assert [tl.devices for tl in tls] == [[0], [1], [2], [2]]


def test_several_paths_load_once_each_in_order(tmp_path):
    a = small_trace(rank=5).write(tmp_path / "a.json")
    (tmp_path / "d").mkdir()
    b = small_trace(rank=6).write(tmp_path / "d" / "b.json")
    tls = loader.load_many([b, a, tmp_path / "d", str(a)], jobs=1)
    assert [tl.meta.rank for tl in tls] == [6, 5]


def test_parallel_load_equals_serial_and_shows_progress(tmp_path, capsys):
    paths = [small_trace(rank=r).write(tmp_path / f"r{r}.json.gz") for r in range(3)]
    serial = loader.load_many(paths, jobs=1)
    parallel = loader.load_many(paths, jobs=2, progress=True)
    assert [tl.meta.rank for tl in parallel] == [0, 1, 2]
    for s, p in zip(serial, parallel, strict=True):
        assert s.gpu.equals(p.gpu) and s.cpu.equals(p.cpu) and s.meta == p.meta
    assert "3/3" in capsys.readouterr().err


def test_parallel_load_reports_a_bad_file_as_trace_error(tmp_path):
    good = small_trace().write(tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    with pytest.raises(TraceError, match="bad.json"):
        loader.load_many([good, bad], jobs=2)


def test_load_accepts_a_directory_with_one_trace(tmp_path):
    small_trace(rank=3).write(tmp_path / "only.pt.trace.json")
    assert loader.load(tmp_path).meta.rank == 3
    small_trace(rank=4).write(tmp_path / "second.pt.trace.json")
    with pytest.raises(TraceError, match="load_many"):
        loader.load(tmp_path)


def test_package_exposes_load_and_load_many(tmp_path):
    import traceprobe

    path = small_trace().write(tmp_path / "t.json")
    assert traceprobe.load(path).devices == [0]
    assert len(traceprobe.load_many([path])) == 1


def test_column_dtypes_match_the_contract(tmp_path):
    from traceprobe.timeline import CPU_COLUMNS, GPU_COLUMNS, STEP_COLUMNS

    t = small_trace()
    t.step(1, ts=0, dur=9)
    tl = loader.load(t.write(tmp_path / "t.json"))
    for df, cols in ((tl.gpu, GPU_COLUMNS), (tl.cpu, CPU_COLUMNS), (tl.steps, STEP_COLUMNS)):
        assert {c: str(df[c].dtype) for c in cols} == cols
    assert isinstance(tl.gpu["start"].to_numpy(), np.ndarray)


def test_2021_format_figures_by_hand(tmp_path):
    # GIVEN the 2021-style trace above: GPU 0 copies [405, 415) and sets [430, 435) µs,
    # GPU 1 runs one kernel [420, 425) µs
    from traceprobe.report import analyze

    r = analyze(loader.load(write_text(tmp_path / "old.pt.trace.json", TRACE_2021)))
    check(r)
    d = r.to_dict()
    # THEN busy, kinds and overlaps are exactly the hand-computed ones
    by_dev = {x["device"]: x for x in d["devices"]}
    assert [by_dev[0][k] for k in ("busy_us", "kernel_us", "memcpy_us", "memset_us")] == [
        15.0, 0.0, 10.0, 5.0]
    assert [by_dev[1][k] for k in ("busy_us", "kernel_us", "memcpy_us", "memset_us")] == [
        5.0, 5.0, 0.0, 0.0]
    assert d["overlap"]["cross_device"][0]["overlap_us"] == 0.0  # 420-425 meets neither
    assert d["overlap"]["multi_device_us"] == 0.0
    copy_all = d["overlap"]["copy_compute"][0]
    assert (copy_all["device"], copy_all["memcpy_us"], copy_all["hidden_us"]) == (0, 10.0, 0.0)
    assert d["gpu_span_us"] == 30.0  # 405 -> 435
    assert d["serial"]["serial_us"] == 20.0  # streams: GPU 0 s7 15 + GPU 1 s9 5


@pytest.mark.parametrize("size", [1, 2, 5, 13, 24, 25, 40, 1 << 20])
def test_a_second_trace_events_key_is_seen_across_any_chunk_seam(size):
    """GIVEN a document with two "traceEvents" keys (and one inside a string, which does
    not count) arriving in chunks of ``size`` bytes, so that the keys fall across chunk
    seams at every offset WHEN it is read THEN the duplicate is refused, and one key alone
    is read."""
    from traceprobe.errors import TraceError
    from traceprobe.load.read import EventStream

    ev = '{"ph":"X","cat":"kernel","name":"k \\"traceEvents\\": x","ts":1,"dur":1,"pid":0,"tid":1}'
    for pad in range(0, 30, 7):
        text = ('{"traceEvents": [' + ev + "]," + " " * pad + '"traceEvents": [' + ev + "]}"
                ).encode()
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        with pytest.raises(TraceError, match='"traceEvents" appears 2 times'):
            for _ in EventStream(iter(chunks), "dup.json"):
                pass
        one = ('{"traceEvents": [' + ev + "]," + " " * pad + '"x": 1}').encode()
        stream = EventStream(iter([one[i : i + size] for i in range(0, len(one), size)]), "one")
        assert sum(len(b) for b in stream) == 1
