"""Rule ablation: every head-type variant of Guan et al. Tables 2-3 on the task model -> table, chart."""

from collections import Counter

import torch

from headatlas import ablation
from headatlas.tasks.squad import read_squad
from headatlas.corpora.records import read_jsonl
from headatlas.errors import HeadAtlasError
from headatlas.finetune import pack_documents, split_sentences
from headatlas.io import atomic_open
from headatlas.models import resolve
from headatlas.plots_ablation import plot_ablation
from headatlas.pipeline import rule_logging


def upos(model, tokenizer, p):
    """The tagger's evaluation on the packed split, and its description."""
    parts, by_document = split_sentences(list(read_jsonl(snakemake.input.data)))
    sentences = parts[p.split][: p.max_examples]
    unknown = {t for s in sentences for t in s.upos} - set(model.config.label2id)
    if unknown:
        raise HeadAtlasError(f"tags {sorted(unknown)} are not in the tagger's label map; was it "
                             f"fine-tuned on {p.corpus}?")
    stats = Counter()
    examples = pack_documents(tokenizer, sentences, model.config.label2id, p.max_length, stats)
    data = (f"UPOS tagging, {p.corpus} {p.split} split"
            + (" (documents split by order: the corpus has no splits)" if by_document else "")
            + f", {sum(e.n_words for e in examples)} words in {len(examples)} inputs of <= "
            f"{p.max_length} wordpieces, each several consecutive sentences of one document"
            + (f"; {stats['too_long_sentences']} sentence(s) longer than that left out"
               if stats["too_long_sentences"] else ""))
    return ablation.upos_task(model, examples, p.batch_size, p.renormalise), data


def squad(model, tokenizer, p):
    examples = read_squad(snakemake.input.data)[: p.max_examples]
    options = {"max_length": 384, "stride": 128, "max_answer_length": 30, **p.squad}
    data = (f"SQuAD v1.1 ({snakemake.input.data}), {len(examples)} questions, windows of "
            f"{options['max_length']} wordpieces (stride {options['stride']}); context sentences "
            "split at . ! ? before a capital")
    return ablation.squad_task(model, tokenizer, examples, p.batch_size, p.renormalise,
                               **options), data


with rule_logging(snakemake) as log:
    torch.set_num_threads(snakemake.threads)
    p = snakemake.params
    source, revision = resolve(p.spec)
    model, tokenizer = ablation.load_task_model(p.task, source, revision)
    config = model.config
    types = ablation.read_head_types(snakemake.input.types, config.num_hidden_layers,
                                     config.num_attention_heads)
    evaluate, data = (upos if p.task == "upos" else squad)(model, tokenizer, p)
    table = ablation.run_grid(evaluate, types, ablation.MAIN_METRIC[p.task])
    with atomic_open(snakemake.output.table) as handle:
        table.to_csv(handle, index=False, float_format="%.4g")
    counts = ", ".join(f"{t} {n}" for t, n in ablation.type_counts(types).items())
    caption = (
        f"Task model {snakemake.wildcards.task_model} ({p.spec.get('hub') or source}, "
        f"{config.num_hidden_layers}x{config.num_attention_heads} heads); {data}. Head types "
        f"({counts}) from {p.types_source}"
        + {True: " (the task model itself)", None: "",
           False: " (the pre-trained base: the fine-tuned model is not a configured model)"}[p.types_own]
        + f". Removed weights {'renormalised' if p.renormalise else 'not renormalised'}. "
        f"Paper: {ablation.PAPER_MODEL}, F1 as % of its unablated 89.68"
        + ("; deviations: UPOS tagging instead of SQuAD, a smaller model" if p.task == "upos" else "")
        + "."
    )
    plot_ablation(table, ablation.MAIN_METRIC[p.task], snakemake.output.figure, caption)
    log.info("%s\n%s", caption, table.to_string(index=False))
