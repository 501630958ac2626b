"""The roofline chart of a report's ``efficiency`` section: one point per op shape
(arithmetic intensity in FLOP/byte against achieved TFLOP/s, log-log, area by kernel time),
under the device's roof (``min(peak, intensity x bandwidth)``, one line per peak the points
use). ``roofline_svg`` for the HTML report (inline SVG, no script), ``draw_roofline`` for
``--plot`` (a matplotlib Axes). Drawn from the report's figures only.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from html import escape
from typing import Any

W, H, PAD_L, PAD_B, PAD_T, PAD_R = 640, 360, 60, 40, 16, 120
COLORS = {"gemm": "#1f77b4", "attention": "#9467bd", "convolution": "#2ca02c",
          "elementwise": "#ff7f0e", "reduction": "#8c564b", "norm": "#e377c2",
          "copy": "#7f7f7f", "communication": "#17becf", "other": "#bcbd22"}


def chart_data(e: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """Points, roofs and the axes' ranges; None when no row has a rate and an intensity."""
    if not isinstance(e, Mapping):
        return None
    pts = [r for r in e.get("rows") or []
           if r.get("tflops") and r.get("intensity") and r["tflops"] > 0 and r["intensity"] > 0]
    if not pts:
        return None
    roof = e.get("roof")
    peaks: dict[str, float] = {}
    bw = None
    if roof:
        bw = float(roof["bandwidth_gbs"]) / 1e3  # TB/s: TFLOP/s per FLOP/byte
        for r in pts:
            k = r.get("peak_key")
            if k and r.get("peak_tflops"):
                peaks[k] = float(r["peak_tflops"])
    xs = [float(r["intensity"]) for r in pts]
    ys = [float(r["tflops"]) for r in pts] + list(peaks.values())
    x0, x1 = 10 ** math.floor(math.log10(min(xs))), 10 ** math.ceil(math.log10(max(xs) * 2))
    y0, y1 = 10 ** math.floor(math.log10(min(ys))), 10 ** math.ceil(math.log10(max(ys) * 1.5))
    total = sum(float(r.get("time_us") or 0) for r in pts) or 1.0
    return {"points": [(float(r["intensity"]), float(r["tflops"]),
                        float(r.get("time_us") or 0) / total, str(r.get("category")),
                        f"{r.get('op') or r.get('kernel')} {r.get('input_dims') or ''}")
                       for r in pts],
            "peaks": peaks, "bandwidth": bw, "x": (x0, x1), "y": (y0, y1),
            "device": str(e.get("device") or "")}


def roofline_svg(e: Mapping[str, Any] | None) -> str | None:
    d = chart_data(e)
    if d is None:
        return None
    (x0, x1), (y0, y1) = d["x"], d["y"]
    pw, ph = W - PAD_L - PAD_R, H - PAD_T - PAD_B

    def px(x: float) -> float:
        return PAD_L + pw * (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))

    def py(y: float) -> float:
        return PAD_T + ph * (1 - (math.log10(y) - math.log10(y0)) /
                             (math.log10(y1) - math.log10(y0)))

    out = [f'<svg class="tp-roofline" xmlns="http://www.w3.org/2000/svg" width="{W}" '
           f'height="{H}" viewBox="0 0 {W} {H}" font-size="11" font-family="sans-serif">',
           f'<rect x="{PAD_L}" y="{PAD_T}" width="{pw}" height="{ph}" fill="#fafafa" '
           'stroke="#ccc"/>']
    for k in range(round(math.log10(x0)), round(math.log10(x1)) + 1):
        out.append(f'<text x="{px(10 ** k):.1f}" y="{H - PAD_B + 14}" text-anchor="middle">'
                   f'{10 ** k:g}</text>')
    for k in range(round(math.log10(y0)), round(math.log10(y1)) + 1):
        out.append(f'<text x="{PAD_L - 4}" y="{py(10 ** k) + 4:.1f}" text-anchor="end">'
                   f'{10 ** k:g}</text>')
    out.append(f'<text x="{PAD_L + pw / 2}" y="{H - 6}" text-anchor="middle">arithmetic '
               'intensity (FLOP/byte)</text>')
    out.append(f'<text x="14" y="{PAD_T + ph / 2}" text-anchor="middle" '
               f'transform="rotate(-90 14 {PAD_T + ph / 2})">achieved TFLOP/s</text>')
    bw = d["bandwidth"]
    for key, peak in sorted(d["peaks"].items(), key=lambda kv: kv[1]):
        ridge = peak / bw
        xa = max(x0, y0 / bw)
        pts = [(xa, xa * bw), (min(ridge, x1), min(ridge, x1) * bw), (x1, peak)]
        if ridge >= x1:
            pts = pts[:2]
        path = " ".join(f"{px(x):.1f},{py(min(y, y1)):.1f}" for x, y in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="#444" stroke-width="1.2"/>')
        out.append(f'<text x="{W - PAD_R + 4}" y="{py(peak) + 4:.1f}">{escape(key)} '
                   f'{peak:g}</text>')
    for x, y, share, cat, label in d["points"]:
        r = 3 + 12 * math.sqrt(share)
        c = COLORS.get(cat, "#333")
        out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="{r:.1f}" fill="{c}" '
                   f'fill-opacity="0.6" stroke="{c}"><title>{escape(label)} ({cat}): '
                   f'{y:.3g} TFLOP/s at {x:.3g} FLOP/byte</title></circle>')
    cats = sorted({p[3] for p in d["points"]})
    for i, cat in enumerate(cats):
        yy = PAD_T + ph - 14 * (len(cats) - i)
        out.append(f'<circle cx="{W - PAD_R + 10}" cy="{yy}" r="4" '
                   f'fill="{COLORS.get(cat, "#333")}"/><text x="{W - PAD_R + 18}" '
                   f'y="{yy + 4}">{escape(cat)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def draw_roofline(ax: Any, e: Mapping[str, Any] | None) -> bool:
    """Draw the chart on a matplotlib Axes; False (nothing drawn) without data."""
    d = chart_data(e)
    if d is None:
        return False
    (x0, x1), (y0, y1) = d["x"], d["y"]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    bw = d["bandwidth"]
    for key, peak in d["peaks"].items():
        xs = [x0, peak / bw, x1]
        ax.plot(xs, [min(x * bw, peak) for x in xs], color="#444", linewidth=1)
        ax.text(x1, peak, f" {key} {peak:g}", fontsize=7, va="center")
    for cat in sorted({p[3] for p in d["points"]}):
        ps = [p for p in d["points"] if p[3] == cat]
        ax.scatter([p[0] for p in ps], [p[1] for p in ps], s=[12 + 300 * p[2] for p in ps],
                   alpha=0.6, color=COLORS.get(cat, "#333"), label=cat)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)", fontsize=8)
    ax.set_ylabel("achieved TFLOP/s", fontsize=8)
    ax.set_title(f"Roofline: op shapes on {d['device']}", fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="upper left")
    ax.tick_params(labelsize=7)
    return True
