"""Fused extraction (issue 32): the analyses run inside the forward pass give the store's tables.

One tiny corpus is extracted twice with the tiny random BERT: into a store, then every
registered analysis streams it (``run_analysis``); and fused, every analysis inside the
forward pass, its state written per shard and merged (``result_from_states``). Every table,
array and claim must agree (counts exactly, floats to 1e-6 relative), with one shard and with
three, and the exemplar store must hold the examples asked for, as a store.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from headatlas.analyses.base import run_analysis
from headatlas.analyses.fused import Run, exemplar_indices, fused_extract, run_key
from headatlas.analyses.fused import SPILL_EVERY, VIEW_BYTES, result_from_states
from headatlas.store.states import States
from headatlas.errors import StoreError
from headatlas.store.reader import open_stores
from tests.unit.test_contract import assert_same_result
from tests.unit.test_contract import CLASSES, RECORDS, inputs, required

N_SHARDS = 3
RUNS = [(cls, weighting) for cls in CLASSES
        for weighting in (("attention",) if cls.needs_norms else ("attention", "norm"))]


# The fused runs compared with the store: one shard, three, and the path a GPU takes (forced
# on the CPU: every batched analysis reads torch batches): three shards reading each layer's
# maps as the model produces it, one layer at a time (the host readers and the exemplars get
# every layer's maps copied as they come), three shards of the batched analyses alone that way
# in groups of layers (the default there: both of the model's layers at once; no host reader,
# no exemplar: no batch's maps are ever whole on the host), three shards taking every
# layer's maps at once (by_layer=False), and one shard that way reading each batch one example
# at a time (chunks of the views).
SPILLED = "spilled"  # one shard whose runs write their states out after every batch but the last
LAYERS = "device-layers"
ONLY_DEVICE = "device-layers-alone"
DEVICE = "device-whole"
CHUNKS = "device-whole-chunks"
VARIANTS = (1, N_SHARDS, SPILLED, LAYERS, ONLY_DEVICE, DEVICE, CHUNKS)
ON_DEVICE = (LAYERS, ONLY_DEVICE, DEVICE, CHUNKS)
CASES = [(cls, weighting, variant) for variant in VARIANTS for cls, weighting in RUNS
         if variant != ONLY_DEVICE or cls.batched()]


@pytest.fixture(scope="module")
def extracted(tiny_model, tmp_path_factory):
    """The store of the corpus, and its fused states in one shard, in three, and in three with
    device batches."""
    return extract_both(tiny_model, tmp_path_factory.mktemp("fused"), VARIANTS)


def extract_both(model, folder, variants):
    """``model``'s store of the corpus in ``folder``, and its fused states in each variant (a
    number of shards, or one of :data:`ON_DEVICE`): (folder, {variant: [states files]})."""
    from headatlas.corpora.records import write_jsonl
    from headatlas.encoders.extract import extract

    write_jsonl(folder / "corpus.jsonl", RECORDS)
    attrs = {"corpus": "contract", "corpus_sha256": "0" * 64}
    # the same batches as the fused runs (batch composition moves a map by a float16 step)
    extract(model, RECORDS, folder / "store.h5", max_length=32, batch_size=2, progress=False,
            store_attrs=attrs)
    pool = inputs(folder)
    runs = [Run(run_key(cls.name, w), cls.name, {}, w) for cls, w in RUNS]
    files = {}
    for variant in variants:
        files[variant] = []
        n_shards = {CHUNKS: 1, SPILLED: 1}.get(variant, N_SHARDS if variant in ON_DEVICE else variant)
        alone = variant == ONLY_DEVICE
        for shard in range(n_shards):
            shard_inputs = {**pool, "path": folder / f"cache-{variant}-{shard}.h5"}
            states = folder / f"states-{variant}-{shard}.h5"
            fused_extract(model, RECORDS, states, [r for r in runs if not alone or batched(r)],
                          exemplar_path=None if alone else folder / f"exemplars-{variant}-{shard}.h5",
                          exemplars=1, wanted=[2], max_length=32, batch_size=2, shard=shard, n_shards=n_shards,
                          store_attrs=attrs, progress=False, inputs=shard_inputs,
                          on_device=variant in ON_DEVICE, by_layer=variant in (LAYERS, ONLY_DEVICE),
                          view_bytes=1 if variant == CHUNKS else VIEW_BYTES,
                          layer_group=1 if variant == LAYERS else None,
                          spill_every=1 if variant == SPILLED else SPILL_EVERY)
            files[variant].append(states)
    return folder, files


def batched(run: Run) -> bool:
    from headatlas.analyses.base import analysis_class

    return analysis_class(run.analysis).batched()


def assert_same(one, two, atol: float = 0.0):
    assert_same_result(one, two, rtol=1e-6, atol=atol)


@pytest.mark.parametrize("cls, weighting, n_shards", CASES, ids=lambda x: getattr(x, "name", x))
def test_fused_states_give_the_store_tables(cls, weighting, n_shards, extracted):
    assert_fused_is_store(extracted, cls, weighting, n_shards)


@pytest.mark.parametrize("family", ["roberta", "modernbert"])
def test_other_families_fused_states_give_their_store_tables(tiny_encoder_dirs, tmp_path, family):
    """RoBERTa (byte-level BPE, <s> ... </s>, positions offset by 2) and ModernBERT (pre-LN, a
    fused Wqkv, a sliding-window layer) in three shards: every analysis, both weightings (the
    workflow's fused run has the BERT alone)."""
    from headatlas.encoders.models import load_model

    model = load_model(f"tiny_{family}", {"path": str(tiny_encoder_dirs[family])}, device="cpu")
    found = extract_both(model, tmp_path, (N_SHARDS,))
    for cls, weighting in RUNS:
        assert_fused_is_store(found, cls, weighting, N_SHARDS)


@pytest.mark.parametrize("family", ["bert-uncased", "roberta", "modernbert", "albert", "deberta-v2"])
def test_a_device_batch_s_tokens_and_masks_are_the_tokenizer_s(tiny_encoder_dirs, family):
    """The device path looks an input's tokens and token masks up in a table made once per
    tokenizer: they are ``convert_ids_to_tokens``' and ``token_masks``' (byte-level ``Ġ,``,
    SentencePiece's ``▁.``, the special tokens)."""
    from headatlas.analyses.fused import _meta, _tokens
    from headatlas.encoders.extract import store_special_tokens
    from headatlas.encoders.inputs import encode_many
    from headatlas.encoders.models import load_model
    from headatlas.store.example import token_masks

    loaded = load_model(f"tiny_{family}", {"path": str(tiny_encoder_dirs[family])}, device="cpu")
    attrs = store_special_tokens(loaded.tokenizer)
    batch = encode_many(loaded.tokenizer, list(enumerate(RECORDS)))
    tokens, special = _tokens(loaded, batch, attrs)
    for encoded, found in zip(batch, tokens):
        assert found == loaded.tokenizer.convert_ids_to_tokens(encoded.input_ids)
        example = _meta(encoded, found, special, loaded.tokenizer)
        expected = token_masks(found, attrs["cls_token"], attrs["sep_token"])
        assert all(np.array_equal(a, b) for a, b in zip(example.masks, expected))
    punct = sum(int(_meta(e, t, special, loaded.tokenizer).masks[2].sum()) for e, t in zip(batch, tokens))
    assert punct > 0  # the records' periods and commas are looked up too


def assert_fused_is_store(extracted, cls, weighting, n_shards):
    folder, files = extracted
    pool = inputs(folder)
    options = {name: pool[name] for name in required(cls)}
    if "path" in options:
        options["path"] = folder / f"cache-store-{cls.name}-{weighting}.h5"
    store = run_analysis(cls, [folder / "store.h5"], progress=False, weighting=weighting, **options)
    if "path" in options:
        options["path"] = folder / f"cache-fused-{cls.name}-{weighting}-{n_shards}.h5"
    fused = result_from_states(files[n_shards], run_key(cls.name, weighting), cls, weighting, **options)
    assert fused.caption == store.caption
    assert fused.provenance["n_examples"] == store.provenance["n_examples"] == len(RECORDS)
    # Device batches weigh the norm view in torch, whose row sums add in another order than
    # numpy's: within a float32 step (1.2e-7) of a share, which the chance correction leaves
    # beside values near 0.
    assert_same(store, fused, atol=1.2e-7 if n_shards in ON_DEVICE else 0.0)


def test_states_are_small_and_say_what_ran(extracted):
    folder, files = extracted
    with States(files[1][0]) as states:
        assert states.attrs["model_name"] == "tiny" and states.attrs["corpus"] == "contract"
        assert run_key("entropy", "norm") in states.keys
        about, state = states.run("entropy")
        assert about == {"analysis": "entropy", "weighting": "attention", "options": {}}
        assert int(state["n_examples"]) == len(RECORDS)
    with pytest.raises(StoreError, match="no analysis run 'nowhere'"):
        with States(files[1][0]) as states:
            states.run("nowhere")


def test_options_other_than_the_extraction_s_are_refused(extracted):
    _, files = extracted
    with pytest.raises(StoreError, match="ran with options"):
        result_from_states(files[1], "head_distances", "head_distances", average=False)


def test_spilled_states_are_parts_of_the_file_and_nothing_else_is_left(extracted):
    folder, files = extracted
    with States(files[SPILLED][0]) as states:
        parts = list(states.parts("sink_rate"))  # its per-segment rows grow with the shard
        _, last = states.run("sink_rate")
        assert len(parts) >= 1 and sum(int(p["n_examples"]) for p in parts) + int(last["n_examples"]) == len(states)
        assert int(last["n_examples"]) > 0  # the last batch is the file's own run, never a part
        # a bounded state (sums, a capped sample) is never written out: its parts would grow
        for key in ("entropy", "norm_shares", "distance_features"):
            assert not list(states.parts(key)) and int(states.run(key)[1]["n_examples"]) == len(states)
    with States(files[1][0]) as states:
        assert not list(states.parts("sink_rate"))  # a shard of fewer examples than spill_every
    assert not list(folder.glob(".*.partial"))


def test_a_damaged_states_file_is_refused(extracted, tmp_path):
    _, files = extracted
    bad = tmp_path / "states.h5"
    bad.write_bytes(files[1][0].read_bytes()[:2000])
    with pytest.raises(StoreError, match=r"states\.h5.*snakemake --cores all --force"):
        States(bad)


def test_a_damaged_spilled_part_is_refused_naming_the_file(extracted, tmp_path):
    import shutil

    import h5py

    _, files = extracted
    bad = tmp_path / "states.h5"
    shutil.copy(files[SPILLED][0], bad)
    with h5py.File(bad, "r") as f:  # flip bytes of a part's array: its checksum fails
        offset = f["spilled/sink_rate/0/sinks"].id.get_chunk_info(0).byte_offset
    raw = bytearray(bad.read_bytes())
    raw[offset:offset + 8] = b"\xff" * 8
    bad.write_bytes(bytes(raw))
    with pytest.raises(StoreError, match=r"states\.h5: run 'sink_rate' is damaged.*snakemake"):
        result_from_states([bad], "sink_rate", "sink_rate")


@pytest.mark.parametrize("variant", [N_SHARDS, LAYERS])
def test_exemplars_are_a_store_of_the_chosen_examples(extracted, variant):
    """On the host, and copied layer by layer from a device's forward pass."""
    folder, _ = extracted
    chosen = exemplar_indices(len(RECORDS), 1, wanted=[2])
    assert 2 in chosen and len(chosen) == 2
    shards = [folder / f"exemplars-{variant}-{s}.h5" for s in range(N_SHARDS)]
    kept = {e.index: e for e in open_stores(shards, norms=True)}  # a shard may hold none
    assert set(kept) == chosen
    store = {e.index: e for e in open_stores(folder / "store.h5", norms=True)}
    for index, example in kept.items():  # the store's maps and norms, bit for bit
        np.testing.assert_array_equal(example.attn, store[index].attn)
        np.testing.assert_array_equal(example.value_norms, store[index].value_norms)
        np.testing.assert_array_equal(example.norm_map, store[index].norm_map)


def test_a_run_s_max_examples_are_the_store_run_s_first(extracted, tiny_model, tmp_path):
    """``max_examples`` (a quick look) sees the first examples in corpus order in both modes."""
    folder, _ = extracted
    store = run_analysis("entropy", [folder / "store.h5"], progress=False, max_examples=2)
    states = tmp_path / "states.h5"
    fused_extract(tiny_model, RECORDS, states, [Run("entropy", "entropy", {}, "attention", 2)],
                  max_length=32, batch_size=2, progress=False,
                  store_attrs={"corpus": "contract", "corpus_sha256": "0" * 64})
    fused = result_from_states([states], "entropy", "entropy")
    assert fused.provenance["n_examples"] == store.provenance["n_examples"] == 2
    assert_same(store, fused)


def test_the_record_of_an_extraction_is_the_same_in_both_modes(extracted):
    """Captions and the corpus summary read a states file as they read a store."""
    from headatlas.analyses.base import store_provenance
    from headatlas.store.summary import corpus_summary

    folder, files = extracted
    assert store_provenance(files[N_SHARDS]) == store_provenance([folder / "store.h5"])
    pd.testing.assert_frame_equal(corpus_summary({}, files[N_SHARDS]),
                                  corpus_summary({}, [folder / "store.h5"]))


def test_a_figure_draws_the_store_s_example_from_the_exemplars_or_extracts_it(extracted, tiny_model):
    """Fused mode's maps: the exemplars where they have the example, else it is extracted again."""
    from headatlas.analyses.fused import extract_examples
    from headatlas.store.maps import Maps, pick_example

    folder, files = extracted
    shards = [folder / f"exemplars-{N_SHARDS}-{s}.h5" for s in range(N_SHARDS)]
    asked = []

    def again(indices, weighting):
        asked.extend(indices)
        return extract_examples(tiny_model, RECORDS, indices, weighting, max_length=32)

    maps = Maps(shards, records=files[N_SHARDS], extract_missing=again)
    store = Maps([folder / "store.h5"])
    assert maps.lengths() == store.lengths()
    kept = sorted(exemplar_indices(len(RECORDS), 1, wanted=[2]))
    lacking = next(i for i in range(len(RECORDS)) if i not in kept)
    for index in (kept[0], lacking):
        fused, stored = pick_example(maps, index, weighting="norm"), pick_example(store, index, weighting="norm")
        assert fused.id == stored.id and fused.tokens == stored.tokens
        np.testing.assert_allclose(fused.attn, stored.attn, atol=2e-3)  # a float16 step at most
    assert asked == [lacking]
    assert pick_example(maps, min_tokens=10).id == pick_example(store, min_tokens=10).id


def test_an_interrupted_fused_extraction_leaves_nothing(tiny_model, tmp_path, monkeypatch):
    from headatlas.analyses.surface import Entropy

    def broken(self, batch, reduced):
        raise RuntimeError("killed mid-run")

    calls = []

    def broken_later(self, batch, reduced):  # after the states were written out once
        calls.append(1)
        if len(calls) > 2:
            raise RuntimeError("killed mid-run")
        fold(self, batch, reduced)

    fold = Entropy.fold
    monkeypatch.setattr(Entropy, "fold", broken)  # a whole batch's update and a layer-by-layer one
    with pytest.raises(RuntimeError, match="killed"):
        fused_extract(tiny_model, RECORDS, tmp_path / "states.h5", [Run("entropy", "entropy")],
                      exemplar_path=tmp_path / "exemplars.h5", max_length=32, progress=False)
    assert not list(tmp_path.iterdir())
    monkeypatch.setattr(Entropy, "fold", broken_later)
    with pytest.raises(RuntimeError, match="killed"):
        fused_extract(tiny_model, RECORDS, tmp_path / "states.h5", [Run("entropy", "entropy")],
                      exemplar_path=tmp_path / "exemplars.h5", max_length=32, batch_size=1, progress=False,
                      spill_every=1)
    assert not list(tmp_path.iterdir())  # the spilled states went with the rest


def test_a_job_s_key_names_its_rule_and_wildcards_but_the_file_s():
    from headatlas.pipeline.streams import job_key

    assert job_key("surface_table", {"model": "m", "corpus": "c", "weighting": "-norm",
                                     "analysis": "entropy"}) == "surface_table:analysis=entropy,weighting=-norm"
    assert job_key("norm_shares", {"model": "m", "corpus": "c"}) == "norm_shares"


def test_batched_analyses_on_the_device_copy_no_map_to_the_host(tiny_model, tmp_path, monkeypatch):
    """With only batched analyses and no exemplar, a device extraction never packs a map for
    the host: only sums and per-example scores leave the batch."""
    from headatlas.analyses import fused

    batched = [(cls, w) for cls, w in RUNS if cls.batched()]
    assert {cls.name for cls, _ in batched} >= {"entropy", "sink_rate", "patterns"}

    def no_copy(*args, **kwargs):
        raise AssertionError("a map was packed for the host")

    monkeypatch.setattr(fused, "pack_examples", no_copy)
    runs = [Run(run_key(cls.name, w), cls.name, {}, w) for cls, w in batched]
    fused_extract(tiny_model, RECORDS, tmp_path / "states.h5", runs, exemplar_path=None, max_length=32,
                  batch_size=2, progress=False, store_attrs={"corpus": "contract", "corpus_sha256": ""},
                  on_device=True)
    with States(tmp_path / "states.h5") as states:
        assert set(states.keys) == {run.key for run in runs}
    # and an analysis that reads host maps does make the copy
    with pytest.raises(AssertionError, match="packed for the host"):
        fused_extract(tiny_model, RECORDS, tmp_path / "other.h5", runs + [Run("head_distances", "head_distances")],
                      exemplar_path=None, max_length=32, batch_size=2, progress=False,
                      store_attrs={"corpus": "contract", "corpus_sha256": ""}, on_device=True)


@pytest.mark.parametrize("view_bytes, layer_group, passes", [
    (VIEW_BYTES, None, 1),  # both layers of the batch fit: one pass a batch
    (VIEW_BYTES, 1, 2),  # asked for one layer at a time
    (1, None, 4),  # no layer of the batch fits: one layer of one example at a time (2 x 2)
], ids=["fits", "one-layer", "one-example"])
def test_the_device_reads_as_many_layers_at_once_as_fit(tiny_model, tmp_path, monkeypatch, view_bytes,
                                                        layer_group, passes):
    """Each pass through a run is a few hundred operations the host issues (on a GPU, what a
    small batch costs): a batch's layers are read in groups as large as ``view_bytes`` allows,
    and the states do not depend on the grouping."""
    from headatlas.analyses import fused

    reads = []
    reduce = fused._Stream.reduce
    monkeypatch.setattr(fused._Stream, "reduce",
                        lambda stream, batch: reads.append(batch.layers) or reduce(stream, batch))
    runs = [Run(run_key(cls.name, w), cls.name, {}, w) for cls, w in RUNS if cls.batched()]
    common = dict(exemplar_path=None, max_length=32, batch_size=2, progress=False, on_device=True,
                  store_attrs={"corpus": "contract", "corpus_sha256": ""})
    fused_extract(tiny_model, RECORDS[:2], tmp_path / "grouped.h5", runs, view_bytes=view_bytes,
                  layer_group=layer_group, **common)
    assert len(reads) == passes * len(runs)
    assert {tuple(layers) for layers in reads} == ({(0, 1)} if passes == 1 else {(0,), (1,)})
    fused_extract(tiny_model, RECORDS[:2], tmp_path / "whole.h5", runs, by_layer=False, **common)
    for run in runs:
        assert_same(*(result_from_states([tmp_path / f"{name}.h5"], run.key, run.analysis, run.weighting)
                      for name in ("grouped", "whole")))


@pytest.mark.parametrize("host", [False, True], ids=["device-alone", "with-host-readers"])
def test_a_device_extraction_reads_each_layer_as_the_model_produces_it(tiny_model, tmp_path, monkeypatch, host):
    """A device batch never exists whole: the analyses read each layer's maps from the
    recorder's hook, and the model's outputs keep none; where an analysis without a batched
    path or an exemplar needs the maps, each layer's are copied to the host as they come."""
    from headatlas.analyses import fused

    def whole_batch(*args, **kwargs):
        raise AssertionError("a batch's maps were taken whole")

    monkeypatch.setattr(fused, "_forward", whole_batch)
    outputs = []
    handle = tiny_model.model.register_forward_hook(lambda module, args, out: outputs.append(out))
    runs = [Run(run_key(cls.name, w), cls.name, {}, w) for cls, w in RUNS if cls.batched()]
    if host:
        runs.append(Run("head_distances", "head_distances"))
    try:
        fused_extract(tiny_model, RECORDS, tmp_path / "states.h5", runs, max_length=32,
                      exemplar_path=tmp_path / "exemplars.h5" if host else None, exemplars=2,
                      batch_size=2, progress=False, store_attrs={"corpus": "contract", "corpus_sha256": ""},
                      on_device=True)
    finally:
        handle.remove()
    assert len(outputs) == (len(RECORDS) + 1) // 2  # a forward per batch
    assert all(a is None for out in outputs for a in (out.attentions or ()))
    with States(tmp_path / "states.h5") as states:
        assert set(states.keys) == {run.key for run in runs}
    # asked for the whole batch, it takes the whole batch
    with pytest.raises(AssertionError, match="taken whole"):
        fused_extract(tiny_model, RECORDS, tmp_path / "other.h5", runs, exemplar_path=None, max_length=32,
                      batch_size=2, progress=False, store_attrs={"corpus": "contract", "corpus_sha256": ""},
                      on_device=True, by_layer=False)
