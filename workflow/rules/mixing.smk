# Which view of attention tells the truth (issue 35): α, Kobayashi's norm, their rollouts, GlobEnc,
# ALTI, value zeroing and gradient x input, each scored against blank-out on the UPOS tagger that
# `finetune` makes from each base model (<base>_upos, as the ablation names it), with deletion
# curves. Options: `mixing:` in the schema. Cost grows with n forwards per sentence.
MIXING = config["mixing"]
MIXING_RESULTS = Results(
    "mixing",
    f"{RESULTS}/{{task_model}}/mixing",
    labels=lambda text: {"model": "{task_model}", "result": text},
    category="Which view of attention tells the truth (context mixing vs blank-out)",
    subcategory="{task_model}",
    task_model=lambda model: [t for t, base in PLAN.mixing_taggers.items() if base == model],
    constrain={"task_model": list(PLAN.mixing_taggers)},
)


rule context_mixing:
    input:
        corpus=f"{DATA}/corpora/{FINETUNE['corpus']}.jsonl",
        tagger=mixing_tagger,
        code=code("context_mixing.py"),
    output:
        measures=MIXING_RESULTS.table(
            "measures.csv", "mixing_measures", "measures against blank-out"
        ),
        layers=MIXING_RESULTS.table(
            "layers.csv", "mixing_layers", "per layer, alone and rolled out"
        ),
        deletion=MIXING_RESULTS.table("deletion.csv", "mixing_deletion", "deletion curves"),
        aopc=MIXING_RESULTS.table("aopc.csv", "mixing_deletion", "deletion: AOPC per order"),
        comparisons=MIXING_RESULTS.table("comparisons.csv", "mixing_claims", "paired differences"),
        heads=MIXING_RESULTS.heads("heads.csv", "mixing_heads", "per head: α and ‖αf‖ vs blank-out"),
        claims=MIXING_RESULTS.claims("paper_claims.csv", "mixing_claims", "paper vs ours"),
        figure=MIXING_RESULTS.figure("mixing.svg", "mixing_measures", "figure"),
    log:
        logs("mixing/{task_model}"),
    benchmark:
        benchmarks("mixing/{task_model}")
    conda:
        ENV
    threads: MIXING["threads"]
    resources:
        mem_mb=3000,
    params:
        **pick(
            MIXING, "split", "max_sentences", "max_length", "deletion_steps", "batch_size", "seed"
        ),
        bootstrap=MIXING["bootstrap"],
        corpus=FINETUNE["corpus"],
    script:
        "../scripts/context_mixing.py"
