"""Renderers (text, Markdown, JSON, CSV) and the atomic output helper.

The reports here are built by hand, following docs/REPORT_SCHEMA.md key for key
(``test_fixture_follows_the_schema`` holds them to it), so these tests need neither
the loader nor the analysis.

Golden snapshots: the text and Markdown renderings of the fixtures are compared
with the files in tests/snapshots/. After an intended change to a renderer (or to
a fixture), regenerate them and review the diff before committing::

    TRACEPROBE_UPDATE_SNAPSHOTS=1 pytest tests/render/test_render.py
"""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import frames  # tests/frames.py
from traceprobe import output
from traceprobe.errors import OutputError, UsageError
from traceprobe.render import as_report, formats, register, render
from traceprobe.render import tables as tb
from traceprobe.render.csv import FILES, write_csv
from traceprobe.render.jsonfmt import as_dict
from traceprobe.timeline import Timeline

NO_LAUNCH = {"grid": "", "block": "", "registers_per_thread": None, "occupancy": None}
SNAPSHOTS = Path(__file__).parents[1] / "snapshots"
SCHEMA_DOC = Path(__file__).parents[2] / "docs" / "REPORT_SCHEMA.md"
UPDATE = os.environ.get("TRACEPROBE_UPDATE_SNAPSHOTS") == "1"

# ----------------------------------------------------------------------------- fixtures
# Two GPUs over a 10 ms window. GPU 0: stream 7 runs kernels (7900.25 µs busy),
# stream 20 copies (1200 µs), 900 µs of the copies under kernels. GPU 1: stream 7,
# kernels only (7600 µs), 1500 µs of them NCCL. The figures agree with each other
# the way the analysis makes them (busy = span - idle, utilization = busy / span,
# fractions = the quotients written next to them).

