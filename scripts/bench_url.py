"""Benchmark reading the ranks from object storage: local disk vs an S3 server, same job.

    python scripts/bench.py SOURCE --ranks 256 --url [--sizes 1,4] [--runs 1] [--write-docs FILE]

SOURCE is a folder of template traces (e.g. sample_traces/h200x2/ddp/train); for each size
multiplier k (``--sizes``) scripts/make_ranks.py writes an N-rank job (as scripts/bench_ranks.py
does, into --data-dir, reused when present) and the job's files are uploaded to an S3 server
on 127.0.0.1 (moto's ThreadedMotoServer, in this process, on a free port; dummy credentials:
nothing leaves the machine). Then, taking turns, each as its own whole process::

    traceprobe analyze JOB --cluster local -j CORES -f json -o TMP               # local disk
    traceprobe analyze s3://bench/JOB/ --cluster local -j CORES \\
        --storage-option endpoint_url=http://127.0.0.1:PORT -f json -o TMP      # S3 server

The Dask workers read the objects themselves (the client lists the prefix, and receives
summaries). Wall time is ``perf_counter`` around the child; the client's peak memory is its
``VmHWM``. The two reports must be the same JSON once the URL prefix is written as the local
folder: the table says whether they were. The server shares the cores with the workers, so
the S3 rows include the server's own CPU time (a real store's is elsewhere).
"""

from __future__ import annotations

import logging
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import bench_ranks

MARKER = "bench-url"
BUCKET = "bench"
ENV = {"AWS_ACCESS_KEY_ID": "bench-dummy", "AWS_SECRET_ACCESS_KEY": "bench-dummy",
       "AWS_DEFAULT_REGION": "us-east-1", "AWS_CONFIG_FILE": os.devnull,
       "AWS_SHARED_CREDENTIALS_FILE": os.devnull}


class Requests(logging.Handler):
    """Counts the requests the server answers, by method (werkzeug logs one line each)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.counts: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        msg = re.sub(r"\x1b\[[0-9;]*m", "", record.getMessage())  # werkzeug colours a 206
        for method in ("GET", "HEAD", "PUT", "POST"):
            if f'"{method} ' in msg:
                self.counts[method] = self.counts.get(method, 0) + 1

    def take(self) -> dict[str, int]:
        out, self.counts = self.counts, {}
        return out


REQUESTS = Requests()


def start_server() -> tuple[object, str]:
    from moto.server import ThreadedMotoServer

    log = logging.getLogger("werkzeug")
    log.setLevel(logging.INFO)
    log.propagate = False  # counted, not printed
    log.handlers[:] = [REQUESTS]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    return server, f"http://{host}:{port}"


def upload(job: Path, endpoint: str) -> tuple[str, int, int]:
    """Every file of the job folder under ``s3://bench/<job name>/``: (URL, objects, bytes)."""
    import boto3

    c = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ENV["AWS_ACCESS_KEY_ID"],
                     aws_secret_access_key=ENV["AWS_SECRET_ACCESS_KEY"], region_name="us-east-1")
    if BUCKET not in [b["Name"] for b in c.list_buckets().get("Buckets", [])]:
        c.create_bucket(Bucket=BUCKET)
    n = size = 0
    for f in sorted(job.rglob("*")):
        if f.is_file():
            c.upload_file(str(f), BUCKET, f"{job.name}/{f.relative_to(job)}")
            n += 1
            size += f.stat().st_size
    return f"s3://{BUCKET}/{job.name}/", n, size


