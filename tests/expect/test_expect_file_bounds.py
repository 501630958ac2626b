"""`check --expect-file` on a FIFO and on an endless file (issue 24: unbounded waits)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from traceprobe import expect
from traceprobe.errors import UsageError


def test_a_fifo_without_a_writer_reads_as_empty_instead_of_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "ci.expect"
    os.mkfifo(fifo)
    done: list[object] = []
    t = threading.Thread(target=lambda: done.append(expect.parse_file(fifo)), daemon=True)
    t.start()
    t.join(10)
    assert done == [[]], "parse_file blocked on a FIFO with no writer"


def test_a_fifo_with_a_writer_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "ci.expect"
    os.mkfifo(fifo)
    w = os.open(fifo, os.O_RDWR)  # a writer holding it open (as <(...) does)
    try:
        os.write(w, b"utilization[0] >= 0.5\n")
        reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(reader)

        def close_later() -> None:
            os.close(w)

        threading.Timer(0.2, close_later).start()
        (e,) = expect.parse_file(fifo)
        assert str(e) == "utilization[0] >= 0.5"
    finally:
        try:
            os.close(w)
        except OSError:
            pass


def test_an_endless_file_is_refused_at_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                 ) -> None:
    """An endless source (as /dev/zero; here a file just over the limit) is refused."""
    monkeypatch.setattr(expect, "MAX_FILE_BYTES", 1000)
    big = tmp_path / "big.expect"
    big.write_bytes(b"# x\n" * 300)
    with pytest.raises(UsageError, match="more than 1,000 bytes"):
        expect.parse_file(big)