KERNEL_FILL = (
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, "
    "at::detail::Array<char*, 1>)"
)
KERNEL_NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def make_report() -> dict[str, Any]:
    return {
        "schema": "traceprobe.report/1",
        "trace": "runs/two_gpus.pt.trace.json.gz",
        "format": "kineto",
        "rank": 0,
        "window": {"start_us": 1000.0, "end_us": 11000.0, "step": None, "basis": "steps",
                   "start_ns": 1_000_000, "end_ns": 11_000_000},
        "span_us": 10000.0,
        "gpu_span_us": 9500.0,
        "counts": {"kernels": 220, "memcpys": 8, "memsets": 0, "cpu_ops": 350,
                   "runtime_calls": 240, "steps": 2},
        "devices": [
            {"device": 0, "name": "NVIDIA H200", "busy_us": 8200.5, "kernel_us": 7900.25,
             "memcpy_us": 1200.0, "memset_us": 0.0, "idle_us": 1799.5, "utilization": 0.82005,
             "active_span_us": 9400.0, "kernels": 120, "memcpys": 8, "memsets": 0, "streams": 2},
            {"device": 1, "name": "NVIDIA H200", "busy_us": 7600.0, "kernel_us": 7600.0,
             "memcpy_us": 0.0, "memset_us": 0.0, "idle_us": 2400.0, "utilization": 0.76,
             "active_span_us": 9000.0, "kernels": 100, "memcpys": 0, "memsets": 0, "streams": 1},
        ],
        "streams": [
            {"device": 0, "stream": 7, "busy_us": 7900.25, "kernels": 120, "memcpys": 0,
             "memsets": 0, "kernel_us": 7900.25, "memcpy_us": 0.0, "self_overlap_us": 0.0},
            {"device": 0, "stream": 20, "busy_us": 1200.0, "kernels": 0, "memcpys": 8,
             "memsets": 0, "kernel_us": 0.0, "memcpy_us": 1200.0, "self_overlap_us": 0.0},
            {"device": 1, "stream": 7, "busy_us": 7600.0, "kernels": 100, "memcpys": 0,
             "memsets": 0, "kernel_us": 7600.0, "memcpy_us": 0.0, "self_overlap_us": 0.0},
        ],
        "overlap": {
            "cross_device": [
                {"devices": [0, 1], "overlap_us": 7000.0, "either_us": 8800.5,
                 "fraction_of_either": 7000.0 / 8800.5, "fraction_of_min": 7000.0 / 7600.0},
            ],
            "multi_device_us": 7000.0,
            "copy_compute": [
                {"device": 0, "direction": "all", "memcpy_us": 1200.0, "hidden_us": 900.0,
                 "exposed_us": 300.0, "hidden_fraction": 0.75, "copies": 8,
                 "bytes": 268435456, "pageable": 2},
                {"device": 0, "direction": "HtoD", "memcpy_us": 800.0, "hidden_us": 700.0,
                 "exposed_us": 100.0, "hidden_fraction": 0.875, "copies": 6,
                 "bytes": 201326592, "pageable": 2},
                {"device": 0, "direction": "DtoH", "memcpy_us": 400.0, "hidden_us": 200.0,
                 "exposed_us": 200.0, "hidden_fraction": 0.5, "copies": 2,
                 "bytes": 67108864, "pageable": 0},
            ],
            "comm_compute": [
                {"device": 1, "comm_us": 1500.0, "hidden_us": 600.0, "exposed_us": 900.0,
                 "hidden_fraction": 0.4},
            ],
            "streams": [
                {"device": 0, "streams": 2, "concurrent_us": 900.0, "max_concurrent": 2,
                 "pairs": [{"streams": [7, 20], "overlap_us": 900.0}], "pairs_omitted": False},
                {"device": 1, "streams": 1, "concurrent_us": 0.0, "max_concurrent": 1,
                 "pairs": [], "pairs_omitted": False},
            ],
        },
        "host": {
            "devices": [
                {"device": 0, "idle_us": 1799.5, "idle_host_busy_us": 1500.0, "causes": [
                    {"name": "synchronization", "kind": "sync", "us": 1200.0,
                     "calls": 3, "share": 1200.0 / 1799.5, "children": [
                        {"name": "cudaStreamSynchronize", "kind": "", "us": 1200.0, "calls": 0,
                         "share": 1200.0 / 1799.5, "children": []}]},
                    {"name": "aten::copy_", "kind": "cpu_op", "us": 250.0, "calls": 8,
                     "share": 250.0 / 1799.5, "children": []},
                ]},
                {"device": 1, "idle_us": 2400.0, "idle_host_busy_us": 2000.0, "causes": [
                    {"name": "waiting on another device", "kind": "wait", "us": 1800.0,
                     "calls": 1, "share": 0.75, "children": [
                        {"name": "cudaDeviceSynchronize", "kind": "", "us": 1800.0, "calls": 0,
                         "share": 0.75, "children": []}]},
                ]},
            ],
            "launch_latency": {"count": 220, "mean_us": 12.5, "p50_us": 8.25, "p95_us": 40.0,
                               "max_us": 310.75, "unqueued_count": 180, "unqueued_p50_us": 6.5,
                               "unqueued_max_us": 95.0, "waited_count": 12},
            "kernel_gaps": [
                {"device": 0, "stream": 7, "gaps": 119, "mean_us": 12.6, "p50_us": 5.0,
                 "max_us": 300.0, "kernel_p50_us": 60.0, "launch_bound": False,
                 "host_late_gaps": 3, "host_late_p50_us": 40.0, "host_late_us": 120.0},
                {"device": 1, "stream": 7, "gaps": 99, "mean_us": 14.1, "p50_us": 80.0,
                 "max_us": 250.0, "kernel_p50_us": 70.0, "launch_bound": True,
                 "host_late_gaps": 60, "host_late_p50_us": 85.0, "host_late_us": 5100.0},
            ],
        },
        "serial": {
            "serial_us": 16700.25,  # 7900.25 + 1200 + 7600, the three streams' busy
            "busy_union_us": 8800.5,  # = cross_device either_us
            "gpu_span_us": 9500.0,
            "speedup_vs_span": 16700.25 / 9500.0,
            "parallelism": 16700.25 / 8800.5,
        },
        "top_kernels": [
            {"name": "ampere_sgemm_128x64_nn", "device": 0, "count": 100, "total_us": 7000.0,
             "mean_us": 70.0, "fraction": 7000.0 / 7900.25,
             **NO_LAUNCH},
            {"name": KERNEL_NCCL, "device": 1, "count": 10, "total_us": 1500.0,
             "mean_us": 150.0, "fraction": 1500.0 / 7600.0,
             **NO_LAUNCH},
            {"name": KERNEL_FILL, "device": 0, "count": 20, "total_us": 900.25,
             "mean_us": 45.0125, "fraction": 900.25 / 7900.25,
             **NO_LAUNCH},
        ],
        "top_ops": [
            {"name": "aten::mm", "count": 100, "total_us": 5000.0, "mean_us": 50.0,
             "self_us": 4000.0, "input_dims": "[[64,64],[64,64]]",
             "input_types": '["float","float"]'},
            {"name": "aten::copy_", "count": 8, "total_us": 1300.0, "mean_us": 162.5,
             "self_us": 300.0, "input_dims": "", "input_types": ""},
        ],
        "copies": [
            {"device": 0, "direction": "HtoD", "src_kind": "Pageable", "dst_kind": "Device",
             "copies": 8, "bytes": 64 << 20, "us": 1300.0, "gb_per_s": (64 << 20) / 1.3e6,
             "link": "PCIe", "link_gb_per_s": 64.0, "link_share": (64 << 20) / 1.3e6 / 64,
             "pageable": True},
        ],
        "step_breakdown": [
            {"step": 1, "device": 0, "start_us": 1000.0, "end_us": 4000.0,
             "parts": [{"name": "kernel", "us": 2000.0, "share": 2 / 3},
                       {"name": "dataloader", "us": 1000.0, "share": 1 / 3}],
             "regions": [{"name": "forward", "us": 2000.0, "share": 2 / 3},
                         {"name": "(no region)", "us": 1000.0, "share": 1 / 3}],
             "phases": [{"name": "forward", "us": 2000.0, "share": 2 / 3},
                        {"name": "dataloader", "us": 1000.0, "share": 1 / 3}]},
        ],
        "warnings": [],
        "steps": [],
        "headlines": [
            "GPU 0 and GPU 1 were both busy 92.1% of the time the less busy one was",
            "75.0% of copy time on GPU 0 was hidden behind kernels",
            "While GPU 1 was idle the host spent 1.80 ms in cudaDeviceSynchronize",
        ],
        "critical_path": {
            "length_us": 10000.0, "bound_by": "GPU",
            "breakdown": {"kernel": 7000.0, "communication": 0.0, "copy": 0.0,
                          "sync_wait": 500.0, "dataloader": 0.0, "optimizer": 0.0, "sync": 0.0,
                          "runtime": 1000.0, "cpu_op": 1500.0, "region": 0.0, "python": 0.0,
                          "idle": 0.0},
            "segments": [
                {"start_us": 0.0, "end_us": 2500.0, "kind": "cpu_op", "name": "aten::mm"},
                {"start_us": 2500.0, "end_us": 10000.0, "kind": "kernel", "name": KERNEL_FILL},
            ],
        },
        "efficiency": {
            "device": "NVIDIA H200",
            "roof": {"name": "H200 SXM", "vendor": "nvidia",
                     "peaks_tflops": {"fp64": 34.0, "fp32": 67.0, "tf32": 494.7, "bf16": 989.4,
                                      "fp16": 989.4, "fp8": 1978.9, "int8": 1978.9},
                     "bandwidth_gbs": 4800.0, "source": "NVIDIA H200 datasheet"},
            "shapes": True, "kernel_us": 8000.0,
            "tensor_core_fraction": 0.0, "gemm_roof_fraction": 0.5,
            "categories": [{"category": "gemm", "kernels": 10, "time_us": 8000.0,
                            "tensor_core_us": 0.0, "known_us": 8000.0, "flops": 2.68e14,
                            "bytes": 1.0e9, "tflops": 33.5, "gbs": 125.0,
                            "roof_fraction": 0.5}],
            "rows": [{"op": "aten::mm", "input_dims": "[[8192,8192],[8192,8192]]",
                      "input_types": '["float","float"]', "kernel": "", "category": "gemm",
                      "dtype": "fp32", "calls": 10, "kernels": 10, "time_us": 8000.0,
                      "tensor_core": False, "flops": 2.68e14, "bytes": 1.0e9,
                      "tflops": 33.5, "gbs": 125.0, "intensity": 268000.0,
                      "peak_key": "fp32", "peak_tflops": 67.0, "roof_fraction": 0.5,
                      "bound": "compute"}],
            "rows_left_out": 0,
            "precision": {"fp32_off_tensor_cores_us": 8000.0, "fp32_tflops": 33.5,
                          "gemm_us": 8000.0, "kernel_us": 8000.0, "tf32_saving_us": 6917.0,
                          "bf16_saving_us": 7458.0, "material": True, "steps": 2,
                          "kernel_per_step_us": 4000.0, "tf32_kernel_per_step_us": 541.5,
                          "bf16_kernel_per_step_us": 271.0},
            "modules": {"rows": [{"path": "Net_0/Linear_0", "depth": 1, "calls": 10,
                                  "self_us": 8000.0, "total_us": 8000.0}],
                        "outside_us": 0.0, "truncated": 0},
            "notes": ["an example note"],
        },
    }


