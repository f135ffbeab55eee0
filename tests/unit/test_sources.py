import hashlib

import pytest

from headatlas.errors import SourceError
from headatlas.corpora.sources import Source, read_checksums, resolve_mirror


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def make_source(tmp_path, content=b"hello\n", pinned=None):
    mirror = tmp_path / "mirror"
    (mirror / "sub").mkdir(parents=True)
    (mirror / "sub" / "a.txt").write_bytes(content)
    return Source(name="demo", base_url="http://127.0.0.1:9/repo/abc123", mirror=mirror,
                  cache=tmp_path / "cache", checksums={"sub/a.txt": pinned or digest(b"hello\n"),
                                                      "sub/b.txt": digest(b"b")},
                  url_paths={"sub/": "upstream/sub/"})


def test_mirror_file_is_verified_and_used(tmp_path):
    source = make_source(tmp_path)
    assert source.fetch("sub/a.txt") == tmp_path / "mirror" / "sub" / "a.txt"
    assert source.url("sub/a.txt") == "http://127.0.0.1:9/repo/abc123/upstream/sub/a.txt"


def test_checksum_mismatch_names_file_and_fix(tmp_path):
    source = make_source(tmp_path, content=b"tampered\n")
    with pytest.raises(SourceError, match=r"a.txt: sha256 .* does not match the pinned") as err:
        source.fetch("sub/a.txt")
    assert "upstream/sub/a.txt" in str(err.value)  # tells where the right file is


def test_missing_file_and_no_network_names_file_url_and_config_key(tmp_path):
    source = make_source(tmp_path)  # port 9 on loopback: connection refused at once
    with pytest.raises(SourceError) as err:
        source.fetch("sub/b.txt")
    message = str(err.value)
    assert "sub/b.txt" in message and "http://127.0.0.1:9/repo/abc123/upstream/sub/b.txt" in message
    assert "`mirror:`" in message and "HEADATLAS_MIRROR" in message
    assert not (tmp_path / "cache" / "demo" / "sub" / "b.txt").exists()


def test_unpinned_file_is_refused(tmp_path):
    with pytest.raises(SourceError, match="not in the pinned checksum list"):
        make_source(tmp_path).fetch("sub/c.txt")


def test_read_checksums(tmp_path):
    (tmp_path / "SUMS").write_text("ab12  conllu/x.conllu\ncd34 *splits.md\n")
    assert read_checksums(tmp_path / "SUMS") == {"conllu/x.conllu": "ab12", "splits.md": "cd34"}


def test_resolve_mirror(tmp_path, monkeypatch):
    monkeypatch.delenv("HEADATLAS_MIRROR", raising=False)
    assert resolve_mirror(str(tmp_path)) == tmp_path.resolve()
    assert resolve_mirror(str(tmp_path / "absent")) is None  # config default may not exist: download
    monkeypatch.setenv("HEADATLAS_MIRROR", str(tmp_path / "absent"))
    with pytest.raises(SourceError, match="no such folder"):
        resolve_mirror(None)


def test_missing_file_names_the_mirror_layout_folder(tmp_path, monkeypatch):
    from headatlas.corpora.prepare import catalog_source

    monkeypatch.setattr("urllib.request.urlopen", lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
    mirror = tmp_path / "mirror"
    (mirror / "ud-english-ewt").mkdir(parents=True)  # the layout folder exists, the file does not
    with pytest.raises(SourceError) as err:
        catalog_source("ewt", mirror, tmp_path / "cache").fetch("en_ewt-ud-dev.conllu")
    message = str(err.value)
    assert "ud-english-ewt/en_ewt-ud-dev.conllu" in message and "ewt/en_ewt" not in message.replace(
        "ud-english-ewt/en_ewt", "")
    assert str(mirror / "ud-english-ewt" / "en_ewt-ud-dev.conllu") in message


def test_a_configured_mirror_that_does_not_exist_is_named(tmp_path, monkeypatch):
    from headatlas.corpora.prepare import catalog_source
    from headatlas.corpora.sources import mirror_setting

    monkeypatch.delenv("HEADATLAS_MIRROR", raising=False)
    monkeypatch.setattr("urllib.request.urlopen", lambda *a, **k: (_ for _ in ()).throw(OSError("offline")))
    setting = mirror_setting("../no-such-mirror", workdir=tmp_path)
    assert resolve_mirror("../no-such-mirror", workdir=tmp_path) is None
    with pytest.raises(SourceError) as err:
        catalog_source("gum", None, tmp_path / "cache", setting).fetch("splits.md")
    message = str(err.value)
    assert "(none set)" not in message
    assert "the config key `mirror:` is ../no-such-mirror" in message and "does not exist" in message
    assert "gum/splits.md" in message
    assert mirror_setting(None).startswith("neither")
