"""Real third-party traces (../shared/corpus/hta) load, pass check(), and agree
with figures computed independently here with plain ``json`` + ``gzip`` + ``Decimal``.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from decimal import Decimal
from pathlib import Path

import pytest

from traceprobe.load import pipeline as loader

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpus" / "hta"
FILES = sorted(CORPUS.glob("*.json.gz")) if CORPUS.is_dir() else []
GPU_CATS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}

pytestmark = pytest.mark.skipif(
    not FILES, reason=f"third-party trace corpus not found at {CORPUS} (a user's checkout)"
)


def corpus(name: str) -> Path:
    return CORPUS / name


def plain(path: Path) -> dict:
    """The trace as plain json, numbers with a fraction as exact Decimals."""
    with gzip.open(path, "rt") as f:
        return json.load(f, parse_float=Decimal)


def ns(v) -> int:
    return int(Decimal(v) * 1000)  # corpus values have at most 3 fraction digits


@pytest.fixture(scope="module", params=FILES, ids=lambda p: p.name[:40])
def loaded(request):
    return request.param, loader.load(request.param), plain(request.param)


def test_every_trace_loads_and_passes_check(loaded):
    _, tl, doc = loaded
    tl.check()
    assert tl.meta.event_count == len(doc["traceEvents"])
    assert tl.meta.schema_version == doc.get("schemaVersion")


def test_gpu_rows_per_device_and_kind_match_a_plain_count(loaded):
    # GIVEN the JSON counted by a simple loop WHEN compared to the gpu frame THEN equal
    _, tl, doc = loaded
    want = Counter()
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") in GPU_CATS:
            a = e.get("args", {})
            want[(GPU_CATS[e["cat"]], a.get("device", e["pid"]))] += 1
    got = Counter({k: int(v) for k, v in tl.gpu.groupby(["kind", "device"]).size().items()})
    assert got == want


def test_gpu_and_cpu_times_match_a_decimal_sum(loaded):
    _, tl, doc = loaded
    gpu_dur = cpu_dur = cpu_start = 0
    for e in doc["traceEvents"]:
        if e.get("ph") != "X":
            continue
        if e["cat"] in GPU_CATS:
            gpu_dur += ns(e.get("dur", 0))
        elif e["cat"] not in ("gpu_user_annotation", "Trace"):
            cpu_dur += ns(e.get("dur", 0))
            cpu_start += ns(e["ts"])
    assert int((tl.gpu["end"] - tl.gpu["start"]).sum()) == gpu_dur
    assert int((tl.cpu["end"] - tl.cpu["start"]).sum()) == cpu_dur
    assert sum(tl.cpu["start"].tolist()) == cpu_start


def test_copies_per_direction_match_the_names(loaded):
    _, tl, doc = loaded
    want = Counter(
        re.match(r"Memcpy (\w+)", e["name"]).group(1)
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "gpu_memcpy"
    )
    assert Counter(tl.copies["copy_kind"].tolist()) == want


def test_steps_match_the_profiler_step_annotations(loaded):
    _, tl, doc = loaded
    want = sorted(
        {
            int(e["name"].split("#")[1])
            for e in doc["traceEvents"]
            if e.get("ph") == "X"
            and e.get("cat") == "user_annotation"
            and e["name"].startswith("ProfilerStep#")
        }
    )
    assert tl.steps["step"].tolist() == want


def test_rank_and_format(loaded):
    path, tl, doc = loaded
    dist = doc.get("distributedInfo", {})
    assert tl.meta.rank == dist.get("rank")
    assert tl.meta.world_size == dist.get("world_size")
    fmt = {"amd_trace": "rocm", "cpu_only": "cpu-only"}
    assert tl.meta.format == next((v for k, v in fmt.items() if path.name.startswith(k)), "kineto")


# --------------------------------------------------------------------------- spot checks


def test_ns_resolution_trace_keeps_every_nanosecond():
    # GIVEN the trace with nanosecond fractions; its first event is written 1712195495519689.047
    tl = loader.load(corpus("ns_resolution_trace_rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"))
    first = tl.cpu.iloc[0]
    assert (first["name"], first["start"], first["end"]) == (
        "autograd::engine::evaluate_function: DivBackward1",
        1712195495519689047,
        1712195495519689047 + 63_813,
    )
    assert tl.meta.extra["display_time_unit"] == "ns"


def test_nccl_trace_flags_its_communication_kernels():
    path = corpus("nccl_parser_config_nccl_data.json.gz")
    doc = plain(path)
    want = sum(
        1
        for e in doc["traceEvents"]
        if e.get("ph") == "X" and e.get("cat") == "kernel" and "nccl" in e["name"].lower()
    )
    tl = loader.load(path)
    assert want > 0
    assert int(tl.gpu["comm"].sum()) == want
    assert (tl.meta.rank, tl.meta.world_size, tl.meta.backend) == (0, 2, "nccl")


def test_amd_trace():
    tl = loader.load(corpus("amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    assert tl.meta.format == "rocm"
    assert tl.devices == [2]
    assert tl.meta.device_name(2) == "AMD Radeon Graphics"
    copies = tl.copies
    assert copies["copy_kind"].tolist() == ["HtoD", "HtoD"]
    assert copies["src_kind"].tolist() == ["Host", "Host"]
    assert (copies["bytes"] > 0).all()  # taken from the hipMemcpyWithStream calls' "size"
    assert tl.meta.extra["skipped"] == {"gpu_user_annotation": 2, "Trace": 1}


def test_df_index_resolver_figures():
    tl = loader.load(corpus("df_index_resolver_df_index_resolver.json.gz"))
    assert (len(tl.kernels), len(tl.copies), len(tl.memsets)) == (19370, 2040, 880)
    assert tl.devices == [1]
    assert sorted(tl.gpu["stream"].unique().tolist()) == [7, 14]
    assert tl.steps["step"].tolist() == [2, 3, 4, 5, 6]


def test_two_ranks_of_one_job_load_together():
    paths = [
        corpus("trace_filter_sampled_rank-0.json.gz"),
        corpus("trace_filter_sampled_rank-1.json.gz"),
    ]
    tls = loader.load_many(paths, jobs=2)
    assert [(tl.meta.rank, tl.devices) for tl in tls] == [(0, [0]), (1, [1])]
    assert [tl.gpu["stream"].nunique() for tl in tls] == [5, 5]


# --------------------------------------------------------------------------- memory


def test_a_large_trace_is_decoded_in_batches():
    # GIVEN the largest corpus trace (53.7 MB of JSON) WHEN its events are read
    from traceprobe.load.read import read_events

    sizes = [
        len(batch) for batch in read_events(corpus("df_index_resolver_df_index_resolver.json.gz"))
    ]
    # THEN they arrive in many small batches, never as one 216k-event list
    assert sum(sizes) == 216_092
    assert len(sizes) >= 20 and max(sizes) < 20_000


@pytest.mark.slow
def test_loading_never_holds_the_whole_json_text():
    # GIVEN a 25.8 MB (raw) trace WHEN loaded under tracemalloc
    import tracemalloc

    path = corpus("negative_queue_length_values_check_rank0.json.gz")
    raw = 25_762_803
    tracemalloc.start()
    try:
        tl = loader.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # THEN the Python-side peak (about 15 MB) stays under the size of the JSON text itself;
    # decoding it whole would take the text plus about twice as much again for the structs
    assert len(tl.gpu) == 7747
    assert peak < raw, f"peak {peak / 2**20:.1f} MB"
