"""fsspec URLs without a server: what counts as a URL, --storage-option, the one-line errors,
fsspec's own protocols (memory://, file://) for reading and for -o, and that a local path
never imports fsspec. The S3 cases, against a real S3 server: tests/load/test_s3_urls.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from traceprobe import output
from traceprobe.cli import main
from traceprobe.errors import OutputError, TraceError, UsageError
from traceprobe.urls import describe, is_url, parse_options, protocol

REPO = Path(__file__).resolve().parents[1]
JOB = REPO / "sample_traces" / "h200x2" / "ddp" / "train"
RANKS = sorted(JOB.glob("*.pt.trace.json.gz"))


@pytest.mark.parametrize("text, url", [
    ("s3://bucket/job/", True), ("gs://b/k.json.gz", True), ("az://c/x", True),
    ("https://host/t.json", True), ("file:///tmp/t.json", True), ("memory://x", True),
    ("simplecache::s3://b/k", True), ("traces/run.json", False), ("/abs/s3://x", False),
    ("C:\\traces\\t.json", False), ("rank0.json.gz", False), ("", False),
])
def test_what_is_a_url(text: str, url: bool) -> None:
    assert is_url(text) is url
    assert is_url(Path(text or ".")) is False  # a Path is always local


def test_protocol_is_the_last_of_a_chain() -> None:
    assert protocol("simplecache::s3://b/k") == "s3"
    assert protocol("GS://b/k") == "gs"


def test_storage_options_parse_json_values_and_dotted_keys() -> None:
    got = parse_options(["endpoint_url=http://127.0.0.1:9000", "anon=true",
                         "config_kwargs={\"read_timeout\": 5}", "client_kwargs.region_name=eu",
                         "client_kwargs.verify=false", "token=a=b"])
    assert got == {"endpoint_url": "http://127.0.0.1:9000", "anon": True,
                   "config_kwargs": {"read_timeout": 5},
                   "client_kwargs": {"region_name": "eu", "verify": False}, "token": "a=b"}


@pytest.mark.parametrize("bad", ["novalue", "=x"])
def test_a_storage_option_without_a_key_is_a_usage_error(bad: str) -> None:
    with pytest.raises(UsageError, match="KEY=VALUE"):
        parse_options([bad])


class ConnectTimeoutError(OSError):  # named as botocore names its own
    pass


class ClientPayloadError(Exception):  # named as aiohttp names its own
    pass


@pytest.mark.parametrize("exc, words", [
    (FileNotFoundError("The specified bucket does not exist"), ["no such bucket 'bkt'"]),
    (FileNotFoundError("bkt/k.json"), ["no such object or prefix"]),
    (PermissionError("Forbidden"), ["access denied", "AWS_ACCESS_KEY_ID"]),
    (ConnectTimeoutError("Connect timeout on endpoint URL"), ["timed out", "read_timeout"]),
    (TimeoutError(), ["timed out"]),
    (ClientPayloadError("Response payload is not completed"), ["ended before", "retry"]),
    (ImportError("Install s3fs to access S3"), ["no fsspec back end for s3://",
                                                 "traceprobe[s3]"]),
    (ValueError("boom\nsecond line"), ["cannot read it (ValueError: boom second line)"]),
])
def test_each_store_error_is_one_line_with_its_fix(exc: BaseException, words: list[str]) -> None:
    problem, fix = describe("s3://bkt/k.json", exc)
    line = f"{problem}; {fix}"
    assert "\n" not in line and fix
    for w in words:
        assert w in line, line


def test_memory_urls_read_as_files_and_prefixes(tmp_path: Path) -> None:
    """fsspec's own in-memory store: an object, a prefix (searched as a folder, hidden and
    non-trace names left out) and a glob give the same timelines as the local files."""
    fsspec = pytest.importorskip("fsspec")
    import traceprobe

    fs = fsspec.filesystem("memory")
    for f in RANKS:
        fs.pipe(f"/tp-test/job/{f.name}", f.read_bytes())
    fs.pipe("/tp-test/job/notes.txt", b"not a trace")
    fs.pipe("/tp-test/job/.hidden/x.json", b"{}")
    try:
        found = traceprobe.find_traces("memory://tp-test/job")
        assert found == [f"memory:///tp-test/job/{f.name}" for f in RANKS]
        assert traceprobe.find_traces("memory://tp-test/job/vm_1*") == [found[1]]
        one = traceprobe.load(found[0])
        assert one.meta.source == found[0]
        assert one.kernels.equals(traceprobe.load(RANKS[0]).kernels)
        # more jobs than files splits a local file between workers; a URL is never split
        # (each part would fetch the whole object): one worker task reads it
        from traceprobe.load.pipeline import Loading

        for source, parts in ((RANKS[0], 4), (found[0], 1)):
            with Loading([source], 4) as loading:
                assert len(loading._pending[0]) == parts
                (got,) = loading.result()
            assert got.kernels.equals(one.kernels)
        with pytest.raises(TraceError, match="holds 2 traces"):
            traceprobe.load("memory://tp-test/job")
        with pytest.raises(TraceError, match="no objects match"):
            traceprobe.find_traces("memory://tp-test/job/zz*")
    finally:
        fs.rm("/tp-test", recursive=True)


def test_a_file_url_gives_the_local_json(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["analyze", RANKS[0].as_uri(), "-f", "json", "-o", str(a)]) == 0
    assert main(["analyze", str(RANKS[0]), "-f", "json", "-o", str(b)]) == 0
    assert a.read_text().replace(RANKS[0].as_uri(), str(RANKS[0])) == b.read_text()


def test_o_to_a_memory_url_and_to_a_file_url(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    try:
        output.write_text("memory://tp-out/r.json", "{}\n")
        assert fs.cat("/tp-out/r.json") == b"{}\n"
        with pytest.raises(OutputError, match="will not overwrite without --force"):
            output.check_target("memory://tp-out/r.json")
        output.write_text("memory://tp-out/r.json", "[]\n", force=True)
        assert fs.cat("/tp-out/r.json") == b"[]\n"
        with pytest.raises(OutputError, match="is a prefix"):
            output.check_target("memory://tp-out/")
    finally:
        fs.rm("/tp-out", recursive=True)
    target = tmp_path / "r.json"
    output.write_text(target.as_uri(), "x")  # file://: the local, atomic write
    assert target.read_text() == "x"
    with pytest.raises(OutputError, match="will not overwrite"):
        output.check_target(target.as_uri())


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/r.json", "ftp://h/r.json",
                                 "simplecache::s3://b/r.json"])
def test_o_to_a_store_that_cannot_write_whole_objects_is_refused(url: str) -> None:
    with pytest.raises(OutputError, match="cannot be written atomically"):
        output.check_target(url)


def test_o_never_writes_over_an_input_url() -> None:
    with pytest.raises(OutputError, match="is an input"):
        output.check_not_input("s3://b/job/r.json", ["s3://b/job/r.json"])
    output.check_not_input("s3://b/job/out.json", ["s3://b/job/r.json", RANKS[0]])
    with pytest.raises(OutputError, match="is an input"):  # a local input beside a URL one
        output.check_not_input(RANKS[0], ["s3://b/job/r.json", RANKS[0]])


def test_tensorboard_and_hta_refuse_urls(capsys: Any) -> None:
    assert main(["analyze", "s3://b/job/", "--tensorboard"]) == 2
    assert "--tensorboard reads or writes beside each trace" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--csv", "--plot"])
def test_only_o_may_be_a_url(flag: str, capsys: Any, tmp_path: Path) -> None:
    assert main(["analyze", str(RANKS[0]), flag, "s3://b/out/x.png"]) == 2
    assert f"{flag} writes local files" in capsys.readouterr().err
    assert not any(tmp_path.iterdir()) and not Path("s3:").exists()


LIGHT = r"""
import sys
from traceprobe.cli import main
rc = main(["analyze", sys.argv[1], "-f", "json", "-o", sys.argv[2]])
print(rc, sorted(m for m in sys.modules if m.split(".")[0] in ("fsspec", "s3fs", "botocore")))
"""


def test_a_local_path_never_imports_fsspec(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-c", LIGHT, str(RANKS[0]), str(tmp_path / "o.json")],
                       capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert r.stdout.strip() == "0 []", r.stdout + r.stderr


NO_FSSPEC = r"""
import sys
sys.modules["fsspec"] = None  # as the light install has it: not installed
from traceprobe.cli import main
sys.exit(main(["analyze", "s3://bucket/job/"]))
"""


def test_a_url_without_fsspec_says_what_to_install() -> None:
    r = subprocess.run([sys.executable, "-c", NO_FSSPEC], capture_output=True, text=True,
                       timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 3
    assert r.stderr == ("traceprobe: error: s3://bucket/job/: reading URLs needs fsspec, which "
                        "is not installed; pip install 'traceprobe[s3]' (s3fs)\n")
