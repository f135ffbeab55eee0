"""Model inputs: words -> the tokenizer's wordpieces (with the special tokens its own), and
padded batches of examples of similar length, for extraction, gradients and the tasks alike."""

from __future__ import annotations

from array import array
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Iterable, Iterator, Sequence

import numpy as np
import torch

from headatlas.corpora.records import Sentence
from headatlas.encoders.batching import pad_batch, to_device


@dataclass
class Encoded:
    """One tokenised example; ``word_ids`` index A's and then B's words, -1 = special."""

    index: int
    id: str
    input_ids: list[int]
    token_type_ids: list[int]  # all 0 when the model takes none (``token_types`` False)
    word_ids: list[int]
    n_words: int
    token_types: bool = True  # whether ``token_type_ids`` are fed to the model

    def __len__(self) -> int:
        return len(self.input_ids)


def encode(tokenizer, sentence: Sentence, index: int, token_types: bool | None = None) -> Encoded:
    """``[CLS] words [SEP]`` or ``[CLS] A [SEP] B [SEP]``, the special tokens the tokenizer's own.

    Parameters
    ----------
    tokenizer : a fast tokenizer (from :func:`headatlas.encoders.models.load_tokenizer`,
        which sets ``add_prefix_space`` where word lists need it).
    sentence : the record; ``words_b`` makes a pair (RoBERTa: ``<s> A </s></s> B </s>``).
    index : its position in the corpus.
    token_types : whether the model takes segment ids; None: whether
        ``tokenizer.model_input_names`` lists ``token_type_ids`` (which
        :func:`headatlas.encoders.models.load_model` aligns with the model).

    Returns
    -------
    Encoded
        ``token_type_ids`` 0 for ``[CLS] A [SEP]`` and 1 for ``B [SEP]``, or all 0
        when ``token_types`` is False; ``word_ids`` index A's words and then B's,
        -1 for every special token.
    """
    return encode_many(tokenizer, [(index, sentence)], token_types)[0]


def encode_many(tokenizer, sentences: Sequence[tuple[int, Sentence]], token_types: bool | None = None,
                chunk: int = 1024) -> list[Encoded]:
    """:func:`encode` of each ``(index, sentence)``, in order: one tokenizer call per ``chunk``
    sentences (the single ones and the pairs apart), which the fast tokenizer encodes as a
    batch; each example is what :func:`encode` gives it alone."""
    if token_types is None:
        token_types = "token_type_ids" in tokenizer.model_input_names
    found: list[Encoded | None] = [None] * len(sentences)
    for start in range(0, len(sentences), chunk):
        for paired in (False, True):
            group = [k for k in range(start, min(start + chunk, len(sentences)))
                     if bool(sentences[k][1].words_b) == paired]
            if not group:
                continue
            texts = [[sentences[k][1].words for k in group]]
            if paired:
                texts.append([sentences[k][1].words_b for k in group])
            enc = tokenizer(*texts, is_split_into_words=True, add_special_tokens=True,
                            return_token_type_ids=True, truncation=False)
            for row, k in enumerate(group):
                found[k] = _encoded(*sentences[k], enc, row, token_types)
    return found


def _encoded(index: int, sentence: Sentence, enc, row: int, token_types: bool) -> Encoded:
    offset = {0: 0, 1: len(sentence.words)}
    word_ids = [-1 if w is None else w + offset[s] for w, s in zip(enc.word_ids(row), enc.sequence_ids(row))]
    n_words = len(sentence.words) + len(sentence.words_b or [])
    types = enc["token_type_ids"][row] if token_types else [0] * len(word_ids)
    return Encoded(index, sentence.id, enc["input_ids"][row], types, word_ids, n_words, token_types)


