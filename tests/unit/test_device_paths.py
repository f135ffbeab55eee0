"""Every path that runs a model keeps to the model's device: checked on the CPU with a simulated
device (tests/simulated_device.py), so that what the GPU check found (a host array in the
patterns' batched features, a tagger's inputs left on the host) cannot come back unseen.

What the numbers are is tested elsewhere (test_fused, test_importance, test_ablation,
test_gradients); here only that no host tensor meets a device tensor, as on CUDA.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from headatlas.analyses.base import analysis_class
from headatlas.analyses.fused import Run, fused_extract, run_key
from headatlas.store.states import States
from tests.simulated_device import DeviceMixError, SimulatedDevice
from tests.unit.test_contract import CLASSES, RECORDS, inputs
from tests.unit.test_importance import tagger, tiny_squad  # noqa: F401 (tagger: a fixture, this module's own)

ATTRS = {"corpus": "contract", "corpus_sha256": ""}


def every_run():
    return [Run(run_key(cls.name, w), cls.name, {}, w) for cls in CLASSES
            for w in (("attention",) if cls.needs_norms else ("attention", "norm"))]


def fused_on_device(model, folder, runs):
    """A fused extraction of the contract corpus with the batched analyses on the device."""
    from headatlas.corpora.records import write_jsonl

    write_jsonl(folder / "corpus.jsonl", RECORDS)
    with SimulatedDevice() as device:
        device.place(model.model)
        fused_extract(model, RECORDS, folder / "states.h5", runs, exemplar_path=folder / "exemplars.h5",
                      exemplars=1, max_length=32, batch_size=2, progress=False, store_attrs=ATTRS,
                      inputs={**inputs(folder), "path": folder / "cache.h5"}, on_device=True)


def test_a_host_tensor_meeting_a_device_tensor_is_caught():
    with SimulatedDevice() as device:
        layer = device.place(torch.nn.Linear(3, 2))
        with pytest.raises(DeviceMixError, match="linear"):
            layer(torch.ones(4, 3))
        out = layer(torch.ones(4, 3).to(layer.weight.device))
        with pytest.raises(DeviceMixError, match="where"):
            torch.where(out > 0, out, torch.zeros(4, 2))  # made without device=
        torch.where(out > 0, out, torch.zeros(4, 2, device=out.device))
        torch.where(out > 0, out, 0.0)  # a scalar is fine, as on CUDA
        with pytest.raises(DeviceMixError, match="numpy"):
            out.detach().numpy()
        assert out.detach().cpu().numpy().shape == (4, 2)
        for host in (out.to("cpu"), out.to(torch.device("cpu")), out.to(device="cpu")):
            host.detach().numpy()


def test_store_and_fused_extraction_with_every_analysis_keep_to_the_device(tiny_model, tmp_path):
    from headatlas.encoders.extract import extract

    with SimulatedDevice() as device:
        device.place(tiny_model.model)
        extract(tiny_model, RECORDS, tmp_path / "store.h5", max_length=32, batch_size=2, progress=False,
                store_attrs=ATTRS)
    runs = every_run()
    assert any(cls.batched() for cls in CLASSES) and any(not cls.batched() for cls in CLASSES)
    fused_on_device(tiny_model, tmp_path, runs)
    with States(tmp_path / "states.h5") as states:
        assert set(states.keys) == {run.key for run in runs}


def test_fused_extraction_layer_by_layer_keeps_to_the_device(tiny_model, tmp_path):
    """The batched analyses alone, no exemplar: each layer's maps read in the recorder's hook."""
    runs = [run for run in every_run() if analysis_class(run.analysis).layered()]
    with SimulatedDevice() as device:
        device.place(tiny_model.model)
        fused_extract(tiny_model, RECORDS, tmp_path / "states.h5", runs, exemplar_path=None, max_length=32,
                      batch_size=2, progress=False, store_attrs=ATTRS, on_device=True, by_layer=True)
    with States(tmp_path / "states.h5") as states:
        assert set(states.keys) == {run.key for run in runs}


def test_a_layer_read_on_the_device_waits_for_no_copy(tiny_model, tmp_path, monkeypatch):
    """On a GPU every copy to the host waits until the device has done all it was given. Layer by
    layer, a copy in a run's reduce would stop the forward pass at each layer (bert-base: 84 times
    a batch, head-type features and patterns, before); the copies belong in fold, once a batch."""
    from headatlas.analyses import fused

    runs = [run for run in every_run() if analysis_class(run.analysis).layered()]
    inside: list[tuple[str, str]] = []
    with SimulatedDevice() as device:
        reduce = fused._Stream.reduce

        def watched(stream, batch):
            before = len(device.waits)
            out = reduce(stream, batch)
            inside.extend((stream.analysis.name, wait) for wait in device.waits[before:])
            return out

        monkeypatch.setattr(fused._Stream, "reduce", watched)
        device.place(tiny_model.model)
        fused_extract(tiny_model, RECORDS * 2, tmp_path / "states.h5", runs, exemplar_path=None, max_length=32,
                      batch_size=2, progress=False, store_attrs=ATTRS, on_device=True, by_layer=True)
    assert {name for name, _ in inside} == set() and inside == []
    assert len(device.waits) > len(runs)  # the folds copy each run's reductions, once a batch


def test_the_check_finds_the_patterns_mistake_the_gpu_found(tiny_model, tmp_path, monkeypatch):
    """Put back the host array the GPU check met (patterns' NaN block of a one-segment input,
    made without the batch's device): the simulated device must refuse it."""
    from headatlas.analyses import patterns

    def host_nan(batch, units, in_top, like):
        return batch.xp.full(like.shape, float("nan"), dtype=like.dtype)

    monkeypatch.setattr(patterns, "_block", host_nan)
    with pytest.raises(DeviceMixError, match="stack"):
        fused_on_device(tiny_model, tmp_path, [Run("patterns", "patterns")])


@pytest.mark.parametrize("cache", [True, False])
def test_head_importance_and_gated_scores_keep_to_the_device(tagger, cache):
    from headatlas.interventions.importance import TaggingHeads

    model, test, dev = tagger
    with SimulatedDevice() as device:
        device.place(model)
        task = TaggingHeads(model, test, dev, batch_size=2, cache=cache)
        assert (task.cache is not None) == cache  # the cache's own check ran on the device
        gates = task.ones()
        gates[1, 0] = 0
        assert task.scores(gates).size.sum() > 0
        assert np.isfinite(task.importance()).all()


def test_squad_importance_and_scores_keep_to_the_device(tmp_path):
    from headatlas.interventions.importance import SquadHeads

    model, tokenizer, examples = tiny_squad(tmp_path / "qa")
    with SimulatedDevice() as device:
        device.place(model)
        task = SquadHeads(model, tokenizer, examples, batch_size=2, max_length=48, stride=16)
        assert len(task.scores(task.ones()).score) == len(examples)
        assert np.isfinite(task.importance()).all()


def test_ablated_tagging_keeps_to_the_device(tagger):
    from headatlas.interventions.ablation import PRUNE, UNIFORM, plan
    from headatlas.tasks.upos import tag_scores

    model, test, _ = tagger
    actions = torch.tensor([[PRUNE, UNIFORM], [UNIFORM, PRUNE]])
    with SimulatedDevice() as device:
        device.place(model)
        assert 0 <= tag_scores(model, test, 2, plan(actions), units=True)["accuracy"] <= 100


def test_attention_gradients_keep_to_the_device(tiny_model_dir):
    from headatlas.analyses.gradients import gradient_importance, load_for_loss
    from tests.unit.test_gradients import segments

    loaded, loss = load_for_loss("tiny", {"path": str(tiny_model_dir)}, "auto", device="cpu")
    with SimulatedDevice() as device:
        device.place(loaded.model)
        result = gradient_importance(loaded, loss, segments(), max_length=32, batch_size=2, progress=False)
    assert np.isfinite(result.table["other"].to_numpy()).all()


def test_context_mixing_keeps_to_the_device(tmp_path):
    from headatlas.interventions.mixing import MixingRunner
    from tests.unit.test_mixing import sentence_of, tiny_tagger

    model, tokenizer = tiny_tagger(tmp_path)
    with SimulatedDevice() as device:
        device.place(model)
        runner = MixingRunner(model, tokenizer, batch_size=4, deletion_steps=2)
        ids, special = sentence_of(tokenizer)
        try:
            scores = runner.sentence(ids, np.flatnonzero(~special), special, np.random.default_rng(0))
        finally:
            runner.close()
    assert np.isfinite(scores.final[0]).any()


def test_the_pattern_forest_s_features_keep_to_the_device(tiny_model, tmp_path):
    """The forest's shape features (patterns.classifier: forest) are made on the batch's device."""
    fused_on_device(tiny_model, tmp_path, [Run("patterns", "patterns", {"classifier": "forest"})])
    with States(tmp_path / "states.h5") as states:
        assert set(states.keys) == {"patterns"}
