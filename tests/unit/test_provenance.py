"""Which code wrote a store: the package version, the commit of this clone, and whether it was dirty."""

from __future__ import annotations

import re
import shutil
import subprocess

from headatlas.corpora.records import Sentence
from headatlas.provenance import UNKNOWN, code_version
from headatlas.store.reader import Store
from tests.conftest import ROOT


def head_commit() -> str:
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()


def test_a_clone_records_its_commit():
    version = code_version(str(ROOT / "src" / "headatlas"))
    assert re.fullmatch(r"[0-9a-f]{40}", version["code_commit"])
    assert version["code_commit"] == head_commit()
    assert isinstance(version["code_dirty"], bool)


def test_a_copy_outside_a_clone_says_unknown(tmp_path):
    copy = tmp_path / "src" / "headatlas"
    shutil.copytree(ROOT / "src" / "headatlas", copy, ignore=shutil.ignore_patterns("__pycache__", "data"))
    assert code_version(str(copy))["code_commit"] == UNKNOWN


def test_an_install_inside_another_repository_is_not_that_repositorys_code(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    package = tmp_path / "venv" / "site-packages" / "headatlas"
    package.mkdir(parents=True)
    assert code_version(str(package))["code_commit"] == UNKNOWN


def test_dirty_follows_tracked_files(tmp_path):
    repo = tmp_path / "clone"
    (repo / "src" / "headatlas").mkdir(parents=True)
    (repo / "src" / "headatlas" / "__init__.py").write_text("")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(git + ["add", "."], check=True)
    subprocess.run(git + ["commit", "-q", "-m", "x"], check=True)
    package = str(repo / "src" / "headatlas")
    (repo / "my-config.yaml").write_text("untracked: true")  # a user's own file is not a change
    assert code_version.__wrapped__(package)["code_dirty"] is False
    (repo / "src" / "headatlas" / "__init__.py").write_text("# edited")
    assert code_version.__wrapped__(package)["code_dirty"] is True


def test_a_store_records_the_code(tiny_model, tmp_path):
    from headatlas.encoders import extract as ex

    ex.extract(tiny_model, [Sentence(id="a", words=["the", "cat", "sat"])], tmp_path / "s.h5",
               max_length=16, progress=False)
    with Store(tmp_path / "s.h5") as store:
        assert store.attrs["code_commit"] == head_commit()
        assert store.attrs["package_version"]
        assert bool(store.attrs["code_dirty"]) in (True, False)
