"""Corpus readers and the normalised corpus file they all produce."""

from headatlas.corpora.records import Mention, Sentence, read_jsonl, write_jsonl

__all__ = ["Mention", "Sentence", "read_jsonl", "write_jsonl"]
