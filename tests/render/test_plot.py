"""The static PNG (render/plot.py): written atomically, a real picture, lazy matplotlib."""

from __future__ import annotations

import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frames  # tests/frames.py
from traceprobe.errors import OutputError, UsageError
from traceprobe.render import plot

pytest.importorskip("matplotlib", reason="the plot extra (matplotlib) is not installed")


def two_gpus() -> Any:
    return frames.timeline(
        gpu=[
            frames.kernel(0, 100_000, device=0, stream=7),
            frames.kernel(150_000, 250_000, device=0, stream=7),
            frames.copy(50_000, 200_000, "HtoD", device=0, stream=20),
            frames.kernel(80_000, 180_000, device=1, stream=7),
        ],
        steps=[(1, 0, 120_000), (2, 120_000, 260_000)],
    )


def report(tl: Any) -> Any:
    from traceprobe.report import analyze

    return analyze(tl)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    return struct.unpack(">II", data[16:24])


def pixels(path: Path) -> np.ndarray:
    from matplotlib import image

    return (image.imread(path)[:, :, :3] * 255).round().astype(int)


def count_color(px: np.ndarray, hex_color: str) -> int:
    rgb = [int(hex_color[i : i + 2], 16) for i in (1, 3, 5)]
    return int(np.all(np.abs(px - rgb) <= 2, axis=-1).sum())


def test_png_is_written_with_the_lanes_drawn(tmp_path: Path) -> None:
    tl = two_gpus()
    out = tmp_path / "t.png"
    plot.write_plot(tl, report(tl), out)

    data = out.read_bytes()
    width, height = png_size(data)
    assert width == plot.WIDTH_PX and 200 <= height <= 1000
    assert len(data) > 10_000
    px = pixels(out)
    # kernel lanes: GPU 0 stream 7 is busy 200 of 260 ns and GPU 1 100 of 260, 20 px high each
    assert count_color(px, "#4c78a8") > 0.5 * plot.PLOT_PX * (plot.LANE_PX - 2)
    assert count_color(px, "#f58518") > 0.3 * plot.PLOT_PX * (plot.LANE_PX - 2)
    assert count_color(px, "#7b4fc9") > 0  # both GPUs busy
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


def test_existing_output_needs_force(tmp_path: Path) -> None:
    tl = two_gpus()
    out = tmp_path / "t.png"
    out.write_bytes(b"keep me")
    with pytest.raises(OutputError, match="--force"):
        plot.write_plot(tl, None, out)
    assert out.read_bytes() == b"keep me"
    plot.write_plot(tl, None, out, force=True)
    png_size(out.read_bytes())


def test_a_step_window_and_a_trace_without_gpu(tmp_path: Path) -> None:
    from traceprobe.report import analyze

    tl = two_gpus()
    stepped = analyze(tl, step=2)
    plot.write_plot(tl, stepped, tmp_path / "step.png")
    png_size((tmp_path / "step.png").read_bytes())

    cpu_only = frames.timeline(cpu=[frames.op(0, 1000)])
    plot.write_plot(cpu_only, report(cpu_only), tmp_path / "cpu.png")
    width, height = png_size((tmp_path / "cpu.png").read_bytes())
    assert width == plot.WIDTH_PX and height > 100


def test_without_matplotlib_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(UsageError, match=r"traceprobe\[plot\]"):
        plot.plot_png(two_gpus())


def test_matplotlib_is_imported_only_when_plotting() -> None:
    code = "import sys, traceprobe.render.plot; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_several_traces_get_numbered_files_checked_first(tmp_path: Path) -> None:
    tl = two_gpus()
    r = report(tl)
    assert plot.plot_targets(tmp_path / "p.png", 1) == [tmp_path / "p.png"]
    (tmp_path / "p-1.png").write_bytes(b"keep")
    with pytest.raises(OutputError, match="p-1.png"):
        plot.write_plots([tl, tl], [r, r], tmp_path / "p.png")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p-1.png"]  # nothing written
    written = plot.write_plots([tl, tl], [r, r], tmp_path / "p.png", force=True)
    assert [p.name for p in written] == ["p-0.png", "p-1.png"]
    for p in written:
        png_size(p.read_bytes())


def test_every_headline_and_the_trace_name_are_drawn() -> None:
    tl = two_gpus()
    r = replace(report(tl), trace="runs/rank3.json",
                headlines=tuple(f"headline number {i}: " + "x" * (40 * i) for i in range(7)))
    fig = plot.plot_figure(tl, r)
    drawn = " ".join(t.get_text() for t in fig.texts)
    assert "runs/rank3.json" in drawn
    for i in range(7):  # none dropped (long ones wrap onto more lines)
        assert f"headline number {i}:" in drawn
    assert drawn.count("x") == sum(40 * i for i in range(7))


def test_a_host_lane_per_thread(tmp_path: Path) -> None:
    # thread 1: op [0, 600) ⊃ runtime call [100, 400) µs; thread 2: op [0, 1000) µs
    tl = frames.timeline(cpu=[frames.op(0, 600_000), frames.runtime(100_000, 400_000),
                              frames.op(0, 1_000_000, tid=2)])
    fig = plot.plot_figure(tl, report(tl))
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["host thread 1", "host thread 2"]
    out = tmp_path / "cpu.png"
    out.write_bytes(plot.plot_png(tl, report(tl)))
    px = pixels(out)
    lane = plot.PLOT_PX * (plot.LANE_PX - 2)
    # ops: thread 1 [0, 100) ∪ [400, 600) (the runtime call is innermost in between), thread 2
    # the whole window: 0.3 + 1.0 lanes; the runtime call 0.3 of a lane. ±3% for edges.
    assert count_color(px, "#72b7b2") == pytest.approx(1.3 * lane, rel=0.03)
    assert count_color(px, "#eeca3b") == pytest.approx(0.3 * lane, rel=0.03)
