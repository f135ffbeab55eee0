"""The hand-labelled attention maps behind the pattern classifier (Kovaleva et al. 2019, §3).

Kovaleva et al. labelled about 400 attention maps by eye into five patterns
(vertical, diagonal, vertical + diagonal, block, heterogeneous) and trained a
classifier on them. Ours are labelled the same way, and this module is the
tool: it samples (input, layer, head) maps from a store, draws them on contact
sheets of 20, and reads the labels back.

Workflow (run once; the labels are kept in the repository)::

    headatlas label sample results/minilm/wikipedia/attention/shard-0.h5 \\
        --n 320 --seed 0 --out labels.csv          # the maps to label, pattern column empty
    headatlas label sheets results/minilm/wikipedia/attention/shard-0.h5 \\
        labels.csv --out sheets/                   # sheet-00.png ... (20 maps each, ids only)
    # look at every sheet, write each map's pattern into labels.csv
    headatlas label freeze results/minilm/wikipedia/attention/shard-0.h5 \\
        --labels labels.csv --out maps.npz         # the labelled maps themselves, kept with the labels

The labels are of pictures, so the pictures are kept with them: ``freeze``
copies the labelled maps out of the store into a compressed ``.npz``
(float16 weights, the segment ids and the tokens of each map, the store's model and corpus
in ``meta``). The evaluation (``patterns_evaluate``) reads that file, not a
store: re-preparing a corpus or re-extracting a model changes the store, not
the labelled maps, and the classifier's precision and recall are a property of
the classifier on those maps whatever model the pipeline analyses.

The sample is balanced over layers (``n / layers`` maps each, heads drawn at
random within the layer), takes every input at most once, and assigns each map
to a ``half``: ``tune`` (thresholds are chosen on it) or ``test`` (reported),
alternating within each layer in a random order, so both halves cover every
layer alike. The sheets show only a map's id, its number of tokens and tick
marks at the ``[SEP]`` tokens (where the segments end): not its layer or head,
so the labels are not led by what a head is known to do. Each map is drawn
with a linear grey scale from 0 (white) to the map's own largest weight (black).

The labelled set is packaged as ``headatlas/data/pattern_labels.csv``
(:data:`headatlas.analyses.labels.LABELS`): columns ``map`` (sheet id), ``example_index`` (corpus index
of the segment), ``example_id``, ``n_tokens``, ``layer``, ``head`` (1-based),
``half``, ``pattern``, ``note``, and (optional, :data:`headatlas.analyses.labels.PROVENANCE`) ``model``,
``corpus``, ``selection`` (how the map was chosen) and ``source`` (how it was
labelled); its maps as ``headatlas/data/pattern_maps.npz`` (:data:`headatlas.analyses.labels.MAPS`, 14.7 MB):

* ``m000``-``m319``: 320 maps of MiniLM (all-MiniLM-L6-v2) on the Wikipedia
  segments as the pipeline prepared them before the 128-wordpiece segment
  budget, sampled at random, balanced over layers, labelled on sheets of 20;
* ``x000``-``x189`` (issue 23): 190 maps chosen where the first classifier was
  weakest, 95 of MiniLM and 95 of MPNet-base (all-mpnet-base-v2, 12 x 12 heads),
  on fresh Wikipedia segments of 80 wordpieces (:func:`headatlas.corpora.wikipedia.make_segments`,
  seed 23, both models' own tokenizers), at most one map per segment and model:
  per model 30 with the most mass inside the query's segment (block candidates),
  28 with four or more columns each taking 4% of every row (multi-stripe), 25
  with a band and a faint top column (faint-column diagonals) and 12 at random
  (``selection``). They were drawn in a shuffled order on sheets of 4 x 4 showing
  only the id, the length and the segment boundary, labelled by eye from those
  pictures before any prediction was computed, then split into halves
  stratified by model and label (seed 23).

* ``f000``-``f119`` and ``b000``-``b099`` (issue 37): 220 MiniLM maps of the default run's
  Wikipedia segments (up to 128 wordpieces, seed 0: the segments the claims read), ``f*`` the
  120 random maps first labelled for ``benchmarks/labels/patterns_fresh128.csv`` (balanced over
  layers, seed 37), ``b*`` a block-enriched sample (``benchmarks/patterns_block_sample.py``:
  40 ranked by ``block`` as c9d7755 defined it, 10 local windows, 10 multi-stripe, 40 random). All 220 were drawn
  shuffled under neutral ids, with ticks at the segment change (red) and at sentence ends
  (grey), and labelled by three AI helper sessions independently, each all 220; the label is
  the majority (``benchmarks/patterns_merge_votes.py``; the note keeps every vote).

Each map's tokens are kept too (``tokens/<id>``, ``word_ids/<id>``), because block is attention
within the sentence and the sentences are found in the tokens
(:func:`headatlas.analyses.patterns.sentence_units`); ``m*`` and MiniLM's ``x*`` got theirs
from their rebuilt inputs (``benchmarks/patterns_label_tokens.py``), MPNet-base's ``x*`` have
none (their inputs could not be rebuilt) and keep their segments as their sentences.

The ``.npz`` holds each map's segment ids as ``segments/<id>`` where the token
types do not give them (MPNet takes none: 0 for ``<s> A </s></s>``, 1 for
``B </s>``); :func:`headatlas.analyses.labels.load_maps` returns segments either way.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from headatlas.errors import HeadAtlasError
from headatlas.store.example import Example
from headatlas.store.reader import Store, open_stores
from headatlas.analyses.labels import COLUMNS, HALVES, packaged_labels, read_labels

PER_SHEET = 20

def sample_maps(store_path: str | Path, n: int = 320, seed: int = 0) -> pd.DataFrame:
    """``n`` maps to label: one per input, balanced over layers, split into two halves.

    Returns the :data:`COLUMNS` table with an empty ``pattern``, in the random
    order the sheets show it.
    """
    with Store(store_path) as store:
        n_examples, n_layers, n_heads = len(store), store.n_layers, store.n_heads
        if n > n_examples:
            raise HeadAtlasError(f"{store_path}: {n_examples} inputs, cannot sample {n} distinct ones")
        rng = np.random.default_rng(seed)
        examples = rng.choice(n_examples, size=n, replace=False)
        layers = np.resize(np.arange(n_layers), n)  # as even as n allows
        rng.shuffle(layers)
        heads = rng.integers(0, n_heads, size=n)
        half = np.empty(n, dtype=object)
        for layer in range(n_layers):
            members = np.flatnonzero(layers == layer)
            rng.shuffle(members)
            half[members] = [HALVES[i % 2] for i in range(len(members))]
        rows = [{"map": f"m{i:03d}", "example_index": int(store.example_index[e]),
                 "example_id": store.example_ids[e], "n_tokens": int(store.lengths[e]),
                 "layer": int(layers[i]) + 1, "head": int(heads[i]) + 1, "half": half[i],
                 "pattern": "", "note": ""} for i, e in enumerate(examples)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def labelled_maps(store_paths, labels: pd.DataFrame) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each labelled map ``[n, n]`` and its input's sentence ids, read from the store.

    Sentences within the segments (:func:`headatlas.analyses.patterns.example_units`), as the
    classifier reads them. The store must be the one the maps were sampled from: every labelled
    ``example_index`` must be in it with the same ``example_id`` and length.
    """
    from headatlas.analyses.patterns import example_units

    found = labelled_examples(store_paths, labels)
    return [m for m, _ in found], [example_units(e) for _, e in found]