def make_step(report: dict[str, Any], step: int, start: float, span: float) -> dict[str, Any]:
    """A per-step object of ``--step all``: the report's keys minus steps and headlines."""
    per_trace = ("steps", "headlines", "warnings", "efficiency")
    s = copy.deepcopy({k: v for k, v in report.items() if k not in per_trace})
    s["window"] = {"start_us": start, "end_us": start + span, "step": step, "basis": "step",
                   "start_ns": round(start * 1000), "end_ns": round((start + span) * 1000)}
    s["span_us"] = span
    for d in s["devices"]:
        d["busy_us"] = d["busy_us"] * span / report["span_us"]
        d["idle_us"] = span - d["busy_us"]
    return s


def make_report_with_steps() -> dict[str, Any]:
    r = make_report()
    r["steps"] = [make_step(r, 1, 1000.0, 4000.0), make_step(r, 2, 5000.0, 6000.0)]
    return r


def make_multi() -> dict[str, Any]:
    r0 = make_report()
    r1 = make_report()
    r1["trace"] = "runs/rank1.pt.trace.json.gz"
    r1["rank"] = 1
    return {
        "schema": "traceprobe.reports/1",
        "traces": [r0, r1],
        "cross_trace": {
            "pairs": [
                {"a": {"trace": 0, "device": 0}, "b": {"trace": 1, "device": 0},
                 "overlap_us": 6000.0, "either_us": 9000.0, "fraction_of_either": 6000.0 / 9000.0},
            ],
            "skipped": [],
            "clock": "assumes all traces share one host clock",
        },
    }


