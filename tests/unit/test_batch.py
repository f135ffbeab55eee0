"""MapBatch (issue 32): a batch of maps in one array, numpy or torch, and the batched analyses.

A batched analysis must give, from one zero-padded batch of examples of different lengths, in
either namespace, the state it gives from the examples one at a time.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from headatlas.analyses.batch import MapBatch, join_layers, layer_of, to_host
from headatlas.store.example import Example
from tests.unit.test_contract import CLASSES

BATCHED = [cls for cls in CLASSES if cls.batched()]
LAYERS, HEADS = 2, 3


def example(index: int, n: int, two_segments: bool = False) -> Example:
    """Random softmax maps rounded to float16 as a store keeps them; [CLS] w ... . [SEP]."""
    rng = np.random.default_rng(index)
    logits = rng.normal(0, 3, (LAYERS, HEADS, n, n))
    attn = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    attn[0, 0, :, 0] += 2  # a sink on [CLS] in one head
    attn /= attn.sum(-1, keepdims=True)
    tokens = ["[CLS]"] + [f"w{i}" for i in range(n - 3)] + [".", "[SEP]"]
    types = np.zeros(n, np.int8)
    if two_segments:
        types[n // 2:] = 1
    def stored(x):
        return x.astype(np.float16).astype(np.float32)

    return Example(index=index, id=f"e{index}", tokens=tokens, input_ids=np.arange(n, dtype=np.int32),
                   token_type_ids=types, word_ids=np.arange(n, dtype=np.int32), attn=stored(attn),
                   value_norms=stored(rng.uniform(0.5, 3, (LAYERS, HEADS, n))),
                   norm_map=stored(rng.uniform(0, 2, (LAYERS, n, n))))


EXAMPLES = [example(0, 7), example(1, 11, two_segments=True), example(2, 5)]


def as_torch(batch: MapBatch) -> MapBatch:
    """The same batch as a torch tensor, its examples without maps (as a device batch)."""
    def tensor(x):
        return None if x is None else torch.from_numpy(np.array(x))
    return MapBatch(tensor(batch.attn), [replace(e, attn=None) for e in batch.examples],
                    value_norms=tensor(batch.value_norms), norm_map=tensor(batch.norm_map))


def test_a_batch_is_zero_padded_and_one_example_is_not_copied():
    batch = MapBatch.of(EXAMPLES)
    assert batch.attn.shape == (3, LAYERS, HEADS, 11, 11) and batch.lengths.tolist() == [7, 11, 5]
    assert not batch.attn[0, :, :, 7:].any() and not batch.attn[0, :, :, :, 7:].any()
    np.testing.assert_array_equal(batch.attn[2, :, :, :5, :5], EXAMPLES[2].attn)
    single = MapBatch.of(EXAMPLES[:1])
    assert np.shares_memory(single.attn, EXAMPLES[0].attn)
    # a device batch gives its maps back cut to each example's length
    back = as_torch(batch).host_examples()
    np.testing.assert_array_equal(back[1].attn, EXAMPLES[1].attn)


def test_shared_quantities_are_computed_once_per_batch():
    batch = MapBatch.of(EXAMPLES)
    calls = []
    for _ in range(3):
        batch.cached("x", lambda: calls.append(1) or len(calls))
    assert calls == [1]
    assert batch.row_entropy() is batch.row_entropy()


def test_the_token_classes_of_a_batch_are_each_example_s_padded():
    both = replace(example(3, 4), tokens=["[CLS]", ",", "[SEP]", "[CLS]"], cls_token="[CLS]", sep_token="[CLS]")
    examples = [*EXAMPLES, both]  # a token both [CLS] and [SEP] is in both columns
    classes = MapBatch.of(examples).host_classes()
    assert classes.shape == (4, 11, 4) and classes.dtype == np.float32
    for b, e in enumerate(examples):
        np.testing.assert_array_equal(classes[b, :e.n_tokens], e.class_onehot)
        assert not classes[b, e.n_tokens:].any()
    assert classes[3, :, :2].tolist() == [[1, 1], [0, 0], [0, 0], [1, 1]] + [[0, 0]] * 7


def test_row_entropy_and_column_mass_by_hand():
    # uniform rows over n keys: entropy log n; each key receives n * (1/n) = 1 over the queries
    uniform = [replace(EXAMPLES[0], attn=np.full((LAYERS, HEADS, n, n), 1 / n, np.float32),
                       tokens=EXAMPLES[0].tokens[:n], value_norms=None, norm_map=None) for n in (2, 4)]
    for batch in (MapBatch.of(uniform), as_torch(MapBatch.of(uniform))):
        entropy = to_host(batch.row_entropy())
        assert entropy[0, 0, 0].tolist() == pytest.approx([math.log(2)] * 2 + [0, 0], abs=1e-6)
        assert entropy[1, 0, 0].tolist() == pytest.approx([math.log(4)] * 4, abs=1e-6)
        assert to_host(batch.column_mass())[0, 1, 2].tolist() == pytest.approx([1, 1, 0, 0])


def test_a_stored_example_s_entropies_are_looked_up_and_only_for_its_own_maps():
    from headatlas.store.halves import TINY

    def arithmetic(maps):
        return -np.vecdot(maps, np.log(np.clip(maps, TINY, None)))

    e = EXAMPLES[1]
    stored = replace(e).widened_from(e.attn.astype(np.float16))  # attn is exactly these halves widened
    batch = MapBatch.of([stored])
    assert batch._own_example() is stored
    np.testing.assert_allclose(batch.row_entropy(), arithmetic(e.attn)[None], rtol=2e-6, atol=1e-6)
    # its norm view's, from the view's parts: the arithmetic on the view's maps
    norm = MapBatch.of([stored.weighted("norm")])
    assert norm.examples[0]._norm_parts is not None
    np.testing.assert_allclose(norm.row_entropy(), arithmetic(norm.attn), rtol=1e-5, atol=1e-6)
    # not for a layer of the maps, a batch of two, or a copy with other maps
    assert layer_of(batch, 1)._own_example() is None
    assert MapBatch.of([stored, stored])._own_example() is None
    assert replace(stored, attn=e.attn.copy()).halves is None


def test_the_norm_view_of_a_batch_is_its_producers_or_made_once():
    from headatlas.analyses.batch import Views
    from headatlas.weightings import norm_weighted

    e = EXAMPLES[0]
    made = MapBatch.of([e])
    norm = made.view("norm")
    assert norm is made.view("norm") and norm.weighting == "norm" and made.view("attention") is made
    np.testing.assert_array_equal(norm.attn[0], norm_weighted(e.attn, e.value_norms))
    np.testing.assert_array_equal(norm.host_examples()[0].attn, norm.attn[0])  # its examples: its maps
    with pytest.raises(ValueError, match="cannot be seen under attention"):
        norm.view("attention")
    # beside a producer's views: theirs (held weakly: once they are gone, made here again)
    views = Views()
    views["attention"] = MapBatch.of([e], views=views)
    views["norm"] = MapBatch.of([e.weighted("norm")], views=views)
    attention = views["attention"]
    assert attention.view("norm") is views["norm"]
    del views
    np.testing.assert_array_equal(attention.view("norm").attn, norm.attn)


def test_the_entropy_table_of_a_padded_batch_by_hand():
    from headatlas.analyses.surface import Entropy

    uniform = [replace(EXAMPLES[0], attn=np.full((LAYERS, HEADS, n, n), 1 / n, np.float32),
                       tokens=["[CLS]"] + ["w"] * (n - 2) + ["[SEP]"], value_norms=None, norm_map=None)
               for n in (2, 4)]
    acc = Entropy(LAYERS, HEADS)
    acc.add_batch(as_torch(MapBatch.of(uniform)))
    table = acc.result().tables["heads"]
    # token-weighted: (2 rows x log 2 + 4 rows x log 4) / 6; the [CLS] rows: (log 2 + log 4) / 2;
    # the largest weight per row: (2 x 1/2 + 4 x 1/4) / 6
    assert table["entropy"].tolist() == pytest.approx([(2 * math.log(2) + 4 * math.log(4)) / 6] * 6)
    assert table["cls_entropy"].tolist() == pytest.approx([(math.log(2) + math.log(4)) / 2] * 6)
    assert table["max_weight"].tolist() == pytest.approx([2 / 6] * 6)
    assert acc.n_examples == 2 and acc.lengths.tolist() == [2, 4]


@pytest.mark.parametrize("namespace", ["numpy", "torch", "compiled"])
@pytest.mark.parametrize("cls", BATCHED, ids=lambda cls: cls.name)
def test_a_padded_batch_gives_the_state_of_its_examples_one_at_a_time(cls, namespace, monkeypatch):
    """``compiled``: the batch's per-row quantities from the compiled loops
    (:mod:`headatlas.analyses._kernels`), the examples' from numpy."""
    from headatlas.store import halves

    monkeypatch.setattr(halves, "NUMPY_HALVES", 10 ** 18)
    monkeypatch.setattr(halves, "_started", False)
    one = cls(LAYERS, HEADS)
    for e in EXAMPLES:
        one.add(e)
    batch = MapBatch.of(EXAMPLES)
    monkeypatch.setattr(halves, "_started", namespace == "compiled")
    two = cls(LAYERS, HEADS)
    two.add_batch(as_torch(batch) if namespace == "torch" else batch)
    expected, found = one.state(), two.state()
    assert expected.keys() == found.keys()
    for key in expected:
        np.testing.assert_allclose(found[key], expected[key], rtol=1e-6, atol=1e-9, err_msg=key)


