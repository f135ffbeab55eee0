"""Atomic outputs: complete or absent, and never one temporary file shared by two writers."""

from __future__ import annotations

import os

import pytest

from headatlas.io import atomic_open, atomic_path, partial_path


def test_two_writers_of_one_output_write_different_files(tmp_path):
    target = tmp_path / "table.csv"
    with atomic_path(target) as first, atomic_path(target) as second:
        assert first != second and first.name.startswith(".table.csv.") and f"-{os.getpid()}-" in first.name
        first.write_text("a")
        second.write_text("b")
    assert target.read_text() in ("a", "b") and not list(tmp_path.glob("*.partial"))


def test_a_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "table.csv"
    with pytest.raises(RuntimeError), atomic_open(target) as handle:
        handle.write("half")
        raise RuntimeError("killed")
    assert not target.exists() and not list(tmp_path.iterdir())


def test_partial_names_are_hidden_and_unique(tmp_path):
    names = {partial_path(tmp_path / "x.svg").name for _ in range(50)}
    assert len(names) == 50 and all(n.startswith(".x.svg.") and n.endswith(".partial") for n in names)


def test_a_killed_writers_partial_file_is_removed_by_the_next_write(tmp_path):
    import socket
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    stale = tmp_path / f".table.csv.{socket.gethostname()}-{dead}-0a1b2c3d.partial"
    alive = tmp_path / f".table.csv.{socket.gethostname()}-{os.getppid()}-0a1b2c3d.partial"
    stale.write_text("half")
    alive.write_text("being written")
    with atomic_open(tmp_path / "table.csv") as handle:
        handle.write("whole")
    assert not stale.exists() and alive.exists() and (tmp_path / "table.csv").read_text() == "whole"


def test_a_full_disk_names_the_file_and_the_free_space_and_leaves_nothing(tmp_path):
    import errno

    from headatlas.io import DiskFullError

    target = tmp_path / "table.csv"
    with pytest.raises(DiskFullError, match=r"table\.csv: not written, the disk is full \(.* free"):
        with atomic_open(target) as handle:
            handle.write("a")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert not list(tmp_path.iterdir())


def test_an_extraction_the_disk_cannot_hold_is_refused_before_any_work(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    from headatlas.io import DiskFullError, check_free_space

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**12, 10**12 - 5 * 10**8, 5 * 10**8))
    check_free_space(tmp_path / "attention", 4 * 10**8)
    with pytest.raises(DiskFullError, match=r"needs about 2\.60 GB .* the disk has 0\.50 GB free"):
        check_free_space(tmp_path / "attention", 2.6e9)


def test_a_store_that_fills_the_disk_says_so_and_leaves_nothing(tmp_path, monkeypatch):
    import errno

    from headatlas.io import DiskFullError
    from headatlas.store.writer import StoreWriter
    from tests.unit.test_store import write

    def full(dataset, values):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(StoreWriter, "_append", staticmethod(full))
    with pytest.raises(DiskFullError, match=r"shard-0\.h5: not written, the disk is full"):
        write(tmp_path / "shard-0.h5", [4, 6])
    assert not list(tmp_path.iterdir())
