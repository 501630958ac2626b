"""`traceprobe ranks` (also `analyze --ranks`): the many-rank summary of one job.

Thin: resolve the trace files, check every output against them, hand the files to
:func:`traceprobe.engines.job.analyze_ranks` (local processes or Dask), render and write.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import click

from traceprobe import output
from traceprobe.cli.options import output_options, pick_format

F = TypeVar("F", bound=Callable[..., Any])
RANKS_AUTO = 16  # analyze: more trace files than this get the many-rank summary
FORMATS = ["text", "json", "markdown", "html"]


def storage_option(f: F) -> F:
    """--storage-option KEY=VALUE (fsspec), for URL paths and -o."""
    return click.option(
        "--storage-option", "storage_option", multiple=True, metavar="KEY=VALUE",
        help="An fsspec storage option for URL paths and -o (repeat for several; VALUE "
        "is JSON or text), e.g. endpoint_url=http://127.0.0.1:9000.")(f)


def engine_options(f: F) -> F:
    """--cluster, --scheduler, --rank: shared by `ranks` and `analyze` (where they imply
    the many-rank summary)."""
    f = click.option("--rank", "rank", type=click.IntRange(min=0), default=None, metavar="R",
                     help="Also show rank R in full.")(f)
    f = click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Summarise the ranks on the Dask cluster at ADDRESS, e.g. "
                     "tcp://host:8786 (also taken from DASK_SCHEDULER_ADDRESS).")(f)
    f = click.option("--cluster", type=click.Choice(["local"]), default=None,
                     help="Summarise the ranks on a new Dask LocalCluster of --jobs workers "
                     "(at most one per core and per trace; pip install 'traceprobe[dask]').")(f)
    return f


@click.command("ranks")
@click.argument("paths", nargs=-1, required=True, metavar="PATH...")
@output_options(FORMATS, force_help="Overwrite an existing --output file or --csv files.")
@click.option("--csv", "csv_dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              metavar="DIR", help="Also write ranks.csv and collectives.csv into DIR.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None, metavar="N",
              help="N worker processes.  [default: one per core]")
@click.option("--top", type=click.IntRange(min=0), default=None, metavar="N",
              help="Show N rows of each table.  [default: 10; JSON: all]")
@engine_options
@storage_option
def ranks(paths: tuple[str, ...], fmt: str | None, output_path: str, force: bool,
          csv_dir: Path | None, jobs: int | None, top: int | None, cluster: str | None,
          scheduler: str | None, rank: int | None, storage_option: tuple[str, ...]) -> None:
    """Summarise trace files as the ranks of one job: rank table, stragglers, collectives.

    PATH is a trace file or a folder of them (one per rank). Each trace is reduced where it
    is read to a small summary; the client never holds a trace. `traceprobe analyze
    --ranks` is the same command (and analyze uses it for more than 16 traces).

    \b
    Example:
        traceprobe ranks job/
        traceprobe ranks job/ --cluster local -j 8 --rank 17
        traceprobe ranks job/ -f json -o job.json --csv job-csv/

    \b
    Exit codes:
        0  the summary was written
        2  usage error (bad option, no such rank)
        3  a trace could not be read or understood
        4  the output exists (use --force), is an input, or cannot be written
    """
    from traceprobe.load import pipeline as loader
    from traceprobe.urls import parse_options

    so = parse_options(storage_option) or None
    output.check_target(output_path, force=force, storage_options=so)
    files = unique([f for p in paths for f in loader.find_traces(p, so)])
    summarise(files, pick_format(fmt, output_path, FORMATS), output_path, force=force,
              csv_dir=csv_dir, jobs=jobs, cluster=cluster, scheduler=scheduler, rank=rank,
              top=top, storage_options=so)


def summarise(files: Sequence[Any], fmt: str, output_path: str, *, force: bool,
              csv_dir: Path | None, jobs: int | None, cluster: str | None,
              scheduler: str | None, rank: int | None, top: int | None,
              storage_options: dict[str, Any] | None = None) -> None:
    """Check the outputs against the inputs, summarise on an engine, render, write."""
    from traceprobe.render.ranks import CSV_FILES, write_ranks_csv

    output.check_outputs([output_path], files, force=force, storage_options=storage_options,
                         directories={csv_dir: CSV_FILES} if csv_dir is not None else None)
    from traceprobe.cli.notices import rank_notices
    from traceprobe.engines.job import analyze_ranks

    data = analyze_ranks(files, cluster=cluster, scheduler=scheduler, jobs=jobs, rank=rank,
                         progress=sys.stderr.isatty(), storage_options=storage_options)
    rank_notices(data)
    color = fmt == "text" and output.is_stdout(output_path) and color_terminal()
    if fmt == "html":
        from traceprobe.render.html import render_html

        text = render_html(data, None, top=top)
    else:
        from traceprobe.render import render

        # colour codes are the renderer's own: the names are made printable before it runs
        text = render(output.printable_data(data) if color else data, fmt, top=top, color=color)
    output.write_text(output_path, text, force=force, raw=color,
                      storage_options=storage_options)
    if csv_dir is not None:
        write_ranks_csv(data, csv_dir, force=force)


def unique(files: list[Any]) -> list[Any]:
    """Each file once (a trace named twice, or through a link, is one trace; a URL by its
    text)."""
    import os

    from traceprobe.urls import is_url

    seen: dict[str, Any] = {}
    for f in files:
        seen.setdefault(str(f) if is_url(f) else os.path.realpath(f), f)
    return list(seen.values())


def color_terminal() -> bool:
    import os

    return sys.stdout.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