def make_cpu_only() -> dict[str, Any]:
    r = make_report()
    r.update(
        trace="cpu_only.json", format="cpu-only", rank=None, gpu_span_us=0.0,
        counts={"kernels": 0, "memcpys": 0, "memsets": 0, "cpu_ops": 350, "runtime_calls": 0,
                "steps": 0},
        devices=[], streams=[], top_kernels=[], headlines=[],
        overlap={"cross_device": [], "multi_device_us": 0.0, "copy_compute": [],
                 "comm_compute": [], "streams": []},
        host={"devices": [], "launch_latency": {"count": 0, "mean_us": None, "p50_us": None,
                                                "p95_us": None, "max_us": None,
                                                "unqueued_count": 0, "unqueued_p50_us": None,
                                                "unqueued_max_us": None},
              "kernel_gaps": []},
        serial={"serial_us": 0.0, "busy_union_us": 0.0, "gpu_span_us": 0.0,
                "speedup_vs_span": None, "parallelism": None},
    )
    return r


def schema_skeleton() -> dict[str, Any]:
    """The example object of docs/REPORT_SCHEMA.md, comments stripped."""
    doc = SCHEMA_DOC.read_text(encoding="utf-8")
    block = re.search(r"```jsonc\n(.*?)```", doc, re.S).group(1)  # type: ignore[union-attr]
    block = re.sub(r"/\*.*?\*/", "", block, flags=re.S)
    block = re.sub(r"//[^\n]*", "", block)
    block = re.sub(r",\s*([\]}])", r"\1", block)
    return json.loads(block)


def key_paths(value: Any, prefix: str = "") -> list[str]:
    """Every key path, in order; lists contribute their first element's keys as ``[]``."""
    out: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            out.append(prefix + k)
            out += key_paths(v, f"{prefix}{k}.")
    elif isinstance(value, list) and value:
        out += key_paths(value[0], prefix[:-1] + "[].")
    return out


