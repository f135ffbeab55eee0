"""The analysis contract: one accumulator interface for everything that reads attention maps.

An analysis is a class that sees each :class:`~headatlas.store.example.Example` once
(:meth:`Analysis.add`, which calls its :meth:`~Analysis.update`) and then returns its
:class:`~headatlas.analyses.result.Result` (:meth:`Analysis.result`). Streaming keeps memory
independent of the corpus size, and the same class runs from a notebook, a test or a rule::

    from headatlas.analyses import surface  # importing a module registers its analyses

    result = run_analysis("entropy", ["results/minilm/wikipedia/attention/shard-0.h5"])
    result.table                     # the per-head table
    result.caption                   # figure footnote: model, corpus, N, deviations
    result.provenance                # analysis, options, N, model and corpus of the store

scikit-learn's discipline for options: an analysis's options are the explicit keyword
arguments of its ``__init__`` (after ``n_layers`` and ``n_heads``), each stored as the
attribute of the same name; :meth:`Analysis.get_params` reads them back from the signature,
and an unknown option is an error with a did-you-mean (:meth:`Analysis.check_options`), never
silently recorded.

**State.** What an analysis has accumulated is its :meth:`~Analysis.state`: plain numpy arrays
(counts, sums, per-example rows), which :meth:`~Analysis.merge` folds into another instance of
the same analysis with the same options. Merging the states of two halves of a corpus gives the
result of one pass over the whole (a unit test per analysis), so shards can be analysed apart
and joined. The base class keeps ``n_examples`` and how many examples of each length it saw
(``length_counts``) in the state too.

**Batches.** An analysis may instead implement :meth:`Analysis.update_batch`, which reads a
:class:`~headatlas.analyses.batch.MapBatch` (``[B, L, H, N, N]``, zero-padded, numpy or torch,
on any device) with the array API's functions only: from a store it is given batches of one
numpy example (:meth:`Analysis.add`), in a fused extraction on a GPU the whole batch where the
model computed it (:meth:`Analysis.add_batch`). Quantities several analyses need are computed
once per batch (:meth:`MapBatch.row_entropy`, :meth:`MapBatch.column_mass`, ...).

**Layer by layer.** Every batched analysis of the package splits its update in two:
:meth:`Analysis.reduce` reads the maps and returns small arrays with the batch's layers on axis 1
(``[B, L, ...]``: sums over queries and keys, per-map features), so that the reductions of each
layer's maps, joined on that axis, are those of the whole batch; :meth:`Analysis.fold` adds
them into the state (and does what spans the layers: rollout's product, a per-example count).
``update_batch`` is ``fold(reduce(batch))``. A fused extraction on a device then reads each
layer's attention as the model produces it and drops it (peak: one layer's maps, not L).

Every analysis of the attention maps gains a second view without changing its code:
``run_analysis(..., weighting="norm")`` hands it α_ij‖f_h(x_j)‖ renormalised per row
(Kobayashi et al. 2020) in ``example.attn`` instead of α (:mod:`headatlas.weightings`); the
provenance and the caption say which. Analyses that read the norms themselves set
``needs_norms = True``.
"""

from __future__ import annotations

import difflib
import inspect
import itertools
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar, Iterable

import numpy as np
from tqdm.auto import tqdm

from headatlas.analyses.batch import MapBatch
from headatlas.analyses.result import Result
from headatlas.errors import HeadAtlasError, StoreError
from headatlas.store.example import Example
from headatlas.store.reader import StoreSet, open_stores
from headatlas.store.states import open_record
from headatlas.weightings import check_weighting, weighting_note

REGISTRY: dict[str, type["Analysis"]] = {}
# Store attributes every result's provenance records (see headatlas.store.schema.ATTRIBUTES).
PROVENANCE_KEYS = ("model_name", "model_id", "model_revision", "corpus", "corpus_sha256", "n_layers",
                   "n_heads", "max_length", "package_version", "schema_version", "model_class", "lowercase")
# The model of Clark et al. (2019): what a footnote compares a run's model with (family, depth,
# heads, casing), never its id, so google-bert/bert-base-cased or a local copy is no deviation.
PAPER_MODEL = {"id": "bert-base-cased", "family": "BERT", "n_layers": 12, "n_heads": 12, "lowercase": False}
# The attrs run_analysis adds to a result.
RUN_ATTRS = ("provenance", "caption")
# The state the base class keeps for every analysis (beside the analysis's own arrays).
BASE_STATE = ("n_examples", "length_counts")


class OptionError(HeadAtlasError, TypeError):
    """An analysis was given an option it does not have; the message names the close ones."""


