"""Screenshots of the HTML report's timeline for the docs (docs/timeline-gpu.png, -cpu.png).

    PYTHONPATH=. .venv/bin/python scripts/timeline_screenshots.py [OUTDIR]   # default: docs/

Renders the report of a GPU trace (2 x H200, ``copy/side-stream``) and of a CPU-only
trace (``mlp/single``) from sample_traces/, opens each in Debian's chromium through
Playwright (no browser download), zooms in, clicks a kernel (its launch link drawn)
and hovers it, and saves the timeline element as PNG. Needs chromium and playwright.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
GPU = ROOT / "sample_traces/h200x2/copy/side-stream"
CPU = ROOT / "sample_traces/cpu/mlp/single"

# Pick the first kernel after ``at`` ns that starts soon after its launch, show ``width`` ns
# around both, click it (the link is drawn) and hover it (the tooltip).
FOCUS = """([at, width]) => {
  const tl = document.querySelector('.tp-timeline').tpTimeline, ev = tl.traces[0].ev;
  let k = -1;
  for (let i = 0; i < ev.gpu.n; i++) {
    const l = ev.gpu.s[i] >= at ? tl.links(0, 'gpu', i).launcher : -1;
    if (l >= 0 && ev.gpu.s[i] - ev.cpu.s[l] < width / 3) { k = i; break; }
  }
  if (k < 0) { return null; }
  const l = tl.links(0, 'gpu', k).launcher;
  tl.setView(ev.cpu.s[l] - width * 0.3, ev.cpu.s[l] + width * 0.7);
  const p = tl.place(0, 'gpu', k);
  const x1 = Math.min(p.x1, tl.cssWidth - 8), x0 = Math.max(p.x0, 200);
  return {x: x0 + Math.min(60, (x1 - x0) / 2), y: p.y + p.h / 2};
}"""


def report_page(trace_dir: Path, out: Path) -> Path:
    from dataclasses import replace

    from traceprobe.load.pipeline import find_traces, load
    from traceprobe.render.html import render_html
    from traceprobe.report import analyze

    (trace,) = find_traces(trace_dir)
    tl = load(trace)
    r = replace(analyze(tl), trace=str(trace.relative_to(ROOT)))  # the renderers take the Report
    out.write_text(render_html([r], [tl]), encoding="utf-8")
    return out


def shoot(ctx, page_path: Path, png: Path, focus: tuple[float, float] | None) -> None:
    page = ctx.new_page()
    page.goto(page_path.as_uri())
    page.wait_for_selector(".tp-timeline[data-rendered]")
    el = page.query_selector(".tp-timeline")
    box = page.query_selector(".tp-timeline canvas").bounding_box()
    if focus is not None:
        spot = page.evaluate(FOCUS, list(focus))
        if spot is None:
            raise SystemExit(f"{page_path}: no launched kernel to focus on")
        page.mouse.click(box["x"] + spot["x"], box["y"] + spot["y"])
        page.mouse.move(box["x"] + spot["x"], box["y"] + spot["y"])
    else:
        page.evaluate("() => { const tl = document.querySelector('.tp-timeline').tpTimeline;"
                      " tl.setView(0, tl.span * 0.45); }")
        page.fill(".tp-search", "aten::(add)?mm$")
    el.screenshot(path=str(png))
    page.close()


def main(argv: list[str]) -> int:
    from playwright.sync_api import sync_playwright

    out_dir = Path(argv[0]) if argv else ROOT / "docs"
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(Path(tmp) / "profile"), executable_path="/usr/bin/chromium", args=ARGS,
            headless=True, viewport={"width": 1400, "height": 900})
        shoot(ctx, report_page(GPU, Path(tmp) / "gpu.html"), out_dir / "timeline-gpu.png",
              focus=(0, 400e3))
        shoot(ctx, report_page(CPU, Path(tmp) / "cpu.html"), out_dir / "timeline-cpu.png",
              focus=None)
        ctx.close()
    print(f"wrote {out_dir / 'timeline-gpu.png'} and {out_dir / 'timeline-cpu.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
