"""Store integrity: checksums on every dataset; a damaged store is a StoreError naming the file.

Issue 21, item 1: random bytes written into the middle of a store gave NaN, negative and > 1
attention weights and an exit status 0; damaged offsets a bare ValueError, damaged metadata a
bare OSError.
"""

from __future__ import annotations

import errno
import os
import re

import h5py
import numpy as np
import pytest

from headatlas.errors import EmptyStoreError, StoreError
from headatlas.io import DiskFullError
from headatlas.store.schema import SCHEMA_VERSION
from headatlas.store.reader import Store, open_stores
from headatlas.store.writer import StoreWriter

ATTRS = {"n_layers": 2, "n_heads": 2, "model_name": "m", "corpus": "c", "max_length": 64}
LENGTHS = [40, 12, 60, 33, 50, 21, 64, 8, 45, 30] * 3


def attention(n: int, seed: int) -> np.ndarray:
    a = np.random.default_rng(seed).random((2, 2, n, n)).astype(np.float32)
    return a / a.sum(-1, keepdims=True)


def write(path, lengths=LENGTHS, norms: bool = False) -> None:
    with StoreWriter(path, {**ATTRS, "norms": "recorded" if norms else None}) as writer:
        for i, n in enumerate(lengths):
            tokens = ["[CLS]"] + [f"w{i}-{j}" for j in range(n - 2)] + ["[SEP]"]
            extra = {"value_norms": np.ones((2, 2, n)), "norm_map": np.ones((2, n, n))} if norms else {}
            writer.add(i, f"ex{i}", tokens, np.arange(n), np.zeros(n), [-1] + list(range(n - 2)) + [-1],
                       attention(n, i), **extra)
        writer.skipped_ids = ["too-long"]


def read_everything(path, norms: bool = False) -> list:
    """Everything an analysis could read: attributes, examples (maps, tokens, ids), skipped ids."""
    stores = open_stores(path, norms=norms)
    out = [sorted(stores.attrs.items()), stores.skipped_ids]
    for e in stores:
        out.append((e.index, e.id, e.tokens, e.input_ids.tolist(), e.token_type_ids.tolist(),
                    e.word_ids.tolist(), e.attn.tobytes(),
                    None if e.norm_map is None else (e.value_norms.tobytes(), e.norm_map.tobytes())))
    return out


def damaged_message(path) -> str:
    return rf"^{re.escape(str(path))}: .*rebuild it: snakemake --cores all --force {re.escape(str(path))}"


