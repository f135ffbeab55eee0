"""Fingerprint files: content, not mtimes, decides whether a corpus or model changed."""

from __future__ import annotations

import os
from pathlib import Path

from headatlas.pipeline import fingerprints as fp


def write(path: Path, text: str, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_an_edit_with_an_old_mtime_rewrites_the_fingerprint(tmp_path):
    source = write(tmp_path / "corpus.conllu", "1\tcat\n", mtime=1_000_000)
    cache = fp.DigestCache(tmp_path / "fp")
    marker = Path(fp.write_fingerprint(tmp_path / "fp", "corpora", "tb", "tb", [source], cache))
    os.utime(marker, (2_000_000, 2_000_000))
    write(source, "1\tdog\n", mtime=1_000_000)  # cp -p / rsync -a: new content, the old mtime
    fp.write_fingerprint(tmp_path / "fp", "corpora", "tb", "tb", [source], fp.DigestCache(tmp_path / "fp"))
    assert marker.stat().st_mtime > 2_000_000  # newer than the outputs made before: they rerun
    assert "dog" not in marker.read_text() and len(marker.read_text().splitlines()) == 2


def test_an_unchanged_source_leaves_the_fingerprint_alone(tmp_path):
    source = write(tmp_path / "wiki.json", "{}")
    cache = fp.DigestCache(tmp_path / "fp")
    marker = Path(fp.write_fingerprint(tmp_path / "fp", "corpora", "w", "w", [source], cache))
    os.utime(marker, (2_000_000, 2_000_000))
    os.utime(source, None)  # touched, same content
    fp.write_fingerprint(tmp_path / "fp", "corpora", "w", "w", [source], fp.DigestCache(tmp_path / "fp"))
    assert marker.stat().st_mtime == 2_000_000


def test_unchanged_files_are_not_read_again(tmp_path, monkeypatch):
    source = write(tmp_path / "model.safetensors", "x" * 1000)
    cache = fp.DigestCache(tmp_path / "fp")
    first = cache.digest(source)
    cache.save()
    reads = []
    real_open = open
    monkeypatch.setattr("builtins.open", lambda *a, **k: reads.append(a[0]) or real_open(*a, **k))
    again = fp.DigestCache(tmp_path / "fp")
    assert again.digest(source) == first and not [r for r in reads if str(r) == str(source)]
    write(source, "y" * 1000)
    assert again.digest(source) != first


def test_a_missing_file_is_named(tmp_path):
    text = fp.fingerprint_text("x", [tmp_path / "gone.json"], fp.DigestCache(tmp_path))
    assert f"missing  {tmp_path / 'gone.json'}" in text


def test_model_identity_names_version_and_commit(tmp_path):
    assert fp.model_identity({"package": "pytest"}, None).startswith("package pytest==")
    assert "not installed" in fp.model_identity({"package": "no_such_model_pkg"}, None)
    snapshot = tmp_path / "snapshots" / "abc123"
    assert fp.model_identity({"hub": "bert-base-cased", "revision": "v1"}, snapshot) == \
        "hub bert-base-cased revision v1 -> abc123"
    assert "not in the local cache" in fp.model_identity({"hub": "x/y"}, None)


def test_folder_files_leave_hidden_files_out(tmp_path):
    write(tmp_path / "m" / "config.json", "{}")
    write(tmp_path / "m" / ".cache" / "lock", "")
    assert [p.name for p in fp.folder_files(tmp_path / "m")] == ["config.json"]
    assert fp.folder_files(None) == []