class Analysis(ABC):
    """Base class: subclasses set ``name`` and implement ``update`` (one example) or
    ``update_batch`` (a :class:`~headatlas.analyses.batch.MapBatch`), ``_state``, ``_merge`` and
    ``result``.

    Parameters
    ----------
    n_layers, n_heads : int
        The model's shape (every example's ``attn`` is ``[n_layers, n_heads, n, n]``).

    A subclass's options are explicit keyword arguments of its ``__init__`` after these two,
    each kept as the attribute of the same name (:meth:`get_params`).

    Optional hooks: :meth:`start` (sees the stores before the first example),
    :meth:`close` (releases what ``start`` took when a run stops early),
    :meth:`caption` (the figure footnote; class attribute ``unit`` names what
    an example is in the default one). Class attribute ``needs_norms``: the
    analysis reads ``example.value_norms`` and ``example.norm_map`` itself (it
    is given the attention weights α, and weighs them as it needs). Class
    attribute ``bounded``: its state is the same size however many examples it
    sees (sums, or a capped sample), so a fused extraction never writes it out
    on the way (:func:`~headatlas.analyses.fused.fused_extract`'s ``spill_every``).
    """

    name: ClassVar[str]
    unit: ClassVar[str] = "segments"
    needs_norms: ClassVar[bool] = False
    bounded: ClassVar[bool] = False
    # Options that are data, not settings: inputs joined with the maps (a corpus, documents) and
    # where a result goes (a cache's path). Given to every instance; not compared between a
    # fused extraction's run and its merge (the rule's input files are what Snakemake tracks).
    data_options: ClassVar[tuple[str, ...]] = ()

    def __init__(self, n_layers: int, n_heads: int):
        self.n_layers, self.n_heads = n_layers, n_heads
        self.n_examples = 0
        # how many examples of each length (tokens) were seen, for the caption: a few hundred
        # counts however large the corpus
        self._length_counts = np.zeros(0, np.int64)

    @property
    def lengths(self) -> np.ndarray:
        """Tokens of every example seen, ascending."""
        return np.repeat(np.arange(len(self._length_counts)), self._length_counts)

    def _count_lengths(self, lengths) -> None:
        self._add_length_counts(np.bincount(np.asarray(lengths, np.int64).ravel()))

    def _add_length_counts(self, counts: np.ndarray) -> None:
        total = np.zeros(max(len(self._length_counts), len(counts)), np.int64)
        total[:len(self._length_counts)] += self._length_counts
        total[:len(counts)] += np.asarray(counts, np.int64)
        self._length_counts = total

    # --- options ---------------------------------------------------------------------------

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """The analysis's options: its ``__init__``'s parameters after ``n_layers``, ``n_heads``."""
        params = list(inspect.signature(cls.__init__).parameters.values())[3:]
        if any(p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) for p in params):
            raise TypeError(f"{cls.__name__}.__init__ takes **kwargs: name every option explicitly")
        return tuple(p.name for p in params)

    def get_params(self) -> dict[str, Any]:
        """The options this instance runs with (scikit-learn's ``get_params``)."""
        return {name: getattr(self, name) for name in self.option_names()}

    def settings(self) -> dict[str, Any]:
        """The options that decide what is computed from the maps: :meth:`get_params` without
        :attr:`data_options` (a fused extraction's run and its merge must agree on them)."""
        return {k: v for k, v in self.get_params().items() if k not in self.data_options}

    @classmethod
    def load_inputs(cls, files: dict[str, Any]) -> dict[str, Any]:
        """Options from a rule's input files by name (every input but the stores and the code):
        as given, unless the analysis reads them into objects first (coreference's documents)."""
        return dict(files)

    @classmethod
    def check_options(cls, options: dict) -> None:
        """Raise :class:`OptionError` for an option the analysis does not have, naming the close ones."""
        known = cls.option_names()
        problems = []
        for name in options:
            if name not in known:
                close = difflib.get_close_matches(name, known, n=1)
                hint = f" (did you mean `{close[0]}`?)" if close else ""
                problems.append(f"`{name}`: unknown option of {cls.name}{hint}")
        if problems:
            allowed = ", ".join(known) if known else "none"
            raise OptionError("; ".join(problems) + f"; its options: {allowed}")

    # --- streaming -------------------------------------------------------------------------

    def start(self, stores: StoreSet | None) -> None:
        """Called once before the first example with the stores being read.

        ``stores`` is None when examples are passed directly. Default: nothing.
        """

    def add(self, example: Example) -> None:
        """Fold one example in (:meth:`update`, or :meth:`update_batch` on a batch of one) and
        count it."""
        if self.batched():
            self.update_batch(MapBatch.of([example]))
        else:
            self.update(example)
        self.n_examples += 1
        self._count_lengths([example.n_tokens])

    def add_batch(self, batch: MapBatch) -> None:
        """Fold a batch in (:meth:`update_batch`, or :meth:`update` example by example) and count it."""
        if not self.batched():
            for example in batch.host_examples():
                self.add(example)
            return
        self.update_batch(batch)
        self._count(batch)

    def add_reduced(self, batch: MapBatch, reduced: dict) -> None:
        """Fold in a batch whose :meth:`reduce` was taken layer by layer (``reduced``: the layers'
        reductions joined on axis 1) and count it; ``batch`` holds the same examples."""
        self.fold(batch, reduced)
        self._count(batch)

    def _count(self, batch: MapBatch) -> None:
        self.n_examples += len(batch)
        self._count_lengths(batch.lengths)

    @classmethod
    def batched(cls) -> bool:
        """Whether the analysis reads whole batches (:meth:`update_batch`) rather than examples."""
        return cls.update_batch is not Analysis.update_batch or cls.layered()

    @classmethod
    def layered(cls) -> bool:
        """Whether the analysis can read a batch one layer at a time (:meth:`reduce`, :meth:`fold`)."""
        return cls.reduce is not Analysis.reduce

    def update(self, example: Example) -> None:
        """Fold one example into the running statistics (or implement :meth:`update_batch`)."""
        raise NotImplementedError(f"{type(self).__name__} implements neither update nor update_batch")

    def update_batch(self, batch: MapBatch) -> None:
        """Fold a batch into the running statistics, with the functions of ``batch.xp`` only, so
        that the same code runs on numpy maps and on a device's torch maps (only sums and
        per-example scores go to the host: :func:`~headatlas.analyses.batch.to_host`).
        Default: :meth:`fold` of :meth:`reduce`."""
        if not self.layered():
            raise NotImplementedError(f"{type(self).__name__} implements neither update_batch nor reduce")
        self.fold(batch, self.reduce(batch))

    def reduce(self, batch: MapBatch) -> dict:
        """What the analysis keeps of the batch's maps: arrays ``[B, L, ...]`` (``batch.xp`` or
        numpy) whose axis 1 is the batch's layers (``batch.layers``), each layer's computed
        from that layer's maps alone, so that a batch of all layers and its layers one at a
        time give the same arrays (tests/unit/test_batch.py checks every analysis)."""
        raise NotImplementedError

    def fold(self, batch: MapBatch, reduced: dict) -> None:
        """Add :meth:`reduce`'s arrays, every layer's, into the state. ``batch`` holds the
        examples (lengths, tokens, :meth:`MapBatch.shared` masks); its maps may be one layer's
        only, so this reads none."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what :meth:`start` acquired (files); called after every run. Default: nothing."""

    # --- state -----------------------------------------------------------------------------

    def state(self) -> dict[str, np.ndarray]:
        """Everything accumulated so far, as plain numpy arrays (the analysis's own and
        :data:`BASE_STATE`): what :meth:`merge` folds into another instance."""
        own = self._state()
        clash = set(own) & set(BASE_STATE)
        if clash:
            raise KeyError(f"{self.name}: state names {sorted(clash)} are the base class's")
        return {"n_examples": np.asarray(self.n_examples, np.int64),
                "length_counts": self._length_counts.copy(), **own}

    def merge(self, state: dict[str, np.ndarray]) -> "Analysis":
        """Fold the ``state`` of another instance (same analysis, model shape and options) into
        this one: afterwards this instance is as if it had also seen that one's examples."""
        self.n_examples += int(state["n_examples"])
        self._add_length_counts(state["length_counts"])
        self._merge({k: v for k, v in state.items() if k not in BASE_STATE})
        return self

    @abstractmethod
    def _state(self) -> dict[str, np.ndarray]:
        """The analysis's own accumulated arrays (see :meth:`state`)."""

    @abstractmethod
    def _merge(self, state: dict[str, np.ndarray]) -> None:
        """Fold another instance's :meth:`_state` into this one."""

    # --- the result ------------------------------------------------------------------------

    @abstractmethod
    def result(self) -> Result:
        """The finished :class:`~headatlas.analyses.result.Result`."""

    def caption(self, result: Result, provenance: dict) -> str:
        """Figure footnote of ``result``: model, corpus, N and the deviations from the paper."""
        return describe(provenance, provenance["n_examples"], self.unit)


