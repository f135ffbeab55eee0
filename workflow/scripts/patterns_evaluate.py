"""Rule patterns_evaluate: the pattern classifier against the hand-labelled maps (held-out half)."""

from headatlas.analyses.patterns import Thresholds, evaluate_labels
from headatlas.analyses.labels import load_maps, map_segments, read_labels
from headatlas.pipeline.jobs import rule_logging
from headatlas.io import write_table
from headatlas.plots.patterns import draw_contact_sheet

with rule_logging(snakemake) as log:
    labels = read_labels(snakemake.input.labels)
    maps, sentences, meta = load_maps(snakemake.input.maps, labels)
    models = sorted(set(labels["model"]) - {""}) or [meta.get("model_name", "?")]
    source = (f"{', '.join(models)} on {meta.get('corpus', '?')}, maps kept in "
              f"{snakemake.input.maps.split('/')[-1]}")
    result = evaluate_labels(maps, sentences, labels, Thresholds.from_dict(snakemake.params.thresholds),
                             describe_store=source, classifier=snakemake.params.classifier)
    write_table(result.table, snakemake.output.table, float_format="%.2f")
    write_table(result.agreement, snakemake.output.agreement, float_format="%.4f")
    write_table(result.confusion, snakemake.output.confusion, index=True)
    write_table(result.thresholds, snakemake.output.thresholds)
    wrong = result.maps[(result.maps["half"] == "test")
                        & (result.maps["pattern"] != result.maps["predicted"])].head(40)
    rows = list(wrong.index)
    boundaries = map_segments(snakemake.input.maps, labels)
    draw_contact_sheet([maps[i] for i in rows], [boundaries[i] for i in rows],
                       [f"{m} {l}-{h}: {t} -> {pr}" for m, l, h, t, pr in
                        zip(wrong["map"], wrong["layer"], wrong["head"], wrong["pattern"],
                            wrong["predicted"])], snakemake.output.errors,
                       sentences=[sentences[i] for i in rows])
    log.info("%s\n%s\n%s\n%s\n%s", result.caption, result.table.to_string(index=False),
             result.agreement.to_string(index=False), result.confusion.to_string(),
             result.thresholds.to_string(index=False))
