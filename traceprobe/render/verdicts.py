"""The verdicts of ``traceprobe verify`` as text, Markdown or JSON.

    render(verdicts, "text") -> str        # verdicts: the traceprobe.verdicts/1 dict

Reads only the dict (see :mod:`traceprobe.verify`), with ``.get``, so older or newer
files still render. Both human formats show the same content: what was verified on what
machine, a summary (one row per variant), then per variant its claim, the verdict and
why, the figures, and how the trace compares with the wall clock. Figure values are
formatted by the unit the dict's ``units`` map gives them (us, fraction, ratio, count,
bool, text).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from traceprobe.errors import UsageError
from traceprobe.render.units import DASH, UNIT_FORMATS, fmt_count

FORMATS = ("text", "markdown", "json")
WIDTH = 100
ORDER = ("holds", "partly holds", "does not hold", "cannot tell on this machine")

_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_<>[]|#"})


def render(verdicts: Mapping[str, Any], fmt: str = "text") -> str:
    if fmt == "json":
        from traceprobe.render.jsonfmt import render as as_json

        return as_json(verdicts)
    if fmt == "text":
        return text(verdicts)
    if fmt == "markdown":
        return markdown(verdicts)
    raise UsageError(f"Unknown format {fmt!r}; choose one of: {', '.join(FORMATS)}")


# ----------------------------------------------------------------------------- content


def machine_line(d: Mapping[str, Any]) -> str:
    m = d.get("machine") or {}
    gpus = [str(g) for g in m.get("gpus") or []]
    if gpus:
        names = sorted(set(gpus))
        where = ", ".join(f"{gpus.count(n)} x {n}" for n in names)
    else:
        where = "no GPU (CPU only)"
    parts = [where, f"torch {m.get('torch') or DASH}"]
    if m.get("cuda"):
        parts.append(f"CUDA {m['cuda']}")
    if m.get("hostname"):
        parts.append(f"host {m['hostname']}")
    line = ", ".join(parts)
    return line + (f" ({m['note']})" if m.get("note") else "")


def tally(d: Mapping[str, Any]) -> str:
    vs = [v.get("verdict") for v in d.get("verdicts") or []]
    return ", ".join(f"{vs.count(k)} {k}" for k in ORDER if k in vs) or "no verdicts"


def label(name: str) -> str:
    """``cross_device_overlap_us`` -> ``cross device overlap``."""
    for suffix in ("_us",):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name.replace("_", " ")


def value(v: Any, unit: str | None) -> str:
    if isinstance(v, list):
        return "[" + ", ".join(value(x, unit) for x in v) + "]"
    if v is None:
        return DASH
    if isinstance(v, bool) or unit == "bool":
        return "yes" if v else "no"
    if isinstance(v, str):
        return v
    if unit in UNIT_FORMATS:
        return UNIT_FORMATS[unit](v)
    if float(v).is_integer():
        return fmt_count(v)
    return f"{v:.3g}"


def figure_pairs(d: Mapping[str, Any], verdict: Mapping[str, Any]) -> list[tuple[str, str]]:
    units = d.get("units") or {}
    return [(label(k), value(x, units.get(k))) for k, x in (verdict.get("figures") or {}).items()]


def title(v: Mapping[str, Any]) -> str:
    """``workload/variant``, or the variant's folder when it says more (several recordings)."""
    name = f"{v.get('workload', '?')}/{v.get('variant', '?')}"
    folder = str(v.get("folder") or "")
    return folder if folder not in ("", ".") and folder != name else name


# ----------------------------------------------------------------------------- text


def text(d: Mapping[str, Any]) -> str:
    verdicts = list(d.get("verdicts") or [])
    out = [f"traceprobe verify: {d.get('source', '?')}", f"  machine: {machine_line(d)}",
           f"  {len(verdicts)} variant(s): {tally(d)}", ""]
    width = max([len(title(v)) for v in verdicts] + [len("variant")])
    out.append(f"  {'variant'.ljust(width)}  verdict")
    out.append(f"  {'-' * width}  {'-' * len(ORDER[2])}")
    out += [f"  {title(v).ljust(width)}  {v.get('verdict', '?')}" for v in verdicts]
    for v in verdicts:
        out += ["", f"{title(v)}: {v.get('verdict', '?')}"]
        out += _field("claim", v.get("claim"))
        out += _field("why", v.get("why"))
        figs = "; ".join(f"{k} {x}" for k, x in figure_pairs(d, v))
        out += _field("figures", figs)
        out += _field("wall", v.get("wall_clock"))
        for n in v.get("notices") or ():
            out += _field("input", n)
    return "\n".join(out) + "\n"


def _field(name: str, body: Any) -> list[str]:
    if not body:
        return []
    head = f"  {name:<8} "
    return textwrap.wrap(" ".join(str(body).split()), WIDTH, initial_indent=head,
                         subsequent_indent=" " * len(head), break_on_hyphens=False)


# ----------------------------------------------------------------------------- markdown


def _md(s: Any) -> str:
    return " ".join(str(s).split()).translate(_MD_SPECIAL)


def markdown(d: Mapping[str, Any]) -> str:
    verdicts = list(d.get("verdicts") or [])
    out = [f"# traceprobe verify: `{d.get('source', '?')}`", "",
           f"Machine: {_md(machine_line(d))}<br>", f"{len(verdicts)} variant(s): {tally(d)}", "",
           "| variant | verdict | why |", "| :--- | :--- | :--- |"]
    out += [f"| `{title(v)}` | {_md(v.get('verdict', '?'))} | {_md(v.get('why', ''))} |"
            for v in verdicts]
    for v in verdicts:
        out += ["", f"## `{title(v)}`: {_md(v.get('verdict', '?'))}", ""]
        out += [f"> {_md(v.get('claim', ''))}", "", f"**Why:** {_md(v.get('why', ''))}", ""]
        pairs = figure_pairs(d, v)
        if pairs:
            out += ["| figure | value |", "| :--- | ---: |"]
            out += [f"| {_md(k)} | {_md(x)} |" for k, x in pairs]
            out.append("")
        if v.get("wall_clock"):
            out.append(f"**Wall clock:** {_md(v['wall_clock'])}")
        for n in v.get("notices") or ():
            out += ["", f"**Input:** {_md(n)}"]
    return "\n".join(out).rstrip() + "\n"