def register(cls: type[Analysis]) -> type[Analysis]:
    """Class decorator: make an analysis available by name to rules and tests (the contract test,
    tests/unit/test_contract.py, checks every registered class)."""
    REGISTRY[cls.name] = cls
    return cls


def run_analysis(analysis: str | type[Analysis], stores, progress: bool = True,
                 max_examples: int | None = None, weighting: str = "attention", **options) -> Result:
    """Stream ``stores`` through one analysis and return its result with provenance and caption.

    Parameters
    ----------
    analysis : Analysis subclass, or the name of a registered one
        A name works once the module defining the analysis has been imported.
    stores : path, list of shard paths, or list of :class:`~headatlas.store.example.Example`
        What to analyse, streamed one example at a time.
    progress : bool
        Show a progress bar (on stderr: the rule's log).
    max_examples : int, optional
        Stop after that many examples (a quick look).
    weighting : ``attention`` or ``norm``
        What ``example.attn`` holds: the attention weights α, or α_ij‖f_h(x_j)‖
        renormalised per row (Kobayashi et al. 2020). ``norm`` needs a store with
        value norms (schema version 2, a model with a norm layout); analyses with
        ``needs_norms`` take only ``attention``.
    **options
        The analysis's options (:meth:`Analysis.option_names`); an unknown one is an
        :class:`OptionError`.

    Returns
    -------
    The analysis's :class:`~headatlas.analyses.result.Result`, with ``attrs["weighting"]``,
    ``attrs["provenance"]`` (``analysis``, ``options``, ``weighting``, ``n_examples``, the
    store's :data:`PROVENANCE_KEYS` and ``lengths``) and ``attrs["caption"]``
    (:meth:`Analysis.caption`).
    """
    cls = analysis_class(analysis)
    check_weighting(weighting)
    cls.check_options(options)
    if cls.needs_norms and weighting != "attention":
        raise ValueError(f"{cls.name} reads the value norms itself and weighs the attention as it "
                         "needs: run it with weighting='attention'")
    examples, store_set, n_layers, n_heads, total = _examples(stores, weighting, cls.needs_norms)
    if max_examples is not None:
        examples, total = itertools.islice(examples, max_examples), min(total, max_examples)
    acc = cls(n_layers, n_heads, **options)
    try:
        acc.start(store_set)
        for example in tqdm(examples, total=total, desc=cls.name, disable=not progress, mininterval=2):
            acc.add(example)
        result = acc.result()
    finally:
        acc.close()
    attrs = store_set.attrs if store_set is not None else {"n_layers": n_layers, "n_heads": n_heads}
    return finish(acc, result, attrs, weighting)


