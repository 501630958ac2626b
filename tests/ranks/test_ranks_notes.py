"""The many-rank summary says what it cannot vouch for (issue 24): ranks whose ProfilerStep
annotations differ (collectives are paired by step number), and a rank's trace that was
cut short or read leniently: in the JSON's notes, the text, and on stderr."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from tracebuild import TraceBuilder
from traceprobe.cli import cli


def rank_trace(path: Path, rank: int, first_step: int, *, odd: bool = False) -> Path:
    t = TraceBuilder(distributedInfo={"rank": rank, "world_size": 2})
    for i in range(2):
        n, ts = first_step + i, 1000 * i
        t.step(n, ts=ts, dur=1000)
        t.cpu("user_annotation", "nccl:all_reduce", ts=ts + 100 + 10 * rank, dur=200)
        t.launch("gemm", cpu_ts=ts + 1, cpu_dur=2, gpu_ts=ts + 10, gpu_dur=50)
    if odd:
        t.add(ph="Z", cat="kernel", name="z", pid=0, tid=7, ts=5, dur=1, args={})
    t.events = [{"ph": e["ph"], **e} for e in t.events]  # "ph" first, as kineto writes it
    return t.write(path)


def summary(*files: Path) -> tuple[dict, str]:
    r = CliRunner().invoke(cli, ["ranks", *map(str, files), "-f", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout), r.stderr


def test_same_steps_give_no_note(tmp_path: Path) -> None:
    d, _ = summary(rank_trace(tmp_path / "r0.json", 0, 1), rank_trace(tmp_path / "r1.json", 1, 1))
    assert not any("ProfilerStep annotations differ" in n for n in d["ranks"]["notes"])


def test_ranks_whose_steps_differ_are_noted(tmp_path: Path) -> None:
    """GIVEN rank 1 numbers its steps from 2 where rank 0 starts at 1 THEN a note says the
    pairing may be wrong (old: silent, and the straggler could flip)."""
    d, _ = summary(rank_trace(tmp_path / "r0.json", 0, 1), rank_trace(tmp_path / "r1.json", 1, 2))
    (note,) = [n for n in d["ranks"]["notes"] if "ProfilerStep annotations differ" in n]
    assert "ranks 1 differ from rank 0" in note
    text = CliRunner().invoke(cli, ["ranks", str(tmp_path / "r0.json"),
                                    str(tmp_path / "r1.json")]).stdout
    assert "ProfilerStep annotations differ" in text


def test_a_rank_read_leniently_or_cut_short_is_said(tmp_path: Path) -> None:
    a = rank_trace(tmp_path / "r0.json", 0, 1, odd=True)
    b = rank_trace(tmp_path / "r1.json", 1, 1)
    raw = b.read_bytes()
    b.write_bytes(raw[: raw.rfind(b"}", 0, len(raw) - 40)])  # cut inside the last events
    d, err = summary(a, b)
    notes = d["ranks"]["notes"]
    assert any(n.startswith(f"rank 0 ({a}): warning: 1 event(s) have no ph") for n in notes)
    assert any(n.startswith(f"rank 1 ({b}): notice: ") for n in notes), notes
    assert f"traceprobe: warning: {a}: 1 event(s) have no ph" in err
    assert f"traceprobe: notice: {b}: " in err