def overwrite(path, offset: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def test_every_dataset_carries_a_checksum(tmp_path):
    path = tmp_path / "s.h5"
    write(path, norms=True)
    with h5py.File(path, "r") as f:
        assert f.attrs["schema_version"] == SCHEMA_VERSION == 3
        for name, dataset in f.items():
            if h5py.check_string_dtype(dataset.dtype):
                assert name == "tokens" or "crc32" in dataset.attrs, name  # tokens: tokens_crc32
            else:
                assert dataset.fletcher32, name


def test_random_bytes_in_the_middle_are_caught(tmp_path):
    """The issue's probe: 4,096 random bytes at the middle of the file."""
    path = tmp_path / "s.h5"
    write(path)
    read_everything(path)  # intact: reads
    overwrite(path, os.path.getsize(path) // 2, np.random.default_rng(0).bytes(4096))
    with pytest.raises(StoreError, match=damaged_message(path)):
        read_everything(path)


@pytest.mark.parametrize("norms", [False, True])
def test_no_damage_anywhere_passes_silently(tmp_path, norms):
    """Garbage at 24 places across the file: each read fails naming the file, or reads what was written
    (the bytes hit space the file does not use)."""
    clean = tmp_path / "clean.h5"
    write(clean, norms=norms)
    expected = read_everything(clean, norms)
    size = os.path.getsize(clean)
    caught = 0
    for k, offset in enumerate(np.linspace(0, size - 512, 24).astype(int)):
        path = tmp_path / f"d{k}.h5"
        path.write_bytes(clean.read_bytes())
        overwrite(path, int(offset), np.random.default_rng(k).bytes(512))
        try:
            got = read_everything(path, norms)
        except StoreError as err:
            assert str(err).startswith(str(path)) and "snakemake --cores all --force" in str(err), err
            caught += 1
        else:
            assert got == expected, f"garbage at byte {offset} of {size} changed what is read, silently"
    assert caught >= 12  # most of the file is data or metadata: most hits are caught, none passes


def test_damaged_offsets_name_the_store(tmp_path):
    """Offsets rewritten through HDF5 (checksums valid, values wrong): no bare reshape ValueError."""
    path = tmp_path / "s.h5"
    write(path)
    with h5py.File(path, "r+") as f:
        f["attn_offsets"][3] = 0
    with pytest.raises(StoreError, match=damaged_message(path) + "|disagree"):
        read_everything(path)
    path2 = tmp_path / "s2.h5"
    write(path2)
    with h5py.File(path2, "r+") as f:  # the raw bytes of the offsets: their checksum fails
        offset = f["attn_offsets"].id.get_chunk_info(0).byte_offset
    overwrite(path2, offset + 16, b"\xff" * 16)
    with pytest.raises(StoreError, match=damaged_message(path2)):
        read_everything(path2)


def test_damaged_metadata_names_the_store(tmp_path):
    """The superblock, and each object header (attributes, dataset layouts: `OHDR` in the 1.10 format)."""
    clean = tmp_path / "clean.h5"
    write(clean)
    data = clean.read_bytes()
    headers = [m.start() for m in re.finditer(b"OHDR", data)]
    assert len(headers) >= 10  # the root group and every dataset
    for k, start in enumerate([0, *headers]):
        path = tmp_path / f"d{k}.h5"
        path.write_bytes(data)
        overwrite(path, start + 8, b"\xa5" * 8)
        with pytest.raises(StoreError, match=rf"^{re.escape(str(path))}: .*snakemake --cores all --force"):
            read_everything(path)


def test_damaged_token_strings_are_caught(tmp_path):
    path = tmp_path / "s.h5"
    write(path)
    with h5py.File(path, "r+") as f:  # a string rewritten through HDF5: only our CRC sees it
        f["tokens"][5] = "XXXX"
    with pytest.raises(StoreError, match=r"damaged: the tokens of example ex0 fail their checksum; rebuild"):
        read_everything(path)
    with h5py.File(path, "r+") as f:
        f["example_ids"][0] = "exX"
    with pytest.raises(StoreError, match="`example_ids` fails its checksum"):
        read_everything(path)


def test_a_store_without_examples_is_refused(tmp_path):
    path = tmp_path / "s.h5"
    with StoreWriter(path, {**ATTRS, "n_skipped": 3, "n_too_long": 2}) as writer:
        writer.skipped_ids = ["a", "b", "c"]
    with pytest.raises(EmptyStoreError, match=r"no example of corpus 'c' for model 'm': 3 records were "
                                              r"left out, 2 of them longer than max_length 64"):
        open_stores(path)
    from headatlas.analyses import surface  # noqa: F401  (registers the analyses)
    from headatlas.analyses.base import REGISTRY, run_analysis

    for name in ("entropy", "relative_position"):  # every analysis opens its stores through open_stores
        assert name in REGISTRY
        with pytest.raises(EmptyStoreError, match=r"s\.h5: no example of corpus 'c'"):
            run_analysis(name, [path], progress=False)


def test_partial_files_are_unique_to_the_writer(tmp_path):
    path = tmp_path / "shard-0.h5"
    first, second = StoreWriter(path, ATTRS), StoreWriter(path, ATTRS)
    assert first.partial != second.partial and first.partial.exists() and second.partial.exists()
    assert f"-{os.getpid()}-" in first.partial.name and first.partial.name.startswith(".shard-0.h5.")
    for writer in (first, second):
        writer.add(0, "a", ["[CLS]", "[SEP]"], [0, 1], [0, 0], [-1, -1], attention(2, 0))
        writer.close()
    assert [p.name for p in tmp_path.iterdir()] == ["shard-0.h5"]
    assert len(Store(path)) == 1


def test_a_partial_file_of_a_dead_process_is_removed(tmp_path):
    import socket
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    stale = tmp_path / f".shard-0.h5.{socket.gethostname()}-{done.stdout.strip()}-0a1b2c3d.partial"
    alive = tmp_path / f".shard-0.h5.{socket.gethostname()}-{os.getppid()}-0a1b2c3d.partial"
    other = tmp_path / ".shard-0.h5.otherhost-1-0a1b2c3d.partial"
    for p in (stale, alive, other):
        p.write_bytes(b"x")
    write(tmp_path / "shard-0.h5", [4])
    assert not stale.exists() and alive.exists() and other.exists()


def test_a_full_disk_names_the_file_and_leaves_nothing(tmp_path, monkeypatch):
    path = tmp_path / "shard-0.h5"

    def no_space(self, *args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(h5py.Dataset, "__setitem__", no_space)
    with pytest.raises(DiskFullError, match=rf"^{re.escape(str(path))}: not written, the disk is full"):
        write(path, [4, 5])
    assert list(tmp_path.iterdir()) == []
