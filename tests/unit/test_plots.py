"""Each figure is written whole in the format its suffix names, or not at all."""

import re

import numpy as np
import pandas as pd
import pytest

from headatlas import plots
from headatlas.store import Example

CAPTION = "model tiny, corpus unit-test, N=2 segments; deviation: none"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
N_LAYERS, N_HEADS = 2, 3


def per_head(**columns):
    ids = {"layer": np.repeat(np.arange(1, N_LAYERS + 1), N_HEADS),
           "head": np.tile(np.arange(1, N_HEADS + 1), N_LAYERS)}
    k = N_LAYERS * N_HEADS
    rng = np.random.default_rng(0)
    return pd.DataFrame({**ids, **{c: rng.uniform(lo, hi, k) for c, (lo, hi) in columns.items()}})


@pytest.fixture
def rel():
    return per_head(prev=(0, 1), self=(0, 1), next=(0, 1))


@pytest.fixture
def special():
    return per_head(cls=(0, 1), sep=(0, 1), punct=(0, 1), sep_from_sep=(0, 1), sep_from_other=(0, 1))


@pytest.fixture
def entropy():
    return per_head(entropy=(0, 3), uniform_entropy=(3.5, 3.5), cls_entropy=(0, 3), max_weight=(0, 1))


@pytest.fixture
def example():
    tokens = ["[CLS]", "the", "cat", ".", "[SEP]", "it", "sat", "[SEP]"]
    n = len(tokens)
    attn = np.random.default_rng(1).dirichlet(np.ones(n), size=(N_LAYERS, N_HEADS, n))
    return Example(index=0, id="ex0", tokens=tokens, input_ids=np.zeros(n), token_type_ids=np.zeros(n),
                   word_ids=np.zeros(n), attn=attn.astype(np.float32))


HEADS = {"broad": (1, 1), "next": (1, 2), "sep": (2, 1), "punct": (2, 3)}


def draw(kind, tables, example, path):
    rel, special, entropy = tables
    if kind == "relative_position":
        plots.plot_relative_position(rel, path, CAPTION)
    elif kind == "special_tokens":
        plots.plot_special_tokens(special, path, CAPTION)
    elif kind == "entropy":
        plots.plot_entropy(entropy, path, CAPTION)
    else:
        plots.plot_attention_lines(example, HEADS, path, CAPTION)


KINDS = ["relative_position", "special_tokens", "entropy", "attention_lines"]


@pytest.mark.parametrize("suffix", ["svg", "png"])
@pytest.mark.parametrize("kind", KINDS)
def test_writes_one_complete_file(tmp_path, rel, special, entropy, example, kind, suffix):
    path = tmp_path / "fig" / f"{kind}.{suffix}"  # parent folder does not exist yet
    draw(kind, (rel, special, entropy), example, path)
    head = path.read_bytes()[:200]
    if suffix == "png":
        assert head.startswith(PNG_MAGIC)
    else:
        assert head.lstrip().startswith((b"<?xml", b"<svg"))
        assert CAPTION in path.read_text()  # caption kept as text (svg.fonttype none)
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


@pytest.mark.parametrize("kind", KINDS)
def test_failed_plot_leaves_no_file(tmp_path, rel, special, entropy, example, kind):
    broken = (rel.drop(columns="next"), special.drop(columns="sep_from_sep"),
              entropy.drop(columns="cls_entropy"))
    bad_example = Example(**{**example.__dict__, "attn": example.attn[:1]})  # no layer 2
    path = tmp_path / f"{kind}.svg"
    with pytest.raises((KeyError, ValueError, IndexError)):
        draw(kind, broken, bad_example, path)
    assert list(tmp_path.iterdir()) == []


def test_failed_save_leaves_no_file(tmp_path, rel, monkeypatch):
    # An error in the middle of writing (after the temporary file exists) removes it.
    def fail(self, fname, **kwargs):
        open(fname, "wb").write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(plots.Figure, "savefig", fail)
    with pytest.raises(OSError):
        plots.plot_relative_position(rel, tmp_path / "rel.png", CAPTION)
    assert list(tmp_path.iterdir()) == []


def test_unknown_format_rejected(tmp_path, rel):
    with pytest.raises(ValueError, match="pdf"):
        plots.plot_relative_position(rel, tmp_path / "rel.pdf", CAPTION)
    assert list(tmp_path.iterdir()) == []


def test_attention_lines_rejects_head_outside_model(tmp_path, example):
    with pytest.raises(ValueError, match="3-1"):
        plots.plot_attention_lines(example, {"sep": (3, 1)}, tmp_path / "lines.png", CAPTION)
    assert list(tmp_path.iterdir()) == []


def comparable_svg(path) -> bytes:
    """SVG text with coordinates cut to 3 decimals and clip-path ids (hashes of them) removed.

    Constrained layout can move an axis by 1e-6 between identical runs, which changes the
    last digit of a coordinate and the hash-derived clip-path ids; nothing a reader sees.
    """
    text = re.sub(rb"#?p[0-9a-f]{10}\b", b"CLIP", path.read_bytes())
    return re.sub(rb"(\d+\.\d{3})\d+", rb"\1", text)


def test_svg_is_reproducible(tmp_path, special):
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    plots.plot_special_tokens(special, a, CAPTION)
    plots.plot_special_tokens(special, b, CAPTION)
    assert comparable_svg(a) == comparable_svg(b)
    assert b"<dc:date>" not in a.read_bytes()  # no timestamp in the file