def labelled_examples(store_paths, labels: pd.DataFrame) -> list[tuple[np.ndarray, Example]]:
    """Each labelled map ``[n, n]`` with its input (:class:`~headatlas.store.example.Example`)."""
    wanted = {int(k): i for i, k in enumerate(labels["example_index"])}
    if len(wanted) != len(labels):
        raise HeadAtlasError("the labelled set names an input twice; each map is one input")
    found: list = [None] * len(labels)
    for path in open_stores(store_paths).paths:
        with Store(path) as store:
            for position, index in enumerate(store.example_index):
                row = wanted.get(int(index))
                if row is None:
                    continue
                example = store.example(position)
                label = labels.iloc[row]
                if example.id != str(label["example_id"]) or example.n_tokens != int(label["n_tokens"]):
                    raise HeadAtlasError(
                        f"{path}: input {index} is {example.id!r} with {example.n_tokens} tokens, the "
                        f"labels say {label['example_id']!r} with {label['n_tokens']}; the labels "
                        "belong to another store (model or corpus sample)")
                found[row] = (example.attn[int(label["layer"]) - 1, int(label["head"]) - 1], example)
    absent = [labels["map"].iloc[i] for i, m in enumerate(found) if m is None]
    if absent:
        raise HeadAtlasError(f"{len(absent)} labelled map(s) not in the store (first: {absent[0]})")
    return found


