"""CoNLL-X dependency files (e.g. PTB WSJ converted to Stanford Dependencies) -> records.

Malformed input raises :class:`CorpusFormatError` starting with ``file:line``.
"""

from __future__ import annotations

from pathlib import Path

from headatlas.corpora.conllu_reader import parse_block, read_token_blocks
from headatlas.corpora.records import Sentence

CONLLX_FIELDS = ("id", "form", "lemma", "cpostag", "postag", "feats", "head", "deprel",
                 "phead", "pdeprel")


def read_conllx(path: str | Path) -> list[Sentence]:
    """Read a CoNLL-X dependency file (e.g. PTB WSJ converted to Stanford Dependencies).

    Columns: ID FORM LEMMA CPOSTAG POSTAG FEATS HEAD DEPREL PHEAD PDEPREL.
    ``upos`` is CPOSTAG and ``xpos`` POSTAG (the same tag for a PTB
    conversion). ``doc`` is the file stem, ``id`` is ``# sent_id`` if present,
    else ``<stem>-<k>``. Validation as for CoNLL-U, except that every ID must
    be a word ID (CoNLL-X has no multiword ranges or empty nodes). The file
    has no splits (give them with the corpus key ``splits:``).
    """
    path = Path(path)
    sentences = []
    for k, block in enumerate(read_token_blocks(path, subtokens=False), 1):
        tokens = parse_block(path, block, CONLLX_FIELDS)
        sentences.append(Sentence(
            id=tokens.metadata.get("sent_id") or f"{path.stem}-{k}",
            words=[token["form"] for token in tokens],
            doc=path.stem,
            heads=[token["head"] for token in tokens],
            rels=[token["deprel"] for token in tokens],
            upos=[token["cpostag"] for token in tokens],
            xpos=[token["postag"] for token in tokens],
            feats=[token["feats"] for token in tokens],
            source=f"{path}:{block.start}",
        ))
    return sentences