def assert_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if UPDATE:
        SNAPSHOTS.mkdir(exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        return
    if not path.exists():
        pytest.fail(f"no snapshot {path}; create it with TRACEPROBE_UPDATE_SNAPSHOTS=1")
    want = path.read_text(encoding="utf-8")
    assert text == want, f"{name} differs; if intended: TRACEPROBE_UPDATE_SNAPSHOTS=1 pytest"


# ----------------------------------------------------------------------------- the fixture


def test_fixture_follows_the_schema():
    """GIVEN the schema doc's example WHEN comparing key paths THEN the fixture has them all,
    in the same order (steps compared against the top level, less steps and headlines)."""
    want = key_paths(schema_skeleton())
    r = make_report_with_steps()
    assert key_paths({k: v for k, v in r.items() if k != "steps"}) == [
        p for p in want if not p.startswith("steps")
    ]
    top_level = [p for p in want
                 if p.split(".")[0] not in ("steps", "headlines", "warnings", "efficiency")]
    assert key_paths(r["steps"][0]) == top_level


# ----------------------------------------------------------------------------- units


@pytest.mark.parametrize(
    "us, want",
    [
        (None, "—"),
        (float("nan"), "—"),
        (0, "0"),
        (0.42, "420 ns"),
        (0.0005, "0.50 ns"),
        (8.25, "8.25 µs"),
        (12.5, "12.5 µs"),
        (812.4, "812 µs"),
        (999.6, "1.00 ms"),  # rounding up moves to the next unit, never "1000 µs"
        (12345.0, "12.3 ms"),
        (1_460_000.0, "1.46 s"),
        (7_200_000_000.0, "7200 s"),
        (-5.0, "-5.00 µs"),
    ],
)
def test_fmt_time(us, want):
    assert tb.fmt_time(us) == want


@pytest.mark.parametrize(
    "frac, want",
    [(None, "—"), (0.0, "0.0%"), (0.0004, "<0.1%"), (0.75, "75.0%"), (1.0, "100.0%"),
     (7000 / 7600, "92.1%")],
)
def test_fmt_pct(frac, want):
    assert tb.fmt_pct(frac) == want


@pytest.mark.parametrize(
    "n, want",
    [(None, "—"), (-1, "—"), (0, "0 B"), (512, "512 B"), (4096, "4.00 KiB"),
     (268435456, "256 MiB"), (1.5 * 2**30, "1.50 GiB")],
)
def test_fmt_bytes(n, want):
    assert tb.fmt_bytes(n) == want


# ----------------------------------------------------------------------------- text


def test_text_snapshot():
    assert_snapshot("report.txt", render(make_report_with_steps(), "text"))


def test_text_multi_snapshot():
    assert_snapshot("multi.txt", render(make_multi(), "text"))


def test_text_headlines_come_first():
    """GIVEN a report WHEN rendered as text THEN the headlines precede every table."""
    text = render(make_report(), "text")
    lines = text.splitlines()
    assert lines[0] == "traceprobe: runs/two_gpus.pt.trace.json.gz"
    first_headline = lines.index("  * GPU 0 and GPU 1 were both busy 92.1% of the time the less "
                                 "busy one was")
    assert first_headline < lines.index("GPUs")


def test_text_figures_from_the_report():
    text = render(make_report(), "text")
    # GPU 0: busy 8200.5 µs of 10 ms -> "8.20 ms", 82.0%; idle 1799.5 µs -> "1.80 ms"
    row = next(line for line in text.splitlines() if "NVIDIA H200" in line and " 0 " in line)
    assert row.split()[:7] == ["0", "NVIDIA", "H200", "8.20", "ms", "82.0%", "1.80"]
    assert "time with two or more GPUs busy at once: 7.00 ms" in text
    assert "summed work / GPU span: 1.76×" in text  # 16700.25 / 9500
    assert "parallelism: 1.90×" in text  # 16700.25 / 8800.5
    assert "256 MiB" in text and "75.0%" in text


def test_text_table_columns_line_up():
    text = render(make_report(), "text")
    block = text.split("\nStreams\n")[1].split("\n\n")[0].splitlines()
    header, rule, rows = block[0], block[1], block[2:5]
    # right-aligned columns: every row ends where the rule ends
    assert all(len(r) == len(rule) for r in rows)
    assert header.endswith("self-overlap")


def test_text_without_colour_has_no_escapes_and_with_colour_has():
    assert "\x1b[" not in render(make_report(), "text")
    coloured = render(make_report(), "text", color=True)
    assert "\x1b[1mGPUs\x1b[0m" in coloured
    # colour changes no content
    assert re.sub(r"\x1b\[\d+m", "", coloured) == render(make_report(), "text")


def test_colour_text_of_a_report_shows_control_characters_as_text():
    """GIVEN a kernel name with a terminal escape (set the window title) WHEN the CLI's colour
    path makes the Report printable (output.printable_data walks its dataclasses) THEN the
    escape is written as text, the figures are untouched, and the page is the one the report
    dict made printable gives."""
    r = make_report()
    r["top_kernels"][0]["name"] = "evil\x1b]0;title\x07kernel"
    rep = as_report(r)
    safe = output.printable_data(rep)
    text = render(safe, "text", color=True)
    assert "\x1b]0" not in text and "\x07" not in text
    assert "evil\\u001b]0;title\\u0007kernel" in text
    assert safe.top_kernels[0].total_ns == rep.top_kernels[0].total_ns
    assert rep.top_kernels[0].name == "evil\x1b]0;title\x07kernel"  # the report is not changed
    assert text == render(output.printable_data(r), "text", color=True)


def test_text_long_names_are_cut():
    text = render(make_report(), "text")
    assert KERNEL_FILL not in text
    assert KERNEL_FILL[:59] + "…" in text


def test_top_limits_rows():
    text = render(make_report(), "text", top=1)
    assert "ampere_sgemm_128x64_nn" in text and "ncclDevKernel" not in text
    assert "aten::mm" in text and "162" not in text  # aten::copy_'s mean 162.5 µs is gone


def test_text_cpu_only_report():
    """GIVEN a report without GPU activity THEN it says so instead of empty tables."""
    text = render(make_cpu_only(), "text")
    assert "No GPU activity in this window." in text
    assert "Streams" not in text and "Top kernels" not in text
    assert "aten::mm" in text


def test_text_survives_missing_and_extra_fields():
    """Fields are only ever added to the schema: an older or newer report still renders."""
    r = make_report()
    del r["host"], r["serial"], r["overlap"]["comm_compute"]
    r["devices"][0]["future_field"] = 1.5
    r["something_new"] = {"x": 1}
    text = render(r, "text")
    assert "NVIDIA H200" in text and "Host vs GPU" not in text


def test_self_overlap_is_called_out():
    r = make_report()
    r["streams"][0]["self_overlap_us"] = 3.5
    assert "overlap each other on GPU 0 stream 7" in render(r, "text")


# ----------------------------------------------------------------------------- markdown


def test_markdown_snapshot():
    assert_snapshot("report.md", render(make_report_with_steps(), "markdown"))


def test_markdown_multi_snapshot():
    assert_snapshot("multi.md", render(make_multi(), "markdown"))


def _md_tables(md: str) -> list[list[str]]:
    tables, cur = [], []
    for line in md.splitlines():
        if line.startswith("|"):
            cur.append(line)
        elif cur:
            tables.append(cur)
            cur = []
    return tables + ([cur] if cur else [])


def _cells(line: str) -> int:
    return len(re.split(r"(?<!\\)\|", line)) - 2


def test_markdown_tables_are_well_formed():
    """Every row has as many cells as its header, and the second line is the alignment row."""
    r = make_report_with_steps()
    r["top_ops"][0]["name"] = "my|op<float>*"
    md = render(r, "markdown")
    tables = _md_tables(md)
    assert len(tables) >= 10
    for t in tables:
        assert re.fullmatch(r"\|( (:---|---:) \|)+", t[1]), t[1]
        assert {_cells(line) for line in t} == {_cells(t[0])}, t
    assert "`my\\|op<float>*`" in md


def test_markdown_escapes_free_text():
    r = make_report()
    r["headlines"] = ["kernel <T> took *most* of the time | really"]
    md = render(r, "markdown")
    assert "- kernel \\<T\\> took \\*most\\* of the time \\| really" in md


# ----------------------------------------------------------------------------- json


def test_json_round_trips_in_schema_order():
    r = make_report_with_steps()
    out = render(r, "json")
    back = json.loads(out)
    assert back == r
    assert list(back) == list(r)
    assert out.endswith("}\n")


def test_json_never_emits_nan():
    """GIVEN NaN, infinities and numpy scalars in a report THEN the JSON has nulls and numbers."""
    r = make_report()
    r["serial"]["parallelism"] = float("nan")
    r["serial"]["speedup_vs_span"] = float("inf")
    r["devices"][0]["kernels"] = np.int64(120)
    r["devices"][0]["utilization"] = np.float64(0.82005)
    r["host"]["kernel_gaps"][0]["launch_bound"] = np.bool_(True)
    r["overlap"]["cross_device"][0]["devices"] = (0, 1)
    out = render(r, "json")

    def no_constants(name: str) -> Any:
        raise AssertionError(f"{name} in JSON output")

    back = json.loads(out, parse_constant=no_constants)
    assert back["serial"]["parallelism"] is None and back["serial"]["speedup_vs_span"] is None
    assert back["devices"][0]["kernels"] == 120 and back["devices"][0]["utilization"] == 0.82005
    assert back["host"]["kernel_gaps"][0]["launch_bound"] is True
    assert back["overlap"]["cross_device"][0]["devices"] == [0, 1]


def test_json_top_cuts_top_lists_everywhere():
    r = make_report_with_steps()
    back = json.loads(render(r, "json", top=1))
    assert [k["name"] for k in back["top_kernels"]] == ["ampere_sgemm_128x64_nn"]
    assert len(back["top_ops"]) == 1
    assert all(len(s["top_kernels"]) == 1 for s in back["steps"])
    assert back["devices"] == r["devices"]


def test_json_multi():
    back = json.loads(render(make_multi(), "json"))
    assert list(back) == ["schema", "traces", "cross_trace"]
    assert [t["rank"] for t in back["traces"]] == [0, 1]


def test_json_rejects_what_is_not_data():
    with pytest.raises(TypeError, match="object"):
        render({"x": object()}, "json")


# ----------------------------------------------------------------------------- registry


def test_formats_and_unknown_format():
    assert formats()[:3] == ["text", "json", "markdown"]
    with pytest.raises(UsageError, match="Unknown format 'xml'; choose one of: text, json"):
        render(make_report(), "xml")


def test_register_a_format(monkeypatch):
    from traceprobe import render as registry

    monkeypatch.setattr(registry, "_registered", {})
    register("count", lambda rep, *, top=None, color=False: f"{len(rep.devices)}\n")
    assert "count" in formats()
    assert render(make_report(), "count") == "2\n"


def test_as_dict_accepts_objects_and_lists():
    class FakeReport:
        def __init__(self, d: dict[str, Any]) -> None:
            self.d = d

        def to_dict(self) -> dict[str, Any]:
            return self.d

    r = make_report()
    assert as_dict(FakeReport(r)) == r
    multi = as_dict([FakeReport(r), r])
    assert multi["schema"] == "traceprobe.reports/1" and len(multi["traces"]) == 2
    assert "Across traces" not in render(multi, "text")
    with pytest.raises(TypeError):
        as_dict(3)


def test_cross_trace_rows_skipped_pairs_and_bare_lists():
    m = make_multi()
    m["cross_trace"]["skipped"] = [{"traces": [0, 2], "reason": "their windows do not intersect"}]
    text = render(m, "text")
    assert "[0] GPU 0  [1] GPU 0    6.00 ms      9.00 ms      66.7%" in text
    assert "[0] and [2] not compared: their windows do not intersect" in text
    assert "the comparison assumes all traces share one host clock" in text
    assert "[0] GPU 0  [1] GPU 0    6.00 ms" in render(as_report(m), "text")  # the object
    m["cross_trace"] = {"pairs": [], "skipped": [], "clock": "one clock"}
    assert "Across traces" not in render(m, "text")


# ----------------------------------------------------------------------------- output


def test_write_text_new_file(tmp_path):
    p = tmp_path / "r.txt"
    output.write_text(p, "héllo µs\n")
    assert p.read_text(encoding="utf-8") == "héllo µs\n"
    assert sorted(os.listdir(tmp_path)) == ["r.txt"]  # no temp file left


def test_write_text_refuses_existing_file(tmp_path):
    """GIVEN an existing file WHEN writing without force THEN OutputError and the file is kept."""
    p = tmp_path / "r.txt"
    p.write_text("precious")
    with pytest.raises(OutputError) as e:
        output.write_text(p, "new")
    assert str(e.value) == f"File already exists, will not overwrite without --force: {p}"
    assert e.value.exit_code == 4
    assert p.read_text() == "precious"
    assert sorted(os.listdir(tmp_path)) == ["r.txt"]
    output.write_text(p, "new", force=True)
    assert p.read_text() == "new"


def test_write_text_stdout(capsys):
    output.write_text("-", "a\n")
    output.write_text(None, "b µ\n")
    assert capsys.readouterr().out == "a\nb µ\n"


def test_write_text_missing_directory(tmp_path):
    with pytest.raises(OutputError, match="does not exist; create it first"):
        output.write_text(tmp_path / "nope" / "r.txt", "x")


def test_write_text_to_a_directory(tmp_path):
    with pytest.raises(OutputError, match="is a directory"):
        output.write_text(tmp_path, "x", force=True)


def test_write_bytes_refuses_a_file_that_appears_meanwhile(tmp_path, monkeypatch):
    """The final step links instead of replacing, so a file created after the check survives."""
    p = tmp_path / "r.txt"
    monkeypatch.setattr(output, "check_target", lambda path, force=False: p.write_text("racer"))
    with pytest.raises(OutputError, match="will not overwrite"):
        output.write_bytes(p, b"mine")
    assert p.read_text() == "racer"
    assert sorted(os.listdir(tmp_path)) == ["r.txt"]


# ----------------------------------------------------------------------------- csv


def _timeline(source: str) -> Timeline:
    """GPU 0: a kernel [1000, 11000) ns on stream 7 and a copy [5000, 9000) on stream 20."""
    return frames.timeline(
        gpu=[frames.kernel(1000, 11000, "k, with comma", stream=7),
             frames.copy(5000, 9000, "HtoD", stream=20, bytes=4096)],
        cpu=[frames.runtime(0, 500, correlation=1)],
        source=source,
    )


def test_write_csv_files(tmp_path):
    r = make_report_with_steps()
    out = tmp_path / "frames"
    paths = write_csv(_timeline("a.json"), out, reports=[r])
    assert sorted(p.name for p in paths) == sorted(FILES)
    assert sorted(os.listdir(tmp_path)) == ["frames"]  # no scratch directory left
    gpu = pd.read_csv(out / "gpu.csv", keep_default_na=False)
    assert list(gpu.columns[:8]) == ["trace", "kind", "name", "device", "stream", "start_ns",
                                     "end_ns", "dur_ns"]
    assert gpu["dur_ns"].tolist() == [10000, 4000]
    assert gpu["name"].tolist() == ["k, with comma", "Memcpy HtoD"]
    assert (out / "steps.csv").read_text().startswith("trace,step,start_ns,end_ns,dur_ns")
    dev = pd.read_csv(out / "devices.csv")
    # the whole window (step empty), then each step's rows
    assert dev["step"].fillna(-1).astype(int).tolist() == [-1, -1, 1, 1, 2, 2]
    assert dev["busy_us"].tolist()[:2] == [8200.5, 7600.0]
    assert list(dev.columns[:5]) == ["trace", "step", "span_us", "device", "name"]
    streams = pd.read_csv(out / "streams.csv")
    assert len(streams) == 9 and streams["stream"].tolist()[:3] == [7, 20, 7]
    assert "nan" not in (out / "devices.csv").read_text().lower()


def test_write_csv_several_traces_and_no_overwrite(tmp_path):
    r0, r1 = make_report(), make_report()
    r1["trace"] = "b.json"
    out = tmp_path / "frames"
    out.mkdir()
    (out / "cpu.csv").write_text("mine")
    with pytest.raises(OutputError, match=f"will not overwrite without --force: {out / 'cpu.csv'}"):
        write_csv([_timeline("a.json"), _timeline("b.json")], out, reports=[r0, r1])
    assert sorted(os.listdir(out)) == ["cpu.csv"]  # all or nothing: nothing written
    write_csv([_timeline("a.json"), _timeline("b.json")], out, reports=[r0, r1], force=True)
    gpu = pd.read_csv(out / "gpu.csv")
    assert gpu["trace"].tolist() == ["a.json", "a.json", "b.json", "b.json"]
    assert sorted(os.listdir(out)) == sorted(FILES)