def freeze_maps(store_paths, labels: pd.DataFrame, out: str | Path, append: bool = False) -> Path:
    """Write the labelled maps (float16), their segment ids and their tokens to ``out`` (``.npz``).

    Keys: ``map/<id>`` ``[n, n]``, ``types/<id>`` ``[n]`` (segment ids: the token types
    of a BERT pair), ``tokens/<id>`` and ``word_ids/<id>`` ``[n]`` (the classifier finds the
    sentences in them), and ``meta`` (JSON: model, corpus and store files the maps were read
    from). ``append``: add them to the maps ``out`` holds (ids must be new; ``meta`` keeps the
    old entry and lists the new one under ``appended``).
    """
    from headatlas.analyses.patterns import example_segments

    paths = open_stores(store_paths).paths
    found = labelled_examples(paths, labels)
    with Store(paths[0]) as store:
        attrs = {key: str(store.attrs.get(key, "")) for key in ("model_name", "model_id", "corpus", "corpus_sha256", "max_length")}
    meta = {**attrs, "stores": [Path(p).name for p in paths], "maps": len(found)}
    arrays: dict = {}
    out = Path(out)
    if append:
        if not out.exists():
            raise HeadAtlasError(f"{out}: no frozen maps to append to; freeze without --append first")
        with np.load(out, allow_pickle=False) as archive:
            arrays = {k: archive[k] for k in archive.files}
        clash = [m for m in labels["map"] if f"map/{m}" in arrays]
        if clash:
            raise HeadAtlasError(f"{out}: holds map(s) {clash[:3]} already; give the new maps new ids")
        old = json.loads(str(arrays["meta"]))
        meta = {**old, "appended": [*old.get("appended", []), meta]}
    arrays["meta"] = np.array(json.dumps(meta))
    for name, (m, e) in zip(labels["map"], found):
        arrays[f"map/{name}"] = np.asarray(m, dtype=np.float16)
        arrays[f"types/{name}"] = np.asarray(example_segments(e.token_type_ids, e.sep_mask), dtype=np.int8)
        arrays[f"tokens/{name}"] = np.array(e.tokens)
        arrays[f"word_ids/{name}"] = np.asarray(e.word_ids, dtype=np.int16)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays)
    return out


def draw_sheets(store_paths, labels: pd.DataFrame, out: str | Path,
                per_sheet: int = PER_SHEET) -> list[Path]:
    """Contact sheets ``sheet-00.png``, ... of ``per_sheet`` maps each, in ``labels`` order: red
    ticks where the segment changes, grey ticks where a sentence ends within a segment."""
    from headatlas.analyses.patterns import example_segments, example_units
    from headatlas.plots.patterns import draw_contact_sheet

    out = Path(out)
    found = labelled_examples(store_paths, labels)
    maps = [m for m, _ in found]
    segments = [example_segments(e.token_type_ids, e.sep_mask) for _, e in found]
    sentences = [example_units(e) for _, e in found]
    paths = []
    for k, start in enumerate(range(0, len(labels), per_sheet)):
        part = slice(start, start + per_sheet)
        path = out / f"sheet-{k:02d}.png"
        titles = [f"{m} (n={n})" for m, n in zip(labels["map"][part], labels["n_tokens"][part])]
        draw_contact_sheet(maps[part], segments[part], titles, path, sentences=sentences[part])
        paths.append(path)
    return paths


def main(argv: Sequence[str] | None = None, prog: str = "headatlas label") -> None:
    parser = argparse.ArgumentParser(prog=prog,
                                     description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sample = sub.add_parser("sample", help="write the maps to label (pattern column empty)")
    sample.add_argument("store", nargs="+")
    sample.add_argument("--n", type=int, default=320)
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--out", required=True)
    sheets = sub.add_parser("sheets", help="draw contact sheets of the maps in a label table")
    sheets.add_argument("store", nargs="+")
    sheets.add_argument("--labels", default=None, help="label table (default: the packaged one)")
    sheets.add_argument("--out", required=True, help="folder for sheet-XX.png")
    freeze = sub.add_parser("freeze", help="copy the labelled maps out of the store (.npz)")
    freeze.add_argument("store", nargs="+")
    freeze.add_argument("--labels", default=None, help="label table (default: the packaged one)")
    freeze.add_argument("--out", required=True, help="the .npz to write")
    freeze.add_argument("--append", action="store_true", help="add the maps to those --out holds")
    args = parser.parse_args(argv)
    if args.command == "sample":
        if len(args.store) != 1:
            parser.error("sample reads one store file")
        sample_maps(args.store[0], args.n, args.seed).to_csv(args.out, index=False)
        print(f"{args.n} maps -> {args.out}")
    elif args.command == "freeze":
        print(freeze_maps(args.store, read_labels(args.labels), args.out, args.append))
    else:
        table = pd.read_csv(args.labels or packaged_labels(), keep_default_na=False,
                            dtype={"example_id": str})
        for path in draw_sheets(args.store, table, args.out):
            print(path)


if __name__ == "__main__":
    main(sys.argv[1:])