@pytest.mark.parametrize("namespace", ["numpy", "torch"])
@pytest.mark.parametrize("cls", BATCHED, ids=lambda cls: cls.name)
def test_a_batch_read_one_layer_at_a_time_gives_the_state_of_the_whole(cls, namespace):
    """What a fused extraction on a device does (peak: one layer's maps): each layer reduced
    as the model produces it, the reductions joined and folded once per batch."""
    batch = MapBatch.of(EXAMPLES)
    batch = batch if namespace == "numpy" else as_torch(batch)
    whole = cls(LAYERS, HEADS)
    whole.add_batch(batch)
    by_layer = cls(LAYERS, HEADS)
    shared = {}  # what the layers share (masks, samples) is made once
    layers = [layer_of(batch, layer, shared) for layer in range(LAYERS)]
    assert [list(b.layers) for b in layers] == [[0], [1]]
    by_layer.add_reduced(layers[-1], join_layers([by_layer.reduce(b) for b in layers]))
    expected, found = whole.state(), by_layer.state()
    assert expected.keys() == found.keys()
    for key in expected:  # float32 products of one layer and of two may round apart (1.4e-7 on AVX2)
        np.testing.assert_allclose(found[key], expected[key], rtol=1e-6, atol=1e-9, err_msg=key)


