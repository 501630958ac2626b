"""The one output check (issue 24, data loss; issue 23, the output-options bundle): no command
writes over one of its inputs, by name, symbolic or hard link, whatever --force says; a
character device is written as a stream in place, never renamed over; paths the system
cannot hold are one-line errors.

Character devices: the tests make their own node with os.mknod in a temporary folder (the
null device's numbers, 1:3), never a real /dev node; skipped where mknod is not permitted.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tracebuild import TraceBuilder
from traceprobe.cli import cli


def run(*args: Any) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def trace(path: Path, rank: int = 0) -> Path:
    t = TraceBuilder(distributedInfo={"rank": rank, "world_size": 2})
    t.step(1, ts=0, dur=100)
    t.launch("gemm", cpu_ts=1, cpu_dur=2, gpu_ts=5, gpu_dur=40)
    t.kernel("ncclDevKernel_AllReduce", ts=50, dur=20, stream=9)
    return t.write(path)


def one_line(result: Any, code: int, *words: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.output)
    err = result.stderr
    assert err.count("\n") == 1 and err.startswith("traceprobe: error: "), err
    for w in words:
        assert w in err, (w, err)


def test_whatif_never_writes_over_its_trace(tmp_path: Path) -> None:
    """GIVEN whatif T -o T --force (or -o a link to T) THEN exit 4 and T is untouched."""
    t = trace(tmp_path / "t.json")
    before = t.read_bytes()
    one_line(run("whatif", t, "-o", t, "--force"), 4, "is an input")
    link = tmp_path / "link.json"
    link.symlink_to(t)
    one_line(run("whatif", t, "-o", link, "--force"), 4, "is an input")
    hard = tmp_path / "hard.json"
    os.link(t, hard)
    one_line(run("whatif", t, "-o", hard, "--force"), 4, "is an input")
    assert t.read_bytes() == before


def test_ranks_csv_never_writes_over_an_input_trace(tmp_path: Path) -> None:
    """GIVEN a trace named ranks.csv among the inputs and --csv its folder THEN exit 4."""
    job = tmp_path / "job"
    job.mkdir()
    a = trace(job / "ranks.csv", 0)
    b = trace(job / "r1.json", 1)
    before = a.read_bytes()
    for cmd in (("analyze", "--ranks"), ("ranks",)):
        one_line(run(*cmd, a, b, "--csv", job, "--force"), 4, "is an input")
    assert a.read_bytes() == before
    ok = run("ranks", a, b, "--csv", tmp_path / "csv")
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "csv" / "ranks.csv").read_text().startswith("rank,")


def _device(tmp_path: Path) -> Path:
    node = tmp_path / "null"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as e:
        pytest.skip(f"cannot make a device node here: {e}")
    return node


@pytest.mark.parametrize("command", [
    ("analyze",), ("analyze", "-f", "json"), ("whatif",), ("compare", "SELF"), ("annotate",),
])
def test_a_character_device_is_written_in_place(tmp_path: Path, command: tuple[str, ...]) -> None:
    """GIVEN -o NODE (a character device of our own) THEN exit 0 without --force, and with
    it; the node is still the same device afterwards (never renamed over)."""
    node = _device(tmp_path)
    t = trace(tmp_path / "t.json")
    args = [c if c != "SELF" else t for c in command]
    ino = node.stat().st_ino
    for extra in ((), ("--force",)):
        r = run(args[0], t, *args[1:], "-o", node, *extra)
        assert r.exit_code == 0, r.output
        st = node.lstat()
        assert stat.S_ISCHR(st.st_mode) and st.st_ino == ino
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary left


def test_an_output_path_over_path_max_is_one_line(tmp_path: Path) -> None:
    t = trace(tmp_path / "t.json")
    long = tmp_path / "/".join(["d" * 200] * 25) / "r.json"
    for cmd in (("analyze",), ("whatif",), ("annotate",)):
        one_line(run(cmd[0], t, "-o", long), 4, "shorter path")


def test_every_writing_command_has_the_one_bundle() -> None:
    """The -o/--force options come from cli.options.output_options everywhere."""
    import click

    from traceprobe.cli import COMMANDS

    for name in ("analyze", "ranks", "compare", "verify", "whatif", "annotate"):
        cmd = cli.get_command(click.Context(cli), name)
        assert cmd is not None
        opts = {o.name: o for o in cmd.params}
        assert "output_path" in opts and "force" in opts, name
        assert "a device such as /dev/null" in (opts["output_path"].help or ""), name
        assert name in COMMANDS
