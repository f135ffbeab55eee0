"""In-place eager attention: the same numbers as transformers' eager attention, bit for bit."""

import pytest
import torch

from headatlas.attention import IMPLEMENTATION, inplace_eager_attention
from headatlas.corpora.records import Sentence
from headatlas.extract import capture_batch, collate, encode, without_padding_mask
from headatlas.models import from_pretrained, load_model
from tests.conftest import FAMILIES

# Families whose modelling code goes through transformers' AttentionInterface.
SWITCHED = {"bert-uncased", "bert-cased", "roberta", "distilbert", "electra", "albert"}


class _Module(torch.nn.Module):
    pass


def test_probabilities_and_context_by_hand():
    # One head, two tokens, d = 1, scale 1: q = (1, 0), k = (1, 1) -> every score row is equal.
    q = torch.tensor([1.0, 0.0]).view(1, 1, 2, 1)
    k = torch.tensor([1.0, 1.0]).view(1, 1, 2, 1)
    v = torch.tensor([2.0, 4.0]).view(1, 1, 2, 1)
    module = _Module().eval()
    context, weights = inplace_eager_attention(module, q, k, v, None, scaling=1.0)
    assert weights.flatten().tolist() == [0.5, 0.5, 0.5, 0.5]
    assert context.flatten().tolist() == [3.0, 3.0]  # 0.5 * 2 + 0.5 * 4
    # The second key masked out (eager's additive mask): all weight on the first, context 2.
    mask = torch.tensor([0.0, torch.finfo(torch.float32).min]).view(1, 1, 1, 2)
    context, weights = inplace_eager_attention(module, q, k, v, mask, scaling=1.0)
    assert weights.flatten().tolist() == [1.0, 0.0, 1.0, 0.0]
    assert context.flatten().tolist() == [2.0, 2.0]


def _batch(loaded, sentences):
    examples = [encode(loaded.tokenizer, s, i) for i, s in enumerate(sentences)]
    return examples, collate(examples, loaded.tokenizer.pad_token_id or 0, "cpu")


PADDED = [Sentence(id="a", words=["the", "dog", "walked", "home"]), Sentence(id="b", words=["runs"])]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_gets_eagers_numbers(tiny_encoder_dirs, family):
    folder = str(tiny_encoder_dirs[family])
    loaded = load_model(family, {"path": folder}, "cpu")
    eager = from_pretrained(type(loaded.model), folder, attn_implementation="eager").eval()
    switched = loaded.model.config._attn_implementation == IMPLEMENTATION
    assert switched == (family in SWITCHED)
    _, inputs = _batch(loaded, PADDED)
    assert bool((inputs["attention_mask"] == 0).any())  # the padding mask is exercised
    with torch.inference_mode():
        ours = loaded.model(**inputs, output_attentions=True)
        theirs = eager(**inputs, output_attentions=True)
    assert torch.equal(ours.last_hidden_state, theirs.last_hidden_state)
    for a, b in zip(ours.attentions, theirs.attentions, strict=True):
        assert torch.equal(a, b)


def test_gradients_flow_as_through_eager(tiny_model_dir):
    loaded = load_model("tiny", {"path": str(tiny_model_dir)}, "cpu")
    eager = from_pretrained(type(loaded.model), str(tiny_model_dir), attn_implementation="eager").eval()
    _, inputs = _batch(loaded, PADDED)
    grads = []
    for model in (loaded.model, eager):
        model.zero_grad()
        out = model(**inputs, output_attentions=True)
        (out.last_hidden_state.square().sum() + sum(a.square().sum() for a in out.attentions)).backward()
        grads.append([p.grad.clone() for p in model.parameters() if p.grad is not None])
    assert len(grads[0]) == len(grads[1]) > 0
    for a, b in zip(*grads, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def test_the_mask_is_dropped_only_without_padding(tiny_model):
    equal = [Sentence(id="a", words=["the", "dog"]), Sentence(id="b", words=["a", "cat"])]
    examples, inputs = _batch(tiny_model, equal)
    lengths = [len(e) for e in examples]
    assert "attention_mask" not in without_padding_mask(inputs, lengths)
    assert set(without_padding_mask(inputs, lengths)) == set(inputs) - {"attention_mask"}
    examples, inputs = _batch(tiny_model, PADDED)
    assert without_padding_mask(inputs, [len(e) for e in examples]) is inputs
    no_mask = {"input_ids": inputs["input_ids"]}
    assert without_padding_mask(no_mask, [len(e) for e in examples]) is no_mask


def test_a_batch_without_padding_is_captured_as_with_its_mask(tiny_model):
    equal = [Sentence(id="a", words=["the", "dog"]), Sentence(id="b", words=["a", "cat"])]
    examples, inputs = _batch(tiny_model, equal)
    assert bool(inputs["attention_mask"].all())
    lengths = [len(e) for e in examples]
    captured = capture_batch(tiny_model.model, inputs, lengths).numpy()
    with torch.inference_mode():
        masked = tiny_model.model(**inputs, output_attentions=True).attentions
    expected = torch.stack(masked, dim=1).to(torch.float16)  # [batch, layers, heads, n, n]
    assert captured.tobytes() == expected.numpy().tobytes()