@pytest.mark.parametrize("namespace", ["numpy", "torch"])
def test_norm_shares_gathers_the_pairs_of_the_rows_its_sample_admits_alone(namespace):
    """sample_examples = 1, the sample full after a first batch: of a later padded batch, only
    the rows whose key is below the kept one draw pairs; read layer by layer, the state is that
    of every example added one at a time."""
    from headatlas.analyses.norms import NormShares
    from headatlas.analyses.sample import example_key

    first, later = [example(1, 6)], [example(i, n) for i, n in ((4, 9), (5, 4), (6, 8), (7, 6), (8, 7))]
    admitted = [b for b, e in enumerate(later) if example_key(0, e.index) < example_key(0, 1)]
    assert admitted == [1, 3]  # corpus positions 5 and 7: the second evicts the first in the fold
    one, by_layer = NormShares(LAYERS, HEADS, sample_examples=1), NormShares(LAYERS, HEADS, sample_examples=1)
    for e in first + later:
        one.add(e)
    by_layer.add(first[0])
    batch = MapBatch.of(later)
    batch = batch if namespace == "numpy" else as_torch(batch)
    shared = {}
    layers = [layer_of(batch, layer, shared) for layer in range(LAYERS)]
    reduced = join_layers([by_layer.reduce(b) for b in layers])
    assert by_layer._drawn(layers[0]).rows.tolist() == admitted and to_host(reduced["alpha"]).shape[0] == len(admitted)
    by_layer.add_reduced(layers[-1], reduced)
    expected, found = one.state(), by_layer.state()
    for key in expected:
        np.testing.assert_allclose(found[key], expected[key], rtol=1e-6, atol=1e-9, err_msg=key)


