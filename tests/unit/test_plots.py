"""Figures: the shared pictures are drawn where they should be, and every figure is written
whole, captioned, in the format its suffix names, or not at all."""

import re
import subprocess
import sys

import matplotlib
import numpy as np
import pandas as pd
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from headatlas.analyses.syntax import LinePanel
from headatlas.plots import (ablation, base, clustering, coref, files, gradients, headtypes, norms, probes,
                             rollout, sinks, surface, syntax)
from headatlas.store.example import Example

CAPTION = "model tiny, corpus unit-test, N=2 segments; deviation: none"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
N_LAYERS, N_HEADS = 2, 3
PLOT_MODULES = ("surface", "syntax", "coref", "clustering", "gradients", "headtypes", "probes",
                "ablation", "norms", "rollout", "sinks")


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


# ----------------------------------------------------------------------------
# the layer x head heat map
# ----------------------------------------------------------------------------

def test_head_grid_places_each_head_by_its_ids():
    table = pd.DataFrame({"layer": [2, 1, 2, 1], "head": [1, 3, 3, 1], "v": [21.0, 13.0, 23.0, 11.0]})
    grid = base.head_grid(table, "v")
    assert grid.shape == (2, 3)  # layers x heads, up to the largest ids
    assert grid[0, 0] == 11 and grid[0, 2] == 13 and grid[1, 0] == 21 and grid[1, 2] == 23
    assert np.isnan(grid[:, 1]).all()  # head 2 is missing: blank, and head 3 stays third


