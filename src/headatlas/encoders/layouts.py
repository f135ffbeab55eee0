"""Tables of how encoder families are built: where value norms are read, which positions are reserved.

Kept apart from :mod:`headatlas.encoders.capabilities` (which reads a model's files when the
configuration loads) because extraction uses these tables too: the workflow reruns
a rule when a module its script imports changes, and editing the configuration
checks should never rerun an extraction. No torch, no transformers.
"""

from __future__ import annotations

from dataclasses import dataclass

# Model types whose position ids start after the padding index (fairseq's convention):
# the usable length is max_position_embeddings - (pad_token_id + 1), 512 - 2 for RoBERTa.
PADDING_OFFSET_TYPES = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert",
                                  "roberta-prelayernorm", "data2vec-text", "longformer", "mpnet"})


@dataclass(frozen=True)
class NormLayout:
    """Where one family keeps the two maps of Kobayashi et al.'s ``f_h(x) = (x W_V^h + b_V^h) W_O^h``.

    ``block`` is a regular expression matched against the module names of the
    base model (``model.base_model``); inside each matching block, ``attention``
    is the module that returns ``(output, α)`` under eager attention (``""``: the
    block itself), ``value`` the value projection and ``output`` the output
    projection ``W_O`` (dotted paths). A block may run more than once per
    forward pass (ALBERT shares one layer across depth): layers are recorded in
    call order. ``value_part = (k, m)``: the value projection is the k-th of m
    equal column blocks of a fused one (ModernBERT's ``Wqkv``: (2, 3)).
    ``layer_norm``/``output_norm``: the post-attention and post-FFN LayerNorms of
    a post-LN block ("" for a pre-LN family, whose LayerNorms act before the
    sublayers: the context-mixing decompositions are written for post-LN).
    """

    name: str
    model_types: tuple[str, ...]
    block: str
    attention: str
    value: str
    output: str
    layer_norm: str = ""
    output_norm: str = ""
    value_part: tuple[int, int] = (0, 1)

    @property
    def post_ln(self) -> bool:
        return bool(self.layer_norm and self.output_norm)


# One row per attention layout; a family joins by its model types, never by a branch in the code.
NORM_LAYOUTS = (
    NormLayout("BERT", ("bert", "roberta", "xlm-roberta", "camembert", "electra", "data2vec-text"),
               r"encoder\.layer\.\d+\.attention", "self", "self.value", "output.dense",
               "attention.output.LayerNorm", "output.LayerNorm"),
    NormLayout("RoBERTa-PreLayerNorm", ("roberta-prelayernorm",), r"encoder\.layer\.\d+\.attention", "self",
               "self.value", "output.dense"),  # pre-LN: its LayerNorms come before the sublayers
    NormLayout("DistilBERT", ("distilbert",), r"transformer\.layer\.\d+\.attention", "", "v_lin", "out_lin",
               "sa_layer_norm", "output_layer_norm"),
    NormLayout("ALBERT", ("albert",), r"encoder\.albert_layer_groups\.\d+\.albert_layers\.\d+\.attention",
               "", "value", "dense", "attention.LayerNorm", "full_layer_layer_norm"),
    NormLayout("DeBERTa-v2", ("deberta-v2",), r"encoder\.layer\.\d+\.attention", "self", "self.value_proj",
               "output.dense", "attention.output.LayerNorm", "output.LayerNorm"),
    NormLayout("MPNet", ("mpnet",), r"encoder\.layer\.\d+\.attention", "attn", "attn.v", "attn.o",
               "attention.LayerNorm", "output.LayerNorm"),
    NormLayout("ModernBERT", ("modernbert",), r"layers\.\d+\.attn", "", "Wqkv", "Wo", value_part=(2, 3)),
)


def norm_layout_of(model_type: str | None) -> NormLayout | None:
    """The :data:`NORM_LAYOUTS` row of ``model_type``, else None."""
    return next((row for row in NORM_LAYOUTS if model_type in row.model_types), None)


def supported_types() -> str:
    return ", ".join(t for row in NORM_LAYOUTS for t in row.model_types)