def finish(acc: Analysis, result: Result, store_attrs: dict, weighting: str) -> Result:
    """Put ``weighting``, ``provenance`` and ``caption`` on ``acc``'s ``result``: what every run of
    an analysis ends with, whether it streamed a store or merged states."""
    if not isinstance(result, Result):
        raise TypeError(f"{acc.name}.result() returned a {type(result).__name__}, not a Result")
    provenance = {"analysis": acc.name, "options": {k: _plain(v) for k, v in acc.get_params().items()},
                  "weighting": weighting, "n_examples": acc.n_examples,
                  **{k: store_attrs.get(k) for k in PROVENANCE_KEYS}, "lengths": length_text(acc.lengths)}
    result.attrs["weighting"] = weighting
    result.attrs["provenance"] = provenance
    result.attrs["caption"] = acc.caption(result, provenance)
    return result


def without_run_attrs(attrs: dict) -> dict:
    """``attrs`` without the keys :func:`run_analysis` adds: what a result saves to its file."""
    return {k: v for k, v in attrs.items() if k not in RUN_ATTRS}


def describe(attrs: dict, n_examples: int, unit: str = "segments") -> str:
    """Figure footnote: model, corpus, N, and the known deviations from the paper.

    ``attrs`` holds ``model_name``, ``model_id``, ``corpus``, ``n_layers`` and
    ``n_heads`` (a store's attributes or a provenance dict; missing ones show as ?),
    and optionally ``lengths`` (:func:`length_text`), added at the end, and ``weighting`` when the
    maps were norm-weighted (the footnote then says so).
    """
    model = _known(attrs.get("model_name"), "?")
    source = _known(attrs.get("model_id"), "")
    corpus = _known(attrs.get("corpus"), "?")
    text = f"model {model} ({source}), corpus {corpus}, N = {n_examples} {unit}"
    deviations = paper_deviations(attrs)
    if deviations:
        text += f"; deviation: paper used {PAPER_MODEL['id']} (12x12 heads), this is {', '.join(deviations)}"
    if attrs.get("lengths"):
        text += f"; {attrs['lengths']}"
    return text + weighting_note(attrs)