def encode_corpus(tokenizer, sentences: Iterable[tuple[int, Sentence]], max_length: int,
                  stats: Counter, token_types: bool | None = None) -> tuple[list[Encoded], list[str]]:
    """Tokenise (:func:`encode_many`); return the examples that fit and the ids of those that do not."""
    kept, skipped = [], []
    items = list(sentences)
    encoded = iter(encode_many(tokenizer, [(i, s) for i, s in items if s.words], token_types))
    for index, sentence in items:
        if not sentence.words:
            stats["empty"] += 1
            skipped.append(sentence.id)
            continue
        example = next(encoded)
        if len(example) > max_length:
            skipped.append(sentence.id)
            stats["too_long"] += 1
            continue
        count_unaligned(example, stats)
        kept.append(example)
    stats["kept"] = len(kept)
    return kept, skipped


def count_unaligned(example: Encoded, stats: Counter) -> None:
    """Count the example's words the tokenizer gave no wordpiece (``stats``)."""
    aligned = len({w for w in example.word_ids if w >= 0})
    if aligned < example.n_words:
        stats["examples_with_unaligned_words"] += 1
        stats["unaligned_words"] += example.n_words - aligned


def length_batches(examples: Sequence[Encoded], batch_size: int,
                   max_tokens: int | None = None) -> Iterator[list[Encoded]]:
    """Batches of similar length: sort by length, cut every ``batch_size`` (or token budget)."""
    for batch in plan_batches([len(e) for e in examples], batch_size, max_tokens):
        yield [examples[k] for k in batch]


def plan_batches(lengths: Sequence[int], batch_size: int, max_tokens: int | None = None) -> list[np.ndarray]:
    """:func:`length_batches` from the examples' lengths alone: each batch as positions in
    ``lengths``. Sorted by length (ties in order), cut every ``batch_size`` examples or where
    the next would take the padded batch over ``max_tokens``."""
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(lengths, kind="stable")
    cuts, size = [], 0
    for k, n in enumerate(lengths[order].tolist()):
        if size and (size == batch_size or (max_tokens and n * (size + 1) > max_tokens)):
            cuts.append(k)
            size = 0
        size += 1
    return np.split(order, cuts) if len(order) else []


def corpus_lengths(tokenizer, sentences: Iterable[Sentence], chunk: int = 1024,
                   token_types: bool | None = None) -> np.ndarray:
    """Each record's wordpieces with its special tokens (0 for an empty one), in order: what
    :func:`encode_corpus` would make, tokenised ``chunk`` records at a time and then dropped
    (:class:`CorpusPlan`)."""
    lengths = array("i")
    group: list[tuple[int, Sentence]] = []

    def flush() -> None:
        for e in encode_many(tokenizer, group, token_types, chunk):
            lengths[e.index] = len(e)
        group.clear()

    for index, sentence in enumerate(sentences):
        lengths.append(0)
        if sentence.words:
            group.append((index, sentence))
        if len(group) == chunk:
            flush()
    flush()
    return np.frombuffer(lengths, dtype=np.int32) if lengths else np.zeros(0, np.int32)


@dataclass
class CorpusPlan:
    """A corpus, or a range of it, planned for extraction from its records' lengths alone
    (:func:`plan_corpus`): 4 bytes a record, so that a job over a corpus of millions holds no
    record's inputs; each batch is encoded when its turn comes (:func:`encode_batch`)."""

    first: int  # corpus position of ``lengths[0]``
    lengths: np.ndarray  # wordpieces of each record, special tokens included; 0: an empty record
    max_length: int

    def length(self, positions: np.ndarray) -> np.ndarray:
        """Wordpieces of the records at these corpus positions."""
        return self.lengths[np.asarray(positions) - self.first]

    @cached_property
    def kept(self) -> np.ndarray:
        """Corpus positions of the records that fit, in corpus order (made once: an O(N) pass)."""
        return self.first + np.flatnonzero((self.lengths > 0) & (self.lengths <= self.max_length))

    def left_out(self, part: range) -> tuple[np.ndarray, int]:
        """Corpus positions in ``part`` of the records left out (empty or too long), and how
        many of them are empty."""
        lengths = self.lengths[part.start - self.first:part.stop - self.first]
        empty = lengths == 0
        return part.start + np.flatnonzero(empty | (lengths > self.max_length)), int(empty.sum())

    def skipped(self, sentences: Sequence[Sentence], part: range) -> tuple[list[str], Counter]:
        """The ids of the records in ``part`` left out, and how many were empty or too long (what
        a shard reports of its own index range)."""
        left_out, empty = self.left_out(part)
        return [sentences[int(i)].id for i in left_out], Counter(empty=empty, too_long=len(left_out) - empty)

    def batches(self, batch_size: int, max_tokens: int | None = None) -> list[np.ndarray]:
        """:func:`length_batches` of the records that fit, each batch as corpus positions."""
        kept = self.kept
        return [kept[b] for b in plan_batches(self.length(kept), batch_size, max_tokens)]


