"""`traceprobe analyze`: load traces, analyze them, render the report, write it.

Thin: it resolves paths and options and calls the library (loader → report →
render → output); every figure comes from :mod:`traceprobe.report`.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any, Literal

import click

from traceprobe import output
from traceprobe.cli.notices import notices
from traceprobe.cli.window import window_option
from traceprobe.errors import TraceError
from traceprobe.render import formats

RANKS_AUTO = 16  # more trace files than this: the many-rank summary (as with --ranks)
_SUFFIX_FORMATS = {".json": "json", ".md": "markdown", ".markdown": "markdown", ".html": "html"}


class StepParam(click.ParamType):
    """``--step``: a ProfilerStep number, or ``all``."""

    name = "N|all"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) or value == "all":
            return value
        text = str(value).strip().lower()
        if text == "all":
            return "all"
        try:
            n = int(text)
        except ValueError:
            self.fail(f"{value!r} is neither a step number nor 'all'", param, ctx)
        if n < 0:
            self.fail(f"step numbers are 0 or more, not {n}", param, ctx)
        return n


@click.command("analyze")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@click.option("-f", "--format", "fmt", type=click.Choice([*formats(), "html"]), default=None,
              help="Report format.  [default: from the --output suffix (.json, .md), else text]")
@click.option("-o", "--output", "output_path", default=output.STDOUT, metavar="FILE",
              show_default=True, help="Write the report to FILE ('-': standard output).")
@click.option("--force", is_flag=True, help="Overwrite an existing --output file or --csv files.")
@click.option("--step", type=StepParam(), default=None, metavar="N|all",
              help="Analyse only ProfilerStep N; 'all': the whole trace and each step.")
@window_option
@click.option("-d", "--device", "devices", type=click.IntRange(min=0), multiple=True,
              metavar="D", help="Only GPU D (repeat for several).  [default: every GPU]")
@click.option("--csv", "csv_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="DIR", help="Also write the event frames and per-GPU/per-stream "
              "figures as CSV files into DIR.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="Load with N processes; more than the files splits each file between "
              "them.  [default: one per file, up to the cores]")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), default=None,
              metavar="PNG", help="Also draw the timeline as a static PNG (one per trace).")
@click.option("--tensorboard", "tb", is_flag=True,
              help="Also write per-step figures as TensorBoard scalars beside each trace.")
@click.option("--top", type=click.IntRange(min=0), default=None, metavar="N",
              help="Show N top kernels and CPU ops.  [default: 10; JSON: all the report has]")
@click.option("--strict", is_flag=True,
              help="Refuse a trace that was cut short (exit 3) instead of analysing the "
              "complete events before the cut.")
@click.option("--skip-bad", is_flag=True,
              help="Exit 0 when some traces of several cannot be read (each is still named "
              "on stderr and left out of the report).")
@click.option("--hta", is_flag=True,
              help="Also run HolisticTraceAnalysis on each trace (pip install "
              "'traceprobe[hta]') and add its per-rank breakdowns to the report as \"hta\" "
              "(JSON only; other formats leave them out).")
@click.option("--ranks", "ranks_mode", is_flag=True,
              help="Summarise the traces as the ranks of one job: rank table, stragglers, "
              f"collectives (automatic above {RANKS_AUTO} traces).")
@click.option("--cluster", type=click.Choice(["local"]), default=None,
              help="Summarise the ranks on a new Dask LocalCluster of --jobs workers "
              "(pip install 'traceprobe[dask]'); implies --ranks.")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="Summarise the ranks on the Dask cluster at ADDRESS, e.g. "
              "tcp://host:8786 (also taken from DASK_SCHEDULER_ADDRESS); implies --ranks.")
@click.option("--rank", "rank", type=click.IntRange(min=0), default=None, metavar="R",
              help="With the many-rank summary, also show rank R in full; implies --ranks.")
@click.option("--storage-option", "storage_option", multiple=True, metavar="KEY=VALUE",
              help="An fsspec storage option for URL paths and -o (repeat for several; VALUE "
              "is JSON or text), e.g. endpoint_url=http://127.0.0.1:9000.")
def analyze(
    paths: tuple[str, ...],
    fmt: str | None,
    output_path: str,
    force: bool,
    step: int | Literal["all"] | None,
    window: str,
    devices: tuple[int, ...],
    csv_dir: Path | None,
    jobs: int | None,
    plot_path: str | None,
    tb: bool,
    top: int | None,
    strict: bool,
    skip_bad: bool,
    hta: bool,
    ranks_mode: bool = False,
    cluster: str | None = None,
    scheduler: str | None = None,
    rank: int | None = None,
    storage_option: tuple[str, ...] = (),
) -> None:
    """Measure overlap in PyTorch Profiler (Kineto) traces.

    PATH is a trace file (.json or .json.gz) or a directory of them. For each
    trace: how busy each GPU was, how much GPUs, streams, copies and compute
    overlapped, and what the host did while a GPU sat idle. Several traces get
    one section each, plus their overlap with each other (one host clock
    assumed, e.g. one trace per rank).

    \b
    Example:
        traceprobe analyze run.pt.trace.json.gz
        traceprobe analyze traces/ --format json --output report.json
        traceprobe analyze run.json.gz --step all --device 0 --csv frames/
        traceprobe analyze run.json.gz --format html --output report.html --plot timeline.png
        traceprobe analyze s3://bucket/job/ --cluster local -f json -o s3://bucket/report.json

    A trace cut short (a job killed while the profiler wrote it) is salvaged: the
    complete events before the cut are analysed, stderr and the report say so
    (--strict refuses it instead). Of several traces, one that cannot be read is
    named on stderr and left out; the others are reported (exit 3 unless --skip-bad).
    No output may be one of the inputs, whatever --force says.

    PATH may be an fsspec URL (s3://, gs://, az://, http(s)://, file://): an object, a
    prefix (searched as a folder) or a glob (s3://bucket/job/rank*.json.gz). Credentials
    and endpoints come from the environment (AWS_*, FSSPEC_S3_ENDPOINT_URL, ...) and
    --storage-option; each worker opens its own URLs.

    \b
    Exit codes:
        0  the report was written
        2  usage error (bad option or argument, a --device the traces lack)
        3  a trace could not be read or understood (the message names the file),
           or was cut short under --strict
        4  the output exists (use --force), is an input, or cannot be written
    """
    from traceprobe.load import pipeline as loader
    from traceprobe.urls import is_url, parse_options

    so = parse_options(storage_option) or None
    fmt = fmt or _SUFFIX_FORMATS.get(Path(output_path).suffix.lower(), "text")
    # refuse before loading anything
    output.check_target(output_path, force=force, storage_options=so)
    urls = [p for p in paths if is_url(p)]
    if urls and (tb or hta):
        from traceprobe.errors import UsageError

        raise UsageError(f"{'--tensorboard' if tb else '--hta'} reads or writes beside each "
                         f"trace on local disk, not at a URL ({urls[0]}); copy the traces "
                         "to a local folder for it")
    for flag, value in (("--csv", csv_dir), ("--plot", plot_path)):
        # click made a Path of it, which folds "s3://b" into "s3:/b"
        if value is not None and re.match(r"[A-Za-z][A-Za-z0-9+.\-]+:/", str(value)):
            from traceprobe.errors import UsageError

            raise UsageError(f"{flag} writes local files, and {value} looks like a URL; give "
                             "a local path (of the outputs, only -o may be a URL)")
    if hta:
        from traceprobe import hta_bridge

        hta_bridge.require()
    if csv_dir is not None:
        from traceprobe.render.csv import FILES  # pandas: only when asked for CSV

        output.check_directory(csv_dir, list(FILES), force=force)

    files = _unique([f for p in paths for f in loader.find_traces(p, so)])
    output.check_not_input(output_path, files)
    if csv_dir is not None:
        for name in FILES:
            output.check_not_input(csv_dir / name, files)
    if ranks_mode or cluster or scheduler or rank is not None or len(files) > RANKS_AUTO:
        _analyze_ranks(files, fmt, output_path, force=force, csv_dir=csv_dir, jobs=jobs,
                       cluster=cluster, scheduler=scheduler, rank=rank, top=top,
                       storage_options=so,
                       refused={"--step": step is not None, "--device": bool(devices),
                                "--window": window != "steps",
                                "--plot": plot_path is not None, "--tensorboard": tb,
                                "--hta": hta})
        return
    if plot_path is not None:
        from traceprobe.render.plot import plot_targets

        for target in plot_targets(plot_path, len(files)):
            output.check_target(target, force=force)
            output.check_not_input(target, files)
    if tb:
        _check_tensorboard(files, force=force)
    progress = len(files) > 1 and sys.stderr.isatty()
    errors: list[TraceError] = []
    with loader.start(files, jobs=jobs, storage_options=so) as loading:
        # the analysis stack (pandas) is imported while worker processes decode
        from traceprobe import report as rp
        from traceprobe.render import as_dict, render

        timelines = loading.result(progress=progress, errors=errors)
        files = loading.loaded
    for e in errors:
        click.echo(f"traceprobe: error: {e}", err=True)
    if not timelines:
        raise click.exceptions.Exit(TraceError.exit_code)
    notices(timelines, strict=strict)
    only = list(devices) or None
    if only is not None:
        from traceprobe.report.build import check_devices

        check_devices(timelines, only)
    streamed = None  # one trace's JSON alone: written a step at a time (render.jsonfmt.pieces)
    if len(timelines) == 1:
        report = rp.analyze(timelines[0], step=step, devices=only, window=window)
        if fmt == "json" and not (hta or csv_dir is not None or plot_path is not None):
            from traceprobe.render.jsonfmt import pieces

            streamed = pieces(report, top=top)
        data = {} if streamed is not None else as_dict(report)
        del report
        per_trace = [data]
    else:
        multi = rp.analyze_many(timelines, step=step, devices=only, window=window)
        data = as_dict(multi)
        per_trace = list(data["traces"])
    if hta:
        for failure in hta_bridge.add_hta([Path(f) for f in files], per_trace):
            click.echo(f"traceprobe: warning: {failure}", err=True)

    color = fmt == "text" and output.is_stdout(output_path) and _color_terminal()
    if streamed is not None:
        output.write_pieces(output_path, streamed, force=force, storage_options=so)
    else:
        if fmt == "html":
            from traceprobe.render.html import render_html

            text = render_html(data, timelines, top=top)
        else:
            text = render(data, fmt, top=top, color=color)
        if (len(timelines) > 1 and fmt in ("text", "markdown") and window == "steps"
                and step is None and only is None):
            text = _with_job_lines(text, files, timelines, multi.reports)
        output.write_text(output_path, text, force=force, storage_options=so)
    if csv_dir is not None:
        from traceprobe.render.csv import write_csv

        write_csv(timelines, csv_dir, reports=per_trace, force=force)
    if plot_path is not None:
        from traceprobe.render.plot import write_plots

        write_plots(timelines, per_trace, plot_path, force=force)
    if tb:
        _write_tensorboard(files, timelines, force=force)
    if errors and not skip_bad:
        raise click.exceptions.Exit(TraceError.exit_code)


def _with_job_lines(
    text: str, files: list[Path | str], timelines: list, reports: Any
) -> str:
    """The cross-rank headline and the ``--ranks`` hint after the per-trace report, when
    some of the traces are ranks of one job (traceprobe.ranks.jobs)."""
    from traceprobe.ranks.jobs import job_lines

    lines = job_lines(files, timelines, reports)
    return text if not lines else text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"


def _unique(files: list[Path | str]) -> list[Path | str]:
    """Each file once (a trace named twice, or through a link, is one trace; a URL by its
    text)."""
    from traceprobe.urls import is_url

    seen: dict[str, Path | str] = {}
    for f in files:
        seen.setdefault(str(f) if is_url(f) else os.path.realpath(f), f)
    return list(seen.values())


def _check_tensorboard(files: list[Path | str], *, force: bool) -> None:
    from traceprobe import tensorboard

    groups: dict[Path, list[Path]] = {}
    for f in files:
        groups.setdefault(Path(f).parent, []).append(Path(f))
    for run_dir, traces in groups.items():
        tensorboard.check_targets(run_dir, traces, force=force)


def _analyze_ranks(files: list[Path | str], fmt: str, output_path: str, *, force: bool,
                   csv_dir: Path | None, jobs: int | None, cluster: str | None,
                   scheduler: str | None, rank: int | None, top: int | None,
                   refused: dict[str, bool], storage_options: dict | None = None) -> None:
    """The many-rank summary (traceprobe.engines.job): per-rank summaries on an engine."""
    from traceprobe.errors import UsageError

    bad = [name for name, given in refused.items() if given]
    if bad:
        raise UsageError(f"{', '.join(bad)} cannot be used with the many-rank summary "
                         "(--ranks, --cluster, --scheduler, --rank, or more than "
                         f"{RANKS_AUTO} traces); analyse one rank's file for them")
    if csv_dir is not None:
        from traceprobe.render.ranks import CSV_FILES, write_ranks_csv

        output.check_directory(csv_dir, list(CSV_FILES), force=force)
    from traceprobe.engines.job import analyze_ranks

    data = analyze_ranks(files, cluster=cluster, scheduler=scheduler, jobs=jobs, rank=rank,
                         progress=sys.stderr.isatty(), storage_options=storage_options)
    if fmt == "html":
        from traceprobe.render.html import render_html

        text = render_html(data, None, top=top)
    else:
        from traceprobe.render import render

        text = render(data, fmt, top=top, color=fmt == "text" and output.is_stdout(output_path)
                      and _color_terminal())
    output.write_text(output_path, text, force=force, storage_options=storage_options)
    if csv_dir is not None:
        write_ranks_csv(data, csv_dir, force=force)


def _write_tensorboard(files: list[Path | str], timelines: list, *, force: bool) -> None:
    """Per-step scalars into ``<trace dir>/traceprobe/``, one run per directory of traces."""
    from traceprobe import report as rp
    from traceprobe import tensorboard

    groups: dict[Path, list[dict]] = {}
    for f, tl in zip(files, timelines, strict=True):
        groups.setdefault(Path(f).parent, []).append(rp.analyze(tl, step="all").to_dict())
    for run_dir, reports in groups.items():
        tensorboard.write_scalars(run_dir, reports, force=force)


def _color_terminal() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