def rendered(fig):
    """The figure as an RGB array whose row 0 is the top of the picture."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return np.asarray(canvas.buffer_rgba())[..., :3]


def test_heatmap_has_layer_1_on_top_and_head_1_on_the_left():
    grid = np.zeros((3, 4))
    grid[0, 0] = 1.0  # layer 1, head 1
    fig = Figure(figsize=(4, 3), dpi=50)
    ax = fig.add_axes((0, 0, 1, 1))
    base.draw_head_heatmap(ax, grid, cmap="gray", vmin=0, vmax=1, ylabel=None)
    bright = rendered(fig).mean(axis=-1) > 128
    rows, cols = np.nonzero(bright)
    height, width = bright.shape
    # exactly the top-left cell of a 3 x 4 grid is white (inside the black frame)
    assert rows.max() < height / 3 + 1 and cols.max() < width / 4 + 1
    assert bright[2: height // 3 - 2, 2: width // 4 - 2].all()
    assert visible_ticks(ax.xaxis) == [1, 2, 3, 4] and visible_ticks(ax.yaxis) == [1, 2, 3]


def visible_ticks(axis) -> list[float]:
    low, high = sorted(axis.get_view_interval())
    return [t for t in axis.get_ticklocs() if low <= t <= high]


def test_heatmap_thins_head_ticks_that_would_collide():
    # 24 heads on a 2.4-inch axis: 24 labels would overlap; fewer, whole ids, none overlapping
    fig = Figure(figsize=(3, 3))
    ax = fig.add_axes((0.1, 0.1, 0.8, 0.8))
    base.draw_head_heatmap(ax, np.zeros((24, 24)), ylabel=None)
    rendered(fig)
    ticks = visible_ticks(ax.xaxis)
    assert 2 <= len(ticks) < 24 and all(float(t).is_integer() for t in ticks)
    boxes = sorted((label.get_window_extent() for label in ax.get_xticklabels()
                    if label.get_visible() and label.get_text()), key=lambda box: box.x0)
    assert all(left.x1 <= right.x0 for left, right in zip(boxes, boxes[1:]))


def test_heatmap_outlines_the_head_asked_and_writes_values():
    fig = Figure()
    ax = fig.subplots()
    grid = np.array([[10.0, 90.0, np.nan], [50.0, 20.0, 70.0]])
    base.draw_head_heatmap(ax, grid, vmin=0, vmax=100, annotate="{:.0f}", outline=(2, 3),
                           outline_colour="#123456")
    (box,) = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert box.get_xy() == (2.5, 1.5) and (box.get_width(), box.get_height()) == (1, 1)
    assert matplotlib.colors.to_hex(box.get_edgecolor()) == "#123456" and not box.get_fill()
    # the box surrounds the cell drawn at data (head 3, layer 2), like ax.scatter(3, 2) would
    assert box.contains_point(ax.transData.transform((3, 2)))
    texts = {(t.get_position(), t.get_text(), t.get_color()) for t in ax.texts}
    assert texts == {((1, 1), "10", "white"), ((2, 1), "90", "black"), ((1, 2), "50", "black"),
                     ((2, 2), "20", "white"), ((3, 2), "70", "black")}  # NaN: no text


def test_heatmap_panels_share_layers_limits_and_one_colorbar():
    fig = Figure()
    grids = [np.array([[0.0, 1.0]]), np.array([[-3.0, 2.0]])]
    axes = base.head_heatmaps(fig, grids, ["a", "b"], outlines=[None, (1, 2)], colorbar="value")
    assert [ax.get_title() for ax in axes] == ["a", "b"]
    assert [ax.get_ylabel() for ax in axes] == ["layer", ""]
    assert [im.get_clim() for ax in axes for im in ax.images] == [(-3.0, 2.0)] * 2
    assert [len(ax.patches) for ax in axes] == [0, 1]
    assert len(fig.axes) == 3 and fig.axes[2].get_ylabel() == "value"  # the colour bar


# ----------------------------------------------------------------------------
# the attention-lines picture
# ----------------------------------------------------------------------------

def test_attention_lines_draw_each_weight_from_0_01_with_that_opacity():
    attn = np.array([[0.5, 0.495, 0.005],
                     [0.0, 0.01, 0.99],
                     [0.3, 0.0099, 0.6901]])
    fig = Figure()
    ax = fig.subplots()
    base.draw_attention_lines(ax, attn, ["a", "b", "c"], colour="#0000ff",
                              highlight=np.array([False, False, True]), highlight_colour="#ff0000")
    (lines,) = ax.collections
    drawn = {(int(-s[0, 1]), int(-s[1, 1])): tuple(c) for s, c in
             zip(lines.get_segments(), lines.get_colors())}
    assert set(drawn) == {(0, 0), (0, 1), (1, 1), (1, 2), (2, 0), (2, 2)}  # i (left) -> j (right)
    for (i, j), rgba in drawn.items():
        assert rgba[3] == pytest.approx(attn[i, j])
        assert rgba[:3] == ((1.0, 0.0, 0.0) if 2 in (i, j) else (0.0, 0.0, 1.0))
    assert all(s[0, 0] == 0 and s[1, 0] == 1 for s in lines.get_segments())
    labels = [(t.get_text(), t.get_color()) for t in ax.texts]
    assert labels == [("a", "black"), ("b", "black"), ("c", "#ff0000")] * 2  # both columns
    assert not ax.axison


def test_attention_lines_clip_a_weight_above_one():
    fig = Figure()
    ax = fig.subplots()
    base.draw_attention_lines(ax, np.array([[1.0004]], dtype=np.float16), ["x"], colour="k")
    assert ax.collections[0].get_colors()[0, 3] == 1.0


# ----------------------------------------------------------------------------
# every figure function, on tiny tables
# ----------------------------------------------------------------------------

def tiny_calls(example):
    """``(name, draw(path))`` for every public figure function."""
    rng = np.random.default_rng(2)
    dependency = pd.concat([per_head(accuracy=(0, 1)).assign(relation="det", direction=d, n=5)
                            for d in ("dep->head", "head->dep")], ignore_index=True)
    panel = LinePanel("Head 1-2 det", example.tokens, example.attn[0, 1],
                      np.array([False, True, True] + [False] * (example.n_tokens - 3)))
    honest = pd.DataFrame({"evaluated_on": ["dev", "dev"], "relation": ["det", "nsubj"],
                           "acc": [50.0, 60.0], "acc_low": [40.0, 50.0], "acc_high": [60.0, 70.0],
                           "baseline_acc": [30.0, 20.0], "baseline_acc_low": [25.0, 15.0],
                           "baseline_acc_high": [35.0, 25.0], "same_data_acc": [70.0, 80.0]})
    coords = per_head(x=(-1, 1), y=(-1, 1)).assign(behaviour=["broad", "next", "prev", "sep", "cls", "x"])
    features = ["cls", "sep", "comma", "period", "self"] + [f"win{i:02d}" for i in range(1, 17)]
    types = per_head(**{c: (0, 1) for c in features}).assign(
        type=["dense", "diagonal", "vertical", "dense", "diagonal", "vertical"])
    changes = types[["layer", "head"]].assign(before=types["type"], after=types["type"][::-1].to_numpy())
    changes["changed"] = changes["before"] != changes["after"]
    by_layer = changes.groupby("layer", as_index=False)["changed"].sum()
    t3 = pd.DataFrame({"paper_name": ["attn-only", "structural"], "dev": [60.0, np.nan],
                       "dev_sd": [1.0, np.nan], "paper_uas": [77.0, 80.0]})
    weights = pd.concat([per_head(weight=(-1, 1)).assign(direction=d, seed=s)
                         for d in ("dep->head", "head->dep") for s in (0, 1)], ignore_index=True)
    grid = pd.DataFrame({"variant": ["unablated", "prune dense"], "group": ["baseline", "prune one"],
                         "paper_id": ["1", ""], "heads_changed": [0, 2],
                         "accuracy_pct_of_unablated": [100.0, 80.0],
                         "paper_f1_pct_of_unablated": [100.0, np.nan]})
    classes = ["cls", "sep", "punct", "other"]
    shares = pd.DataFrame([{"layer": layer, "class": c, "attention": a, "norm": a / 2 if c != "other" else
                            1 - 3 * a / 2, "layer_norm": 0.25, "value_norm": 1.0}
                           for layer in (1, 2) for c, a in zip(classes, (0.3, 0.2, 0.1, 0.4))])
    correlation = pd.DataFrame({"class": classes, "spearman": [-0.5, -0.2, np.nan, 0.1],
                                "n_pairs": [10, 10, 0, 10], "layer_1": [-0.4, -0.1, np.nan, 0.0],
                                "layer_2": [-0.6, -0.3, np.nan, 0.2]})
    rolled = pd.DataFrame([{"source": s, "layer": layer, "cls": 0.3, "sep": 0.2, "punct": 0.1, "other": 0.4,
                            "special": 0.6} for s in ("attention", "norm") for layer in (1, 2)])
    profile = pd.DataFrame([{"source": s, "layer": layer, "offset": k, "mass": 0.5 if k == 0 else 0.05}
                            for s in ("attention", "norm") for layer in (1, 2) for k in (-2, -1, 0, 1, 2)])
    sink_heads = per_head(sink_rate=(0, 1))
    sink_layers = pd.DataFrame([{"layer": layer, "role": role, "sink_rate": 0.5}
                                for layer in (1, 2) for role in ("any", "cls", "sep", "punct", "first", "other")])
    return {
        "plot_sink_rate": lambda p: sinks.plot_sink_rate(sink_heads, sink_layers, p, CAPTION),
        "plot_norm_shares": lambda p: norms.plot_norm_shares(shares, correlation, p, CAPTION),
        "plot_rollout": lambda p: rollout.plot_rollout(rolled, profile, p, CAPTION),
        "plot_relative_position": lambda p: surface.plot_relative_position(
            per_head(prev=(0, 1), self=(0, 1), next=(0, 1)), p, CAPTION),
        "plot_special_tokens": lambda p: surface.plot_special_tokens(
            per_head(cls=(0, 1), sep=(0, 1), punct=(0, 1), sep_from_sep=(0, 1),
                     sep_from_other=(0, 1)), p, CAPTION),
        "plot_entropy": lambda p: surface.plot_entropy(
            per_head(entropy=(0, 3), uniform_entropy=(3.5, 3.5), cls_entropy=(0, 3)), p, CAPTION),
        "plot_attention_lines": lambda p: surface.plot_attention_lines(example, HEADS, p, CAPTION),
        "plot_note": lambda p: base.plot_note("nothing to draw", p, CAPTION),
        "plot_relation_heatmap": lambda p: syntax.plot_relation_heatmap(
            dependency, "det", (1, 0.5), p, CAPTION),
        "plot_dependency_lines": lambda p: syntax.plot_dependency_lines([[panel, panel], [panel]], p,
                                                                        CAPTION),
        "plot_regimes": lambda p: syntax.plot_regimes(honest, p, CAPTION),
        "plot_head_accuracy": lambda p: coref.plot_head_accuracy(
            per_head(acc_a=(0, 100), acc_b=(0, 100)), [("acc_a", "a", "2-3"), ("acc_b", "b", None)],
            p, CAPTION),
        "plot_mds": lambda p: clustering.plot_mds(coords, p, CAPTION),
        "plot_gradients": lambda p: gradients.plot_gradients(
            per_head(sep=(1, 2), punct=(0.5, 1), cls=(0.1, 0.5), other=(0.2, 0.4)), p, CAPTION),
        "plot_tsne": lambda p: headtypes.plot_tsne(types, rng.normal(size=(len(types), 2)), p, CAPTION),
        "plot_feature_boxes": lambda p: headtypes.plot_feature_boxes(types, p, CAPTION),
        "plot_layer_shares": lambda p: headtypes.plot_layer_shares(types, p, CAPTION),
        "plot_type_grid": lambda p: headtypes.plot_type_grid(
            types, p, CAPTION, consistent=pd.Series([True] * 5 + [False])),
        "plot_type_changes": lambda p: headtypes.plot_type_changes(changes, by_layer, ("a", "b"), p,
                                                                   CAPTION),
        "plot_table3": lambda p: probes.plot_table3(t3, ["dev"], p, CAPTION),
        "plot_probe_weights": lambda p: probes.plot_probe_weights(weights, p, CAPTION),
        "plot_ablation": lambda p: ablation.plot_ablation(grid, "accuracy", p, CAPTION),
    }


def public_plot_functions():
    modules = [base] + [sys.modules[f"headatlas.plots.{m}"] for m in PLOT_MODULES]
    return {name for m in modules for name in vars(m)
            if name.startswith("plot_") and getattr(m, name).__module__ == m.__name__}


def test_every_figure_function_has_a_tiny_case(example):
    assert set(tiny_calls(example)) == public_plot_functions()


@pytest.fixture
def saved(monkeypatch):
    """Per figure saved: was it made by captioned_figure?"""
    made_by_captioned_figure = []
    savefig = Figure.savefig

    def spy(self, *args, **kwargs):
        made_by_captioned_figure.append(isinstance(self, base.CaptionedFigure))
        return savefig(self, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", spy)
    return made_by_captioned_figure


@pytest.mark.parametrize("name", sorted(public_plot_functions()))
def test_every_figure_is_one_captioned_svg(tmp_path, example, saved, name):
    path = tmp_path / "fig" / f"{name}.svg"  # parent folder does not exist yet
    tiny_calls(example)[name](path)
    assert saved == [True]  # one figure, built by captioned_figure
    text = path.read_text()
    assert text.lstrip().startswith(("<?xml", "<svg"))
    # through captioned_figure, as text (svg.fonttype none), maybe wrapped over several lines
    assert CAPTION in " ".join(" ".join(re.findall(r">([^<]*)</text>", text)).split())
    assert "<dc:date>" not in text
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left


@pytest.mark.parametrize("module", PLOT_MODULES)
def test_a_plot_module_imports_no_other_and_no_torch(module):
    # Reruns follow each script's imports: one figure's module must not pull in the others.
    code = (f"import sys, headatlas.plots.{module}; "
            "print(sorted(m for m in sys.modules if m.startswith('headatlas.plots.'))); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == [
        str(sorted(["headatlas.plots.base", "headatlas.plots.files", f"headatlas.plots.{module}"])),
        "False"]


# ----------------------------------------------------------------------------
# writing: whole, in the suffix's format, or not at all
# ----------------------------------------------------------------------------

def draw(kind, tables, example, path):
    rel, special, entropy = tables
    if kind == "relative_position":
        surface.plot_relative_position(rel, path, CAPTION)
    elif kind == "special_tokens":
        surface.plot_special_tokens(special, path, CAPTION)
    elif kind == "entropy":
        surface.plot_entropy(entropy, path, CAPTION)
    else:
        surface.plot_attention_lines(example, HEADS, path, CAPTION)


KINDS = ["relative_position", "special_tokens", "entropy", "attention_lines"]


@pytest.mark.parametrize("kind", KINDS)
def test_writes_one_complete_png(tmp_path, rel, special, entropy, example, kind):
    path = tmp_path / "fig" / f"{kind}.png"
    draw(kind, (rel, special, entropy), example, path)
    assert path.read_bytes().startswith(PNG_MAGIC)
    assert [p.name for p in path.parent.iterdir()] == [path.name]


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

    monkeypatch.setattr(Figure, "savefig", fail)
    with pytest.raises(OSError):
        surface.plot_relative_position(rel, tmp_path / "rel.png", CAPTION)
    assert list(tmp_path.iterdir()) == []


def test_unknown_format_rejected(tmp_path, rel):
    with pytest.raises(ValueError, match="jpg"):
        surface.plot_relative_position(rel, tmp_path / "rel.jpg", CAPTION)
    with pytest.raises(ValueError, match="jpg"):  # checked before any file of the list is written
        surface.plot_relative_position(rel, [tmp_path / "rel.svg", tmp_path / "rel.jpg"], CAPTION)
    assert list(tmp_path.iterdir()) == []


def test_attention_lines_rejects_head_outside_model(tmp_path, example):
    with pytest.raises(ValueError, match="3-1"):
        surface.plot_attention_lines(example, {"sep": (3, 1)}, tmp_path / "lines.png", CAPTION)
    assert list(tmp_path.iterdir()) == []


def comparable_svg(path) -> bytes:
    """SVG text with coordinates cut to 3 decimals and clip-path ids (hashes of them) removed.

    Constrained layout can move an axis by 1e-6 between identical runs, which changes the
    last digit of a coordinate and the hash-derived clip-path ids; nothing a reader sees.
    """
    text = re.sub(rb"#?p[0-9a-f]{10}\b", b"CLIP", path.read_bytes())
    return re.sub(rb"(\d+\.\d{3})\d+", rb"\1", text)


@pytest.mark.parametrize("name", ["plot_special_tokens", "plot_head_accuracy", "plot_dependency_lines"])
def test_svg_is_reproducible(tmp_path, example, name):
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    tiny_calls(example)[name](a)
    tiny_calls(example)[name](b)
    assert comparable_svg(a) == comparable_svg(b)
    assert b"<dc:date>" not in a.read_bytes()  # no timestamp in the file


# ----------------------------------------------------------------------------
# readable: annotation contrast, colour-blind-safe classes
# ----------------------------------------------------------------------------

@pytest.mark.parametrize(("background", "text"), [
    ("#08306b", "white"),   # the dark end of Blues
    ("#f7f7f7", "black"),   # the near-white middle of RdBu, where values are near 0
    ("#2166ac", "white"), ("#fddbc7", "black"), ("#fde725", "black"), ("#440154", "white"),
])
def test_annotation_colour_follows_the_cells_luminance(background, text):
    assert base.text_colour_on(background) == text


def test_diverging_heatmap_writes_values_near_zero_in_black():
    # RdBu around 0: -0.05 and +0.05 sit on near-white cells (the old rule wrote -0.05 in white)
    fig = Figure()
    ax = fig.subplots()
    grid = np.array([[-1.0, -0.05, 0.05, 1.0]])
    base.draw_head_heatmap(ax, grid, cmap="RdBu", vmin=-1, vmax=1, annotate="{:.2f}")
    assert [t.get_color() for t in ax.texts] == ["white", "black", "black", "white"]


# Machado et al. (2009) colour-vision deficiency simulation (severity 1), on linear RGB.
VISIONS = {"normal": np.eye(3),
           "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                          [-0.003882, -0.048116, 1.051998]],
           "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                            [-0.011820, 0.042940, 0.968881]],
           "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                          [0.004733, 0.691367, 0.303900]]}


def lab(colour, vision):
    """CIELAB of ``colour`` as seen with ``vision``."""
    rgb = np.asarray(matplotlib.colors.to_rgb(colour))
    linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
    linear = np.clip(np.asarray(VISIONS[vision]) @ linear, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722],
                    [0.0193, 0.1192, 0.9505]]) @ linear / [0.95047, 1.0, 1.08883]
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def closest_pair(colours: dict) -> float:
    """The smallest CIE76 distance between two of ``colours``, over every kind of vision."""
    names = list(colours)
    return min(np.linalg.norm(lab(colours[a], v) - lab(colours[b], v))
               for v in VISIONS for i, a in enumerate(names) for b in names[i + 1:])


def test_token_classes_stay_apart_for_every_colour_vision():
    # the classes drawn together (Fig. 2, the norm shares, the MDS behaviours)
    drawn_together = ["cls", "sep", "punct", "other", "prev", "next", "broad"]
    assert closest_pair({k: base.COLOURS[k] for k in drawn_together}) > 12
    # the former [SEP] and ". ," greens: 3 apart for a tritanope
    assert closest_pair({"sep": "#2ca25f", "punct": "#159d82"}) < 5


# ----------------------------------------------------------------------------
# every file of a figure: formats, the caption-free copy
# ----------------------------------------------------------------------------

def test_figure_files_names_each_format_with_and_without_caption():
    assert files.figure_files("r/{analysis}.svg", ["svg", "pdf"]) == [
        "r/{analysis}.svg", "r/{analysis}.pdf", "r/{analysis}.nocaption.svg", "r/{analysis}.nocaption.pdf"]
    assert files.figure_files("r/errors.png", ["svg"]) == [
        "r/errors.png", "r/errors.svg", "r/errors.nocaption.svg"]
    assert [files.is_caption_free(p) for p in ("a.nocaption.pdf", "nocaption.svg", "a.svg")] == [
        True, False, False]


def svg_text(path) -> str:
    return " ".join(" ".join(re.findall(r">([^<]*)</text>", path.read_text())).split())


def test_one_drawing_writes_every_file_and_the_copy_has_no_caption(tmp_path, rel):
    paths = files.figure_files(str(tmp_path / "rel.svg"), ["svg", "png", "pdf"])
    surface.plot_relative_position(rel, paths, CAPTION)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["rel.svg", "rel.png", "rel.pdf", "rel.nocaption.svg", "rel.nocaption.png", "rel.nocaption.pdf"])
    pdf = (tmp_path / "rel.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"%%EOF" in pdf[-32:] and b"CreationDate" not in pdf
    assert (tmp_path / "rel.nocaption.pdf").read_bytes().startswith(b"%PDF")
    assert CAPTION in svg_text(tmp_path / "rel.svg")
    clean = svg_text(tmp_path / "rel.nocaption.svg")
    assert "model tiny" not in clean and "attention to the previous token" in clean
    # the copy is shorter by the caption band, the same width
    with_caption = matplotlib.image.imread(tmp_path / "rel.png").shape
    without = matplotlib.image.imread(tmp_path / "rel.nocaption.png").shape
    assert without[1] == with_caption[1] and without[0] < with_caption[0]


def test_the_figure_keeps_its_caption_after_the_caption_free_copy(tmp_path):
    fig = base.captioned_figure(3, 2, CAPTION)
    fig.subplots().plot([0, 1])
    size, rect = tuple(fig.get_size_inches()), fig.get_layout_engine().get()["rect"]
    base.atomic_savefig(fig, [tmp_path / "a.nocaption.svg", tmp_path / "a.svg"])
    assert CAPTION in svg_text(tmp_path / "a.svg") and "model tiny" not in svg_text(tmp_path / "a.nocaption.svg")
    assert tuple(fig.get_size_inches()) == size and fig.get_layout_engine().get()["rect"] == rect
    assert fig.caption.get_visible()


def test_one_layout_serves_every_file_of_a_figure(tmp_path, monkeypatch):
    """The constrained layout runs once for the four files (it and the draw savefig makes for it
    were half of a figure job's saving); the caption-free copy is that drawing less its band."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    runs = []
    execute = ConstrainedLayoutEngine.execute
    monkeypatch.setattr(ConstrainedLayoutEngine, "execute", lambda self, fig: runs.append(1) or execute(self, fig))
    fig = base.captioned_figure(3, 2, CAPTION)
    fig.subplots().imshow(np.eye(3))
    base.atomic_savefig(fig, files.figure_files(str(tmp_path / "a.png"), ["png", "svg"]))
    assert len(runs) == 1
    with_caption = matplotlib.image.imread(tmp_path / "a.png")
    without = matplotlib.image.imread(tmp_path / "a.nocaption.png")
    band = with_caption.shape[0] - without.shape[0]
    assert band == round(fig.band_inches * fig.dpi) and np.array_equal(without, with_caption[:-band])
    assert isinstance(fig.get_layout_engine(), ConstrainedLayoutEngine)  # the figure's own engine again
    base.atomic_savefig(fig, tmp_path / "b.svg")
    assert len(runs) == 2  # a later save lays the figure out anew


def test_a_contact_sheet_shows_the_first_column_apart_from_the_frame(tmp_path):
    """The labelling sheets: a map whose only weight is on its first key ([CLS], the commonest
    stripe) shows that column as its own dark line, white between it and the frame (drawn flush
    against the frame, the frame line hid it from the labellers: issue 37)."""
    import numpy as np
    from PIL import Image

    from headatlas.plots.patterns import draw_contact_sheet

    attn = np.zeros((20, 20))
    attn[:, 0] = 1.0
    draw_contact_sheet([attn], [np.zeros(20, dtype=int)], ["m"], tmp_path / "s.png", columns=1)
    grey = np.asarray(Image.open(tmp_path / "s.png").convert("L"), dtype=float)
    row = grey[grey.shape[0] // 2]
    dark = row < 128
    runs = np.flatnonzero(np.diff(dark.astype(int)) == 1)  # where each dark run starts
    assert len(runs) >= 3, runs  # left frame, the [CLS] column, right frame
    first_end = np.flatnonzero(np.diff(dark.astype(int)) == -1)[0]
    assert (row[first_end + 1:runs[1] + 1] > 200).all()  # white between frame and column
