"""Traces read from a real S3-compatible server (moto's, on 127.0.0.1, started here).

The server is moto's ThreadedMotoServer on a free loopback port; the credentials are an IAM
user and access key that the server itself issued (no real AWS account, and every request
goes to the loopback endpoint: ``AWS_ENDPOINT_URL_S3`` points there too, so a forgotten
endpoint can never reach AWS). Once the committed DDP rank traces are uploaded the server is
told to check every request's signature and policy (moto's ``/moto-api/reset-auth``), so
"wrong credentials" is the server refusing an unknown key, as S3 does.

Each URL run is checked against the same command on the local copy: the JSON must be
identical once the URL prefix is written as the local folder (the only fields that differ
name the trace).
"""

from __future__ import annotations

import gzip
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("s3fs")
pytest.importorskip("moto.server")

import boto3  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

from traceprobe.cli import main  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "sample_traces"
JOBS = ("h200x2/ddp/train", "cpu/ddp/train")
BUCKET = "traces"
POLICY = {"Version": "2012-10-17",
          "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}


class Server:
    def __init__(self, endpoint: str, key: str, secret: str, stranger: tuple[str, str]) -> None:
        self.endpoint, self.key, self.secret = endpoint, key, secret
        self.stranger = stranger  # a user the server knows, with no policy: every read denied

    def env(self, key: str | None = None, secret: str | None = None) -> dict[str, str]:
        return {"AWS_ACCESS_KEY_ID": key or self.key,
                "AWS_SECRET_ACCESS_KEY": secret or self.secret,
                "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL_S3": self.endpoint}


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """moto's S3 on 127.0.0.1: bucket ``traces`` holding the DDP sample folders as they are
    committed (traces, metadata, logs, TensorBoard files), a prefix ``bad/`` with a gzip
    trace cut in half, and ``mixed/`` with two good ranks and one unreadable object."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    with pytest.MonkeyPatch.context() as mp:
        for k in [k for k in os.environ if k.startswith(("AWS_", "FSSPEC_"))]:
            mp.delenv(k)
        mp.setenv("AWS_ACCESS_KEY_ID", "setup-dummy")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "setup-dummy")
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        mp.setenv("AWS_CONFIG_FILE", os.devnull)
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        mp.setenv("AWS_ENDPOINT_URL_S3", endpoint)
        try:
            iam = boto3.client("iam", endpoint_url=endpoint)
            iam.create_user(UserName="reader")
            iam.put_user_policy(UserName="reader", PolicyName="s3",
                                PolicyDocument=json.dumps(POLICY))
            key = iam.create_access_key(UserName="reader")["AccessKey"]
            iam.create_user(UserName="stranger")
            other = iam.create_access_key(UserName="stranger")["AccessKey"]
            c = boto3.client("s3", endpoint_url=endpoint)
            c.create_bucket(Bucket=BUCKET)
            for job in JOBS:
                for f in sorted((SAMPLES / job).rglob("*")):
                    if f.is_file():
                        c.upload_file(str(f), BUCKET, f"{job}/{f.relative_to(SAMPLES / job)}")
            ranks = sorted((SAMPLES / JOBS[0]).glob("*.pt.trace.json.gz"))
            whole = ranks[0].read_bytes()
            c.put_object(Bucket=BUCKET, Key=f"bad/{ranks[0].name}", Body=whole[: len(whole) // 2])
            for f in ranks:
                c.upload_file(str(f), BUCKET, f"mixed/{f.name}")
            c.put_object(Bucket=BUCKET, Key="mixed/zz_rank2.pt.trace.json",
                         Body=b'{"traceEvents": [{"ph": "X", "ts": ')
            req = urllib.request.Request(f"{endpoint}/moto-api/reset-auth", data=b"0",
                                         method="POST", headers={"Content-Type": "text/plain"})
            urllib.request.urlopen(req, timeout=10).read()  # from now on: signatures checked
            yield Server(endpoint, key["AccessKeyId"], key["SecretAccessKey"],
                         (other["AccessKeyId"], other["SecretAccessKey"]))
        finally:
            server.stop()


def _cli(tmp: Path, s3: Server, *args: str, env: dict[str, str] | None = None,
         out: str | None = None) -> tuple[int, str]:
    """``traceprobe analyze ARGS -f json -o OUT`` in this process, with the server's
    credentials in the environment (as the Dask workers it starts inherit them)."""
    target = out or str(tmp / f"out{len(list(tmp.iterdir()))}.json")
    _forget_connections()
    with pytest.MonkeyPatch.context() as mp:
        for k, v in (env or s3.env()).items():
            mp.setenv(k, v)
        rc = main(["analyze", *args, "-f", "json", "-o", target])
    text = Path(target).read_text() if out is None and Path(target).exists() else ""
    return rc, text


def _forget_connections() -> None:
    """fsspec keeps one S3FileSystem per set of options, with the credentials it first read:
    each command here starts without one, as a new process would."""
    import s3fs

    s3fs.S3FileSystem.clear_instance_cache()


def _local(tmp: Path, *args: str) -> str:
    target = tmp / f"local{len(list(tmp.iterdir()))}.json"
    assert main(["analyze", *args, "-f", "json", "-o", str(target)]) == 0
    return target.read_text()


def _as_local(text: str) -> str:
    """The URL run's JSON with each URL written as the local path it was uploaded from."""
    return text.replace(f"s3://{BUCKET}/", f"{SAMPLES}/")


def _url(job: str, name: str = "") -> str:
    return f"s3://{BUCKET}/{job}/{name}"


def _first(job: str) -> str:
    return sorted((SAMPLES / job).glob("*.pt.trace.json.gz"))[0].name


def _opt(s3: Server) -> list[str]:
    return ["--storage-option", f"endpoint_url={s3.endpoint}"]


# ----------------------------------------------------------------------------- same JSON


def test_one_object_gives_the_local_json(s3: Server, tmp_path: Path) -> None:
    name = _first(JOBS[0])
    rc, text = _cli(tmp_path, s3, _url(JOBS[0], name), *_opt(s3))
    assert rc == 0
    assert _url(JOBS[0], name) in text
    assert _as_local(text) == _local(tmp_path, str(SAMPLES / JOBS[0] / name))


@pytest.mark.parametrize("engine", [["--ranks", "-j", "2"], ["--cluster", "local", "-j", "2"]],
                         ids=["local-processes", "dask-localcluster"])
def test_a_prefix_of_ranks_gives_the_local_json(
    s3: Server, tmp_path: Path, engine: list[str], monkeypatch: Any
) -> None:
    """The prefix is searched as the folder is (the metadata, log and TensorBoard objects
    beside the traces are left out by the same rules), on either engine: the workers open
    the URLs themselves. On Dask the client (this process) cannot open an object at all:
    its opener fails (the workers are fresh processes, with their own)."""
    if "--cluster" in engine:
        from traceprobe.load import files

        def refuse(*args: Any) -> Any:
            raise AssertionError(f"the client opened {args[0]}")

        monkeypatch.setattr(files, "open_url", refuse)
    rc, text = _cli(tmp_path, s3, _url(JOBS[0]), *engine, *_opt(s3), "--rank", "1")
    assert rc == 0
    assert '"count": 2' in text and '"rank_report": {' in text
    assert _as_local(text) == _local(tmp_path, f"{SAMPLES / JOBS[0]}/", "--ranks", "-j", "1",
                                     "--rank", "1")


def test_a_glob_names_the_ranks_of_both_jobs(s3: Server, tmp_path: Path) -> None:
    rc, text = _cli(tmp_path, s3, f"s3://{BUCKET}/*/ddp/train/*.pt.trace.json.gz", "--ranks",
                    "-j", "1", *_opt(s3))
    assert rc == 0
    local = [str(SAMPLES / j / f.name) for j in JOBS
             for f in sorted((SAMPLES / j).glob("*.pt.trace.json.gz"))]
    # the glob's matches come in natural order of their URLs: cpu/ before h200x2/
    assert _as_local(text) == _local(tmp_path, *sorted(local), "--ranks", "-j", "1")


def test_storage_options_from_the_environment(s3: Server, tmp_path: Path) -> None:
    """No --storage-option: the endpoint from fsspec's FSSPEC_S3_ENDPOINT_URL (read when
    fsspec is imported: a fresh process, as a user runs it)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ENDPOINT")}
    env.update({**s3.env(), "PYTHONPATH": str(REPO), "FSSPEC_S3_ENDPOINT_URL": s3.endpoint})
    del env["AWS_ENDPOINT_URL_S3"]
    out = tmp_path / "env.json"
    name = _first(JOBS[1])
    r = subprocess.run([sys.executable, "-m", "traceprobe.cli", "analyze", _url(JOBS[1], name),
                        "-f", "json", "-o", str(out)], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert _as_local(out.read_text()) == _local(tmp_path, str(SAMPLES / JOBS[1] / name))


def test_report_written_to_a_url(s3: Server, tmp_path: Path, capsys: Any) -> None:
    """-o s3://...: one upload (an S3 object appears whole or not at all); an existing object
    is refused without --force; a store that cannot do that (http) is refused up front."""
    src = _url(JOBS[0], _first(JOBS[0]))
    dest = f"s3://{BUCKET}/reports/one.json"
    assert _cli(tmp_path, s3, src, *_opt(s3), out=dest)[0] == 0
    got = boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id=s3.key,
                       aws_secret_access_key=s3.secret).get_object(Bucket=BUCKET,
                                                                   Key="reports/one.json")
    assert _as_local(got["Body"].read().decode()) == _local(
        tmp_path, str(SAMPLES / JOBS[0] / _first(JOBS[0])))
    capsys.readouterr()
    assert _cli(tmp_path, s3, src, *_opt(s3), out=dest)[0] == 4
    assert f"will not overwrite without --force: {dest}" in capsys.readouterr().err
    assert _cli(tmp_path, s3, src, *_opt(s3), out="http://127.0.0.1:9/r.json")[0] == 4
    err = capsys.readouterr().err
    assert "http:// cannot be written atomically" in err and err.count("\n") == 1


def _command(tmp: Path, s3: Server | None, *argv: str) -> tuple[int, str]:
    """``traceprobe ARGV`` in this process (with the server's credentials when ``s3``); its
    -o file's text, or what it printed."""
    _forget_connections()
    with pytest.MonkeyPatch.context() as mp:
        for k, v in (s3.env() if s3 else {}).items():
            mp.setenv(k, v)
        rc = main(list(argv))
    out = argv[argv.index("-o") + 1] if "-o" in argv else None
    return rc, Path(out).read_text() if out and Path(out).exists() else ""


@pytest.mark.parametrize("make", ["whatif", "compare", "check"])
def test_whatif_compare_and_check_read_urls(s3: Server, tmp_path: Path, make: str,
                                            capsys: Any) -> None:
    """The other commands that read traces take URLs and --storage-option too, with the local
    copy's output (whatif's prediction, compare's comparison written to a URL, check's
    results)."""
    a, b = sorted((SAMPLES / JOBS[0]).glob("*.pt.trace.json.gz"))[:2]
    ua, ub = _url(JOBS[0], a.name), _url(JOBS[0], b.name)
    if make == "whatif":
        args = ["whatif", "{a}", "-s", "no-host-sync", "-f", "json"]
    elif make == "compare":
        args = ["compare", "{a}", "{b}", "-f", "json"]
    else:
        args = ["check", "{a}", "{b}", "-e", "steps >= 1", "-f", "json"]

    def run(pa: str, pb: str, so: list[str], out: str | None) -> str:
        argv = [x.format(a=pa, b=pb) for x in args] + so + (["-o", out] if out else [])
        rc, text = _command(tmp_path, s3 if so else None, *argv)
        assert rc == 0, capsys.readouterr().err
        printed = capsys.readouterr().out
        return text or printed

    local = run(str(a), str(b), [], str(tmp_path / f"{make}-local.json") if make != "check"
                else None)
    if make == "compare":  # written to a URL, then read back
        dest = f"s3://{BUCKET}/reports/{make}.json"
        run(ua, ub, _opt(s3), dest)
        got = boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id=s3.key,
                           aws_secret_access_key=s3.secret).get_object(
                               Bucket=BUCKET, Key=f"reports/{make}.json")["Body"].read().decode()
    else:
        got = run(ua, ub, _opt(s3), str(tmp_path / f"{make}-url.json") if make != "check"
                  else None)
    assert ua in got
    assert _as_local(got) == local


# ----------------------------------------------------------------------------- errors


def _one_line(capsys: Any, *words: str) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    for w in words:
        assert w in err, err
    return err


def test_no_such_bucket(s3: Server, tmp_path: Path, capsys: Any) -> None:
    url = "s3://no-such-bucket/job/"
    assert _cli(tmp_path, s3, url, *_opt(s3))[0] == 3
    _one_line(capsys, url, "no such bucket 'no-such-bucket'", "check the bucket's name")


def test_no_such_prefix(s3: Server, tmp_path: Path, capsys: Any) -> None:
    url = f"s3://{BUCKET}/nothing/here/"
    assert _cli(tmp_path, s3, url, *_opt(s3))[0] == 3
    _one_line(capsys, url, "no such object or prefix")


@pytest.mark.parametrize("key", ["AKIAUNKNOWNKEY000000", None], ids=["unknown-key", "bad-secret"])
def test_wrong_credentials_are_denied(
    s3: Server, tmp_path: Path, capsys: Any, key: str | None
) -> None:
    url = _url(JOBS[0], _first(JOBS[0]))
    rc, _ = _cli(tmp_path, s3, url, *_opt(s3), env=s3.env(key=key, secret="wrong-secret"))
    assert rc == 3
    _one_line(capsys, url, "access denied", "AWS_ACCESS_KEY_ID")


def test_a_user_without_permission_is_denied(s3: Server, tmp_path: Path, capsys: Any) -> None:
    """Valid credentials of a user whose policy grants nothing: the object, and the prefix."""
    for url in (_url(JOBS[0], _first(JOBS[0])), _url(JOBS[0])):
        rc, _ = _cli(tmp_path, s3, url, *_opt(s3), env=s3.env(*s3.stranger))
        assert rc == 3
        _one_line(capsys, url, "access denied", "may read this object")


def test_a_store_that_does_not_answer_times_out(
    s3: Server, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    """An endpoint that accepts connections and never answers (a listening socket nobody
    reads), with a 1 s limit and s3fs's own retries cut to one."""
    import s3fs

    monkeypatch.setattr(s3fs.S3FileSystem, "retries", 1)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}"
        url = f"s3://{BUCKET}/slow/rank0.json.gz"
        rc, _ = _cli(tmp_path, s3, url, "--storage-option", f"endpoint_url={endpoint}",
                     "--storage-option", "skip_instance_cache=true", "--storage-option",
                     'config_kwargs={"connect_timeout": 1, "read_timeout": 1, '
                     '"retries": {"max_attempts": 1}}')
    assert rc == 3
    _one_line(capsys, url, "timed out", "read_timeout")


def test_an_object_cut_short_is_salvaged_or_refused(
    s3: Server, tmp_path: Path, capsys: Any
) -> None:
    """Half a gzip trace uploaded: as for a local file cut short, the complete events are
    analysed with a notice (the same report as the local copy of the half), and --strict
    refuses it in one line naming the URL."""
    name = _first(JOBS[0])
    url = f"s3://{BUCKET}/bad/{name}"
    rc, text = _cli(tmp_path, s3, url, *_opt(s3))
    assert rc == 0 and '"salvaged"' in text
    notice = capsys.readouterr().err
    assert url in notice and "cut short" in notice
    whole = (SAMPLES / JOBS[0] / name).read_bytes()
    half = tmp_path / "bad" / name
    half.parent.mkdir()
    half.write_bytes(whole[: len(whole) // 2])
    assert text.replace(f"s3://{BUCKET}/", f"{tmp_path}/") == _local(tmp_path, str(half))
    capsys.readouterr()
    assert _cli(tmp_path, s3, url, *_opt(s3), "--strict")[0] == 3
    _one_line(capsys, url, "--strict")


def test_a_folder_with_an_unreadable_object(s3: Server, tmp_path: Path, capsys: Any) -> None:
    """mixed/: two good ranks and one object that holds no complete event. As for a local
    folder: the bad one named on stderr, the others reported, exit 3 (0 with --skip-bad)."""
    local = tmp_path / "mixed"
    local.mkdir()
    for f in sorted((SAMPLES / JOBS[0]).glob("*.pt.trace.json.gz")):
        (local / f.name).write_bytes(f.read_bytes())
    (local / "zz_rank2.pt.trace.json").write_text('{"traceEvents": [{"ph": "X", "ts": ')
    for extra in ([], ["--skip-bad"]):
        rc, text = _cli(tmp_path, s3, f"s3://{BUCKET}/mixed/", *_opt(s3), *extra)
        err = capsys.readouterr().err
        out = tmp_path / f"mixed-local{len(extra)}.json"
        rc_local = main(["analyze", str(local), *extra, "-f", "json", "-o", str(out)])
        err_local = capsys.readouterr().err
        assert rc == rc_local == (0 if extra else 3)
        assert f"s3://{BUCKET}/mixed/zz_rank2.pt.trace.json" in err
        assert err.replace(f"s3://{BUCKET}/", f"{tmp_path}/") == err_local
        assert text.replace(f"s3://{BUCKET}/", f"{tmp_path}/") == out.read_text()


# ----------------------------------------------------------------------------- streaming


def test_an_object_is_decoded_before_it_is_all_fetched(s3: Server, tmp_path: Path) -> None:
    """A 2 MB gzip object read with 256 KiB blocks: when the first JSON arrives, only the
    first block(s) have been fetched, not the object."""
    from traceprobe.load.files import FileChunks

    doc = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": 1, "tid": 1,
                            "ts": i, "dur": 1, "args": {"pad": os.urandom(24).hex()}}
                           for i in range(60_000)]}
    body = gzip.compress(json.dumps(doc).encode(), 1)
    assert len(body) > 8 * (1 << 18)
    boto3.client("s3", endpoint_url=s3.endpoint, aws_access_key_id=s3.key,
                 aws_secret_access_key=s3.secret).put_object(Bucket=BUCKET, Key="big.json.gz",
                                                             Body=body)
    from traceprobe.load import files

    opened: list[Any] = []
    real = files.open_url

    def spy(*args: Any) -> Any:
        opened.append(real(*args))
        return opened[-1]

    with pytest.MonkeyPatch.context() as mp:
        for k, v in s3.env().items():
            mp.setenv(k, v)
        mp.setattr(files, "open_url", spy)
        _forget_connections()
        chunks = FileChunks(f"s3://{BUCKET}/big.json.gz",
                            {"endpoint_url": s3.endpoint, "default_block_size": 1 << 18})
        it = iter(chunks)
        first = next(it)
        assert first.startswith(b'{"traceEvents": [{"ph": "X"')
        fetched = opened[0]._f.cache.total_requested_bytes  # fsspec's count of bytes asked for
        assert 0 < fetched <= 2 * (1 << 18) < len(body)
        rest = sum(len(c) for c in it)
    assert len(first) + rest == len(json.dumps(doc).encode())


# ----------------------------------------------------------------------------- half-read


class _ShortServer(threading.Thread):
    """An HTTP server whose every answer promises the whole file and sends half of it."""

    def __init__(self, body: bytes) -> None:
        super().__init__(daemon=True)
        self.body = body
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/rank0.pt.trace.json.gz"

    def run(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)
                head = (f"HTTP/1.1 200 OK\r\nContent-Length: {len(self.body)}\r\n"
                        "Accept-Ranges: none\r\nConnection: close\r\n\r\n").encode()
                conn.sendall(head + self.body[: len(self.body) // 2])


def test_a_connection_that_ends_early_is_one_line(tmp_path: Path, capsys: Any) -> None:
    """half-read: the server announces the object's size and closes half way through."""
    pytest.importorskip("aiohttp")
    name = _first(JOBS[0])
    srv = _ShortServer((SAMPLES / JOBS[0] / name).read_bytes())
    srv.start()
    try:
        rc = main(["analyze", srv.url, "-f", "json", "-o", str(tmp_path / "short.json")])
    finally:
        srv.sock.close()
    assert rc == 3
    _one_line(capsys, srv.url, "retry")
    assert not (tmp_path / "short.json").exists()