def test_every_batched_analysis_reads_one_layer_at_a_time():
    """A batched analysis that is not layered would make a device extraction hold every
    layer's maps again."""
    assert BATCHED and all(cls.layered() for cls in BATCHED)


def test_a_batch_of_some_layers_says_which():
    batch = MapBatch.of(EXAMPLES)
    assert list(batch.layers) == list(range(LAYERS))
    with pytest.raises(ValueError, match="cannot be the model's layers"):
        MapBatch(batch.attn, batch.examples, layers=range(5))


def test_selected_rows_are_a_batch_of_their_own():
    batch = as_torch(MapBatch.of(EXAMPLES))
    part = batch.select([2, 0])
    assert part.lengths.tolist() == [5, 7] and [e.index for e in part.examples] == [2, 0]
    np.testing.assert_array_equal(to_host(part.attn)[0, :, :, :5, :5], EXAMPLES[2].attn)


def test_maps_that_do_not_fit_their_examples_are_refused():
    with pytest.raises(ValueError, match="do not fit"):
        MapBatch(np.zeros((2, LAYERS, HEADS, 4, 4), np.float32), EXAMPLES[:2])


def test_an_analysis_without_a_batched_path_reads_the_batch_example_by_example():
    from headatlas.analyses.base import Analysis

    class FirstWeights(Analysis):  # per example: the [0, 0, 0, 0] weight of its maps
        name = "first_weights"

        def __init__(self, n_layers: int, n_heads: int):
            super().__init__(n_layers, n_heads)
            self.seen = []

        def update(self, example):
            assert isinstance(example.attn, np.ndarray) and example.attn.shape[-1] == example.n_tokens
            self.seen.append(float(example.attn[0, 0, 0, 0]))

        def _state(self):
            return {}

        def _merge(self, state):
            pass

        def result(self):
            raise NotImplementedError

    assert not FirstWeights.batched()
    acc = FirstWeights(LAYERS, HEADS)
    acc.add_batch(as_torch(MapBatch.of(EXAMPLES)))
    assert acc.seen == [float(e.attn[0, 0, 0, 0]) for e in EXAMPLES]
    assert acc.n_examples == 3 and acc.lengths.tolist() == [5, 7, 11]  # ascending


def test_upload_keeps_each_host_array_s_values_shape_and_dtype():
    from headatlas.analyses.batch import upload
    from tests.conftest import TEST_DEVICE

    device = torch.device("cuda" if TEST_DEVICE == "cuda" else "cpu")  # on CUDA: through pinned memory
    arrays = [np.float64(2.5), np.arange(6, dtype=np.int64).reshape(2, 3), np.array([True, False]),
              np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3)),  # a view with a zero stride
              np.arange(12.0)[::3]]  # not contiguous
    for host in arrays:
        on = upload(host, device)
        assert on.device.type == device.type and on.shape == host.shape
        assert on.dtype == torch.from_numpy(np.ascontiguousarray(host)).dtype
        np.testing.assert_array_equal(on.cpu().numpy(), host)
    # a host array changed after its upload: the copy on a device keeps the values it was given
    # (pinned memory is a copy), the CPU's tensor shares the array's memory (as torch.asarray's)
    host = np.zeros(4)
    on = upload(host, device)
    host[:] = 1
    assert on.cpu().numpy().all() == (device.type == "cpu")