def bench(source: Path, n: int, sizes: list[int], runs: int, data_dir: Path, log,  # type: ignore[no-untyped-def]
          machine: list[str]) -> str:
    jobs = {k: bench_ranks.make_job(source, n, k, data_dir, log) for k in sizes}
    server, endpoint = start_server()
    os.environ.update({**ENV, "AWS_ENDPOINT_URL_S3": endpoint})  # the children inherit these
    try:
        urls = {}
        for k, job in jobs.items():
            log(f"bench-url: uploading {job} to {endpoint}")
            urls[k] = upload(job, endpoint)
        engines = {"local disk": lambda k: [str(jobs[k]), "--cluster", "local"],
                   "S3 server (moto, 127.0.0.1)": lambda k: [
                       urls[k][0], "--cluster", "local", "--storage-option",
                       f"endpoint_url={endpoint}"]}
        workdir = Path(tempfile.mkdtemp(prefix="traceprobe-bench-url-"))
        results: dict[tuple[int, str], list[tuple[float, float, int]]] = {}
        same: dict[int, bool] = {}
        requests: dict[int, dict[str, int]] = {}
        for r in range(runs):
            for k in sizes:
                texts = {}
                for label, argv in engines.items():
                    log(f"bench-url: run {r + 1}/{runs}, x{k}, {label}")
                    REQUESTS.take()
                    got = bench_ranks.run_args(argv(k), workdir)
                    if label != "local disk":
                        requests[k] = REQUESTS.take()
                    if got[2] != 0:
                        raise SystemExit(f"bench-url: {label} exited {got[2]}")
                    results.setdefault((k, label), []).append(got)
                    texts[label] = (workdir / "out.json").read_text()
                local, s3 = texts.values()
                same[k] = same.get(k, True) and s3.replace(
                    f"s3://{BUCKET}/{jobs[k].name}/", f"{jobs[k]}/") == local
    finally:
        server.stop()  # type: ignore[attr-defined]
    cores = bench_ranks._cores()
    lines = [f"### {n:,} generated ranks on a Dask LocalCluster: local disk vs an S3 server", "",
             *machine,
             f"- Load average when done: {', '.join(f'{x:.1f}' for x in os.getloadavg())} "
             "(other work shares these cores, and the S3 server runs on them too)",
             f"- Job: `scripts/make_ranks.py {source} --ranks {n} --repeat k`, uploaded to moto's "
             f"S3 server on 127.0.0.1; `analyze --cluster local -j {cores}` on the folder and on "
             f"its `s3://` prefix; {runs} run(s) per row, median shown", "",
             "| size k | objects | gzip MB | source | wall s | s per rank (× cores) | "
             "client peak MB | same JSON |",
             "| ---: | ---: | ---: | :--- | ---: | ---: | ---: | :--- |"]
    notes = [""]
    for k in sizes:
        walls = []
        for label in engines:
            rows = results[(k, label)]
            wall = statistics.median(x[0] for x in rows)
            mem = statistics.median(x[1] for x in rows)
            walls.append(wall)
            lines.append(f"| {k} | {urls[k][1]:,} | {urls[k][2] / 1e6:.1f} | {label} | "
                         f"{wall:.1f} | {wall * cores / n:.3f} | {mem:.0f} | "
                         f"{'yes' if same[k] else '**no**'} |")
        extra = walls[1] - walls[0]
        asked = ", ".join(f"{v:,} {m}" for m, v in sorted(requests[k].items()))
        notes.append(f"S3 over local disk at size {k}: {extra / walls[0] * 100:+.1f}% "
                     f"({extra:+.1f} s); the server answered {asked} requests in the last S3 "
                     f"run ({sum(requests[k].values()) / n:.1f} per rank).")
    return "\n".join([*lines, *notes, ""])


def main(a, machine: list[str], write_docs) -> int:  # type: ignore[no-untyped-def]
    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    source = Path(a.trace)
    if not source.exists():
        raise SystemExit(f"bench-url: no such template folder or trace: {source}")
    try:
        import boto3  # noqa: F401
        import moto.server  # noqa: F401
        import s3fs  # noqa: F401
    except ImportError as e:
        raise SystemExit(f"bench-url: needs s3fs and moto[server] ({e}): "
                         "pip install -e '.[s3,test]'") from None
    sizes = sorted({int(x) for x in a.sizes.split(",")})
    t0 = time.perf_counter()
    text = bench(source, a.ranks, sizes, a.runs, a.data_dir, log, machine)
    log(f"bench-url: done in {time.perf_counter() - t0:.0f} s")
    print(text, end="")
    if a.write_docs:
        write_docs(a.write_docs, text, MARKER)
        log(f"bench-url: wrote the report into {a.write_docs}")
    return 0