def _family(model_class) -> str | None:
    """``BERT`` for ``BertModel``/``BertForMaskedLM``/..., else the class name; None if unrecorded."""
    name = _known(model_class, "")
    if not name:
        return None
    return "BERT" if name.startswith("Bert") else name


def _lowercase(attrs: dict) -> bool | None:
    """Whether the tokenizer lowercases: the ``lowercase`` attribute, else an id naming ``uncased``."""
    value = attrs.get("lowercase")
    if value is not None and value != "":
        return value.lower() == "true" if isinstance(value, str) else bool(value)
    return True if "uncased" in str(attrs.get("model_id") or "").lower() else None


def paper_deviations(attrs: dict) -> list[str]:
    """How the run's model differs from :data:`PAPER_MODEL` in what matters: family (the
    encoder's class), layers x heads, casing. Unrecorded properties are not called deviations.
    """
    parts = []
    family = _family(attrs.get("model_class"))
    if family is not None and family != PAPER_MODEL["family"]:
        parts.append(family)
    shape = (attrs.get("n_layers"), attrs.get("n_heads"))
    if None not in shape and tuple(map(int, shape)) != (PAPER_MODEL["n_layers"], PAPER_MODEL["n_heads"]):
        parts.append(f"{shape[0]}x{shape[1]}")
    if _lowercase(attrs) is True:
        parts.append("uncased")
    return parts


def length_text(lengths) -> str:
    """The length distribution of the inputs, for captions (entropy and attention shares depend on it):
    ``lengths: median 128 wordpieces (5-95%: 126-128, min 115), 96% within 2 of the longest``.

    Empty for no inputs.
    """
    x = np.asarray(lengths)
    if not x.size:
        return ""
    p5, p95 = np.percentile(x, [5, 95])
    near = float((x >= x.max() - 2).mean())
    return (f"lengths: median {np.median(x):g} wordpieces (5-95%: {p5:g}-{p95:g}, min {x.min()}), "
            f"{100 * near:.0f}% within 2 of the longest ({x.max()})")


def store_provenance(stores, weighting: str = "attention") -> dict:
    """The :data:`PROVENANCE_KEYS` of a store (or its shards, or in fused mode the states
    files), its ``n_examples``, ``weighting`` and ``lengths``.

    For captions of results computed from a store's tables rather than the store;
    ``weighting`` is the view those tables were computed under.
    """
    paths = [stores] if isinstance(stores, (str, Path)) else list(stores)
    if not paths:
        raise StoreError("no attention store given")
    n, lengths, attrs = 0, [], None
    for path in paths:
        with open_record(path) as record:
            attrs = attrs if attrs is not None else dict(record.attrs)
            n += len(record)
            lengths += record.lengths.tolist()
    return {"n_examples": n, "weighting": check_weighting(weighting),
            **{k: attrs.get(k) for k in PROVENANCE_KEYS}, "lengths": length_text(lengths)}


def _known(value, default: str):
    return default if value is None else value


def analysis_class(analysis: str | type[Analysis]) -> type[Analysis]:
    """The class of ``analysis`` (a class, or the name of a registered one)."""
    if not isinstance(analysis, str):
        return analysis
    if analysis not in REGISTRY:
        raise KeyError(f"no analysis named {analysis!r} is registered (registered: "
                       f"{sorted(REGISTRY)}); import the module that defines it first, e.g. "
                       "`from headatlas.analyses import surface`")
    return REGISTRY[analysis]


def _examples(stores, weighting: str = "attention",
              norms: bool = False) -> tuple[Iterable[Example], StoreSet | None, int, int, int]:
    if isinstance(stores, (list, tuple)) and stores and isinstance(stores[0], Example):
        layers, heads = stores[0].attn.shape[:2]
        if norms and any(e.value_norms is None or e.norm_map is None for e in stores):
            raise ValueError("this analysis needs value_norms and norm_map on every example")
        return (e.weighted(weighting) for e in stores), None, layers, heads, len(stores)
    store_set = open_stores(stores, weighting, norms)
    return store_set, store_set, store_set.n_layers, store_set.n_heads, len(store_set)


def _plain(value) -> Any:
    """An option as plain data for the provenance: scalars and containers of them, else a summary."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (list, tuple)) and len(value) <= 100:
        return [_plain(v) for v in value]
    if isinstance(value, dict) and len(value) <= 100:
        return {str(k): _plain(v) for k, v in value.items()}
    size = f" of {len(value)}" if hasattr(value, "__len__") else ""
    return f"<{type(value).__name__}{size}>"