def plan_corpus(tokenizer, sentences: Sequence[Sentence], max_length: int,
                part: range | None = None, lengths: np.ndarray | None = None) -> CorpusPlan:
    """The :class:`CorpusPlan` of ``sentences`` (streamed once), or of the records in ``part``;
    ``lengths``: the whole corpus's, counted before (:mod:`headatlas.store.lengths`), so that
    no record is read here."""
    first = 0 if part is None else part.start
    if lengths is not None:
        stop = len(sentences) if part is None else part.stop
        if len(lengths) != len(sentences):
            raise ValueError(f"{len(lengths)} lengths for a corpus of {len(sentences)} records")
        return CorpusPlan(first, np.asarray(lengths[first:stop], dtype=np.int32), max_length)
    records = iter(sentences) if part is None else (sentences[i] for i in part)
    return CorpusPlan(first, corpus_lengths(tokenizer, records), max_length)


def encode_batch(tokenizer, sentences: Sequence[Sentence], positions: Iterable[int],
                 plan: CorpusPlan | None = None) -> list[Encoded]:
    """The records at these corpus positions, encoded (a batch of a :class:`CorpusPlan`);
    with ``plan``, each checked to have the length the plan has for it (lengths counted by
    another tokenizer, or on another corpus, would cut other batches than this job's)."""
    positions = [int(i) for i in positions]
    batch = encode_many(tokenizer, [(i, sentences[i]) for i in positions])
    if plan is not None:
        planned = plan.length(np.asarray(positions, dtype=np.int64))
        wrong = next(((e, int(n)) for e, n in zip(batch, planned) if len(e) != n), None)
        if wrong is not None:
            raise ValueError(f"record {wrong[0].index} ({wrong[0].id}) has {len(wrong[0])} wordpieces and "
                             f"its plan {wrong[1]}: its lengths were counted by another tokenizer or on "
                             "another corpus")
    return batch


def encoded_ahead(encode: Callable[[np.ndarray], list[Encoded]], batches: Sequence[np.ndarray]
                  ) -> Iterator[list[Encoded]]:
    """``encode(batch)`` of each of ``batches``, in order, the next one encoded on a thread while
    the caller runs this one: the fast tokenizer works without holding the interpreter, so its
    time hides behind the forward pass and the analyses (on a GPU host it was an eighth of a
    fused run's). An error of ``encode`` is raised where its batch is asked for."""
    if not batches:
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="encode") as pool:
        pending = pool.submit(encode, batches[0])
        for following in [*batches[1:], None]:
            done = pending.result()
            pending = None if following is None else pool.submit(encode, following)
            yield done


def collate(batch: Sequence[Encoded], pad_id: int, device) -> dict[str, torch.Tensor]:
    """Model inputs ``input_ids``, ``token_type_ids``, ``attention_mask`` ``[batch, width]`` on ``device``.

    ``token_type_ids`` only when the examples were encoded for a model that takes them.
    """
    fields = {"input_ids": pad_id, "token_type_ids": 0} if batch and batch[0].token_types \
        else {"input_ids": pad_id}
    inputs = pad_batch(batch, fields)
    return to_device(inputs, device)
