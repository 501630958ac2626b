"""What ``traceprobe profile`` prints at the end: what the trace holds, the analyze
headlines, where it is, and the commands to go further.

Reads only the run's metadata and traces; the headlines come from
:func:`traceprobe.report.analyze`, and are left out (saying why) where the analysis
wing's dependencies are not installed, e.g. on a GPU box with torch only.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from traceprobe.record.profile.target import Target
from traceprobe.record.registry import Schedule


def steps_phrase(steps: list[int], partial: int | None) -> str:
    """``3 steps (ProfilerStep#5-#7)``, plus the step in progress when one was cut short."""
    n = len(steps)
    text = f"{n} complete step{'s' if n != 1 else ''}"
    if steps:
        text += f" (ProfilerStep#{steps[0]}" + (f"-#{steps[-1]})" if n > 1 else ")")
    if partial is not None:
        text += f" + ProfilerStep#{partial}, in progress when it stopped"
    return text


def _ended(m: dict[str, Any]) -> str:
    how = m.get("ended")
    status = m["exit_status"]
    if how == "SIGTERM":
        return f"terminated by SIGTERM (exit status {status})"
    if how == "SIGINT":
        return f"interrupted by Ctrl-C (exit status {status})"
    if status:
        return f"failed (exit status {status})"
    return "finished (exit status 0)"


def text(folder: Path, m: dict[str, Any]) -> str:
    p = m["profiler"]
    t = m["timing"]
    target = "python " + shlex.join(
        [m["target"]["name"], *m["target"]["args"]]
        if m["target"]["kind"] == "script"
        else ["-m", m["target"]["name"], *m["target"]["args"]]
    )
    ranks = f" on {len(m['ranks'])} ranks" if m["world_size"] > 1 else ""
    source = {
        "optimizer": "optimizer steps",
        "step-on": f"ends of {p['step_on']!r}",
        "windows": f"time windows of {p['window_ms']:g} ms",
    }[p["step_source"]]
    lines = [f"traceprobe: `{target}`{ranks} {_ended(m)}."]
    failed = [r.get("failed_at") for r in m.get("ranks") or [] if r.get("failed_at")]
    if failed and m["exit_status"]:
        lines.append(f"  It failed here: {failed[0]}.")
    lines.append(
        f"  Trace{'s' if len(m['traces']) != 1 else ''}: {len(m['traces'])} file(s) holding "
        f"{steps_phrase(p['profiled_steps'], p['partial_step'])}"
        + (" per rank" if ranks else "")
        + f"; steps are {source}."
    )
    if p["fell_back_to_windows"]:
        lines.append(
            f"  No optimizer stepped in the first {p['window_after_s']:g} s: fell back to "
            f"time windows of {p['window_ms']:g} ms (--step-on NAME to choose the step)."
        )
    overhead = t["step_overhead"]
    n_active, n_plain = t.get("step_overhead_of") or (None, None)
    of = (f" (medians of {n_active} recorded and {n_plain} unprofiled steps)"
          if n_active is not None else "")
    lines.append(
        f"  Script {t['script_wall_s']:.2f} s, of which {t['profiler_window_s']:.2f} s under the "
        f"profiler"
        + (
            f"; a recorded step took {overhead:.2f}x an unprofiled one{of}"
            if overhead is not None
            else ""
        )
        + "."
    )
    lines += outlier_lines(t.get("outlier_steps") or [])
    lines += headlines(folder)
    out = shlex.quote(str(folder))
    logdir = shlex.quote(str(folder.parent))
    lines += [
        f"  Written to {folder}/ ({', '.join(x['file'] for x in m['traces'])})",
        "  Go further:",
        f"    traceprobe analyze {out}",
        f"    traceprobe analyze {out} --step all --format html -o report.html",
        f"    tensorboard --logdir {logdir}",
    ]
    return "\n".join(lines)


def outlier_lines(out: list[dict[str, Any]]) -> list[str]:
    """``Outlier step: #7 (active) took 715 ms, 15.5x the median step (46.1 ms)...``."""
    if not out:
        return []
    each = ", ".join(f"#{o['index']} ({o['phase']}) took {o['wall_s'] * 1000:.0f} ms, "
                     f"{o['times_median']:.1f}x" for o in out)
    noun = "Outlier step" if len(out) == 1 else "Outlier steps"
    return [f"  {noun}: {each} the median step ({out[0]['median_s'] * 1000:.1f} ms); left out "
            "of the recorded-vs-unprofiled ratio (an outlier is the script's, not the "
            "profiler's)."]


def headlines(folder: Path) -> list[str]:
    """The analyze headlines of each trace in ``folder`` (one block per rank)."""
    try:
        from traceprobe import report
        from traceprobe.load import pipeline
    except ImportError as e:
        return [f"  (no headlines: {e}; `pip install traceprobe` to analyze)"]
    try:
        files = pipeline.find_traces(folder)
        reports = [report.analyze(t) for t in pipeline.load_many(files, jobs=1)]
    except Exception as e:  # noqa: BLE001 - the trace is written; say why there is no summary
        return [f"  (no headlines: {type(e).__name__}: {e})"]
    lines: list[str] = []
    for r in reports:
        who = f"rank {r.rank}" if r.rank is not None and len(reports) > 1 else "Headlines"
        lines.append(f"  {who}:")
        lines += [f"    * {h}" for h in r.headlines]
    return lines


def no_trace(target: Target, res: dict[str, Any], s: Schedule, host_steps: int = 0) -> str:
    """Why no trace was written: the script failed before the schedule recorded a step (it
    says where), or it ended before that (the schedule was too long for it)."""
    first = host_steps + s.wait + s.warmup + 2  # the first boundary starts the profiler
    kind = {"optimizer": "optimizer steps", "step-on": "steps", "windows": "time windows"}
    host = f" --host-steps {host_steps}" if host_steps else ""
    if res.get("failed_at") and res["exit_status"] not in (0, 130, 143):
        return (
            f"traceprobe: no trace written: `{target.label}` failed (exit status "
            f"{res['exit_status']}) after {res['boundaries']} {kind[res['step_source']]}, "
            f"before the first recorded step: {res['failed_at']}; fix the script there (the "
            "traceback is above) and profile it again"
        )
    return (
        f"traceprobe: no trace written: `{target.label}` ended (exit status "
        f"{res['exit_status']}) after {res['boundaries']} {kind[res['step_source']]}; with "
        f"--wait {s.wait} --warmup {s.warmup}{host} the first recorded step ends at step "
        f"{first}: lower them, or use --step-on NAME / --window-after 0"
    )
