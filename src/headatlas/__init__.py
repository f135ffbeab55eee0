"""headatlas: what do the attention heads of BERT-family encoders look at?

Packages in data-flow order: :mod:`~headatlas.corpora` -> :mod:`~headatlas.encoders` (extraction)
-> :mod:`~headatlas.store` -> :mod:`~headatlas.analyses` (and :mod:`~headatlas.plots`) ->
:mod:`~headatlas.tasks` and :mod:`~headatlas.interventions` -> :mod:`~headatlas.report`, glued
into the workflow by :mod:`~headatlas.pipeline`. The modules at this level are shared leaves
(errors, io, heads, stats, provenance, claims, weightings) and the console script (cli).

Notebook entry points: :func:`atlas` and :func:`head` (the head atlas of a run), :func:`example`
(one example's maps from a store) and :func:`bertviz` (those maps as bertviz's views take them).
"""

from headatlas.provenance import package_version as _package_version

__version__ = _package_version()  # from git tags at install time (setuptools-scm)


def atlas(results="results", model="minilm"):
    """``results/<model>/heads.csv`` as a DataFrame: one row per (weighting, layer, head), every
    per-head table of the run joined (:func:`headatlas.report.atlas.load`).

    >>> headatlas.atlas("results", "minilm")  # doctest: +SKIP
    """
    from headatlas.report.atlas import load  # pandas: imported when asked, not with the package

    return load(results, model)


def head(model, layer, head, results="results", weighting=None):
    """One head's profile from ``results/<model>/heads.csv`` (``layer``, ``head`` 1-based):
    a frame with one column per weighting, or a Series under ``weighting``.

    >>> headatlas.head("minilm", 3, 9, results="results")  # doctest: +SKIP
    """
    from headatlas.report.atlas import head_profile

    return head_profile(model, layer, head, results, weighting)


def example(stores, which=0, weighting="attention"):
    """One example of an attention store (a path, or a list of shard paths), without streaming
    the others: the ``which``-th in corpus order, or the one whose record id is ``which`` (a str).
    Its ``attn`` is [layers, heads, n, n] (float32; ``weighting="norm"``: Kobayashi's view), its
    ``tokens`` the n wordpieces.

    >>> ex = headatlas.example("results/minilm/wikipedia/attention/shard-0.h5", 3)  # doctest: +SKIP
    >>> ex.attn[2, 8]  # layer 3, head 9 (0-based here)  # doctest: +SKIP
    """
    from headatlas.store.reader import open_stores

    return open_stores(stores, weighting).find(which)


def bertviz(example):
    """``(attention, tokens)`` as bertviz's ``head_view`` and ``model_view`` take them: one torch
    tensor [1, heads, n, n] per layer, and the n tokens.

    >>> from bertviz import head_view  # doctest: +SKIP
    >>> head_view(*headatlas.bertviz(headatlas.example(store, 3)))  # doctest: +SKIP
    """
    import torch

    attention = tuple(torch.from_numpy(layer.copy())[None] for layer in example.attn)
    return attention, list(example.tokens)


def disable_heads(model, heads):
    """Forward keyword arguments that switch attention heads off in a transformers encoder (Michel
    et al.'s gates: each head's output multiplied by 0): ``model(**inputs, **disable_heads(model,
    [(3, 9)]))`` with ``heads`` as 1-based (layer, head) pairs. The model's attention becomes
    headatlas's eager implementation (as in the ablation and importance rules; the same weights).

    >>> logits = model(**inputs, **headatlas.disable_heads(model, [(3, 9), (5, 1)])).logits  # doctest: +SKIP
    """
    import torch

    from headatlas.interventions import ablation

    config = model.config
    n_layers, n_heads = config.num_hidden_layers, config.num_attention_heads
    gates = torch.ones(n_layers, n_heads, device=next(model.parameters()).device)
    for layer, head in heads:
        if not (1 <= layer <= n_layers and 1 <= head <= n_heads):
            raise ValueError(f"head {layer}-{head}: the model has layers 1-{n_layers} and heads 1-{n_heads}")
        gates[layer - 1, head - 1] = 0.0
    ablation.register()
    if getattr(config, "_attn_implementation", None) != ablation.IMPLEMENTATION:
        model.set_attn_implementation(ablation.IMPLEMENTATION)
    return {"headatlas_gates": gates}
