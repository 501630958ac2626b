"""Every key of a real JSON report has a written definition in docs/FIGURES.md.

docs/REPORT_SCHEMA.md pins the report's shape; this test pins its meaning. It analyses
committed sample traces the ways a user would (one trace with ``--step all``, two GPUs, copies,
a two-rank DDP job as several traces, and ``--hta`` where HTA is installed), plus a built
two-rank job whose windows do not meet, walks every key path of the JSON, and looks each one
up in FIGURES.md.

A key counts as defined when one block of FIGURES.md (a table row, a bullet with its
sub-bullets, or a paragraph) names the key in backticks (`busy_us`, `counts.kernels`,
`kernel_time(us)`) and the block or its section heading also names the key's parent object
(`devices[]` for `devices[].busy_us`, `top_ops` for `top_ops[].count`). A key named like its
parent (`overlap.streams[].streams`) must be named twice. Sections that only use keys (the
worked example, the invariants, the verdicts, what the random-timeline test covers) do not
count. Per-step reports (``steps[]``) and the reports of a several-traces object (``traces[]``)
have the keys of a report, so they are looked up as one.

When this fails it lists every undefined key path: add a definition for each to FIGURES.md.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from traceprobe.cli import cli

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "FIGURES.md"
H200 = ROOT / "sample_traces" / "h200x2"
RUNS = [
    [H200 / "two-devices" / "parallel", "--step", "all"],  # two GPUs, steps
    [H200 / "copy" / "side-stream", "--step", "all"],  # copies beside kernels
    [H200 / "small-ops" / "loop"],  # launch-bound streams, kernel gaps
    [H200 / "ddp" / "train", "--step", "all"],  # two ranks: several traces, NCCL
]


def write_two_ranks_apart(folder: Path) -> None:
    """Ranks 0 and 1 of one two-rank job (one folder) whose windows do not meet: a skipped
    cross_trace pair (no committed job has one; separate runs are not compared at all)."""
    for rank, t0 in ((0, 1000), (1, 900_000)):
        events = [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10, "tid": 10, "ts": t0,
             "dur": 20, "args": {}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 10, "tid": 10,
             "ts": t0 + 1, "dur": 5, "args": {"correlation": 1}},
            {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": t0 + 10,
             "dur": 30, "args": {"device": 0, "stream": 7, "correlation": 1}},
        ]  # fmt: skip
        trace = {
            "schemaVersion": 1,
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
            "traceEvents": events,
        }
        (folder / f"rank{rank}.pt.trace.json").write_text(json.dumps(trace))


def key_paths(value: Any, path: str = "") -> set[str]:
    """``a.b[].c`` for every key of nested dicts and lists."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            p = f"{path}.{k}" if path else str(k)
            out.add(p)
            out |= key_paths(v, p)
    elif isinstance(value, list):
        for v in value:
            out |= key_paths(v, path + "[]")
    return out


def canonical(path: str) -> str:
    """One report's key: ``traces[].steps[].devices[].busy_us`` -> ``devices[].busy_us``."""
    for prefix in ("traces[].", "steps[]."):
        path = path.removeprefix(prefix)
    return path


@functools.cache
def report_keys() -> frozenset[str]:
    runs = [list(map(str, r)) for r in RUNS]
    if importlib.util.find_spec("hta") is not None:  # the optional hta block
        runs.append([str(H200 / "copy" / "side-stream"), "--hta"])
    keys: set[str] = set()
    with tempfile.TemporaryDirectory() as job:
        write_two_ranks_apart(Path(job))
        for args in [*runs, [job]]:
            result = CliRunner().invoke(cli, ["analyze", *args, "--format", "json"])
            assert result.exit_code == 0, (args, result.output)
            keys |= {canonical(p) for p in key_paths(json.loads(result.stdout))}
    return frozenset(keys)


_TICKS = re.compile(r"`([^`]+)`")


def names(text: str) -> list[str]:
    """Names in backticks: each span whole (`kernel_time(us)`) and each identifier in it."""
    out: list[str] = []
    for span in _TICKS.findall(text):
        out.append(span.strip())
        out += re.findall(r"[A-Za-z_][A-Za-z0-9_]*", span)
    return out


def blocks(markdown: str) -> list[tuple[str, str]]:
    """(section heading, block text) for each table row, top-level bullet, or paragraph."""
    out: list[tuple[str, str]] = []
    heading, cur = "", []
    fenced = False

    def flush() -> None:
        if cur:
            out.append((heading, "\n".join(cur)))
            cur.clear()

    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        if line.startswith("#"):
            flush()
            heading = line
        elif not line.strip():
            flush()
        elif line.startswith("|") or line.startswith("* "):
            flush()
            cur.append(line)
            if line.startswith("|"):
                flush()
        else:
            cur.append(line)
    flush()
    return out


# sections that use the keys but do not define them
NOT_DEFINITIONS = (
    "## What the random-timeline test covers",
    "## Invariants",
    "## Worked example",
    "## Verdicts",
)


def undefined(keys: frozenset[str] | set[str], markdown: str) -> list[str]:
    index = [
        (names(h), names(b)) for h, b in blocks(markdown) if not h.startswith(NOT_DEFINITIONS)
    ]
    missing = []
    for key in sorted(keys):
        parts = [p.removesuffix("[]") for p in key.split(".")]
        leaf, parent = parts[-1], parts[-2] if len(parts) > 1 else None
        need = 2 if leaf == parent else 1
        if not any(
            (b.count(leaf) >= need and (parent is None or parent in b or parent in h))
            or (parent is None and leaf in h)  # a top-level object with its own section
            for h, b in index
        ):
            missing.append(key)
    return missing


def test_every_key_of_real_reports_is_defined_in_figures_md() -> None:
    keys = report_keys()
    # the walk saw every part of a report (so a key the traces lack cannot slip through)
    for expected in (
        "cross_trace.skipped[].reason",
        "overlap.cross_device[].fraction_of_min",
        "overlap.comm_compute[].hidden_us",
        "host.kernel_gaps[].launch_bound",
        "host.devices[].causes[].us",
        "steps",
    ):
        assert expected in keys, f"the sample reports lack {expected}: pick other traces"
    missing = undefined(keys, FIGURES.read_text())
    assert not missing, (
        f"{len(missing)} JSON key path(s) of real reports have no definition in "
        "docs/FIGURES.md (a block naming the key in backticks beside its parent); add one for "
        "each:\n  " + "\n  ".join(missing)
    )


def test_the_lookup_finds_a_definition_only_beside_the_parent() -> None:
    doc = "## `devices[]`\n\n| `busy_us` | union |\n\n* `top_kernels`: `count` kernels\n"
    assert undefined({"devices[].busy_us", "top_kernels[].count"}, doc) == []
    # the leaf alone, under another parent, does not define it
    assert undefined({"streams[].busy_us", "top_ops[].count"}, doc) == [
        "streams[].busy_us",
        "top_ops[].count",
    ]
    # a key named like its parent needs its own mention
    assert undefined({"overlap.streams[].streams"}, "* `streams[]`: rows\n") == [
        "overlap.streams[].streams"
    ]
    assert undefined({"overlap.streams[].streams"}, "* `streams[]`: `streams` count\n") == []


@pytest.mark.parametrize("key", ["hta.temporal_breakdown[].idle_time(us)"])
def test_keys_with_brackets_match_whole(key: str) -> None:
    doc = "* `hta`: `temporal_breakdown[]` rows: `idle_time(us)` HTA's idle time\n"
    assert undefined({key}, doc) == []
