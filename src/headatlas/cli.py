"""``headatlas``: the tool's commands outside Snakemake.

    headatlas version                 the package version and the code's commit
    headatlas label sample|sheets|freeze ...   hand-labelling of attention maps (Kovaleva's patterns)
    headatlas patterns-eval           the pattern classifier on the labelled maps (held-out half)
    headatlas store-schema            the HDF5 store's schema as Markdown (docs/store.md)
    headatlas resources LOGS/benchmarks ...    SLURM requests from a finished run's benchmarks
    headatlas config-docs             the configuration reference (config/README.md)
    headatlas atlas MODEL [L-H]       a model's heads.csv, or one head's profile

Each subcommand takes ``--help``. The Snakemake workflow itself runs with ``snakemake``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Sequence


def _version(argv: Sequence[str]) -> None:
    from headatlas.provenance import code_version

    argparse.ArgumentParser(prog="headatlas version").parse_args(argv)
    v = code_version()
    dirty = " (uncommitted changes)" if v["code_dirty"] else ""
    print(f"headatlas {v['package_version']}, commit {v['code_commit']}{dirty}")


def _label(argv: Sequence[str]) -> None:
    from headatlas.report.labelling import main

    main(argv, prog="headatlas label")


def _store_schema(argv: Sequence[str]) -> None:
    from headatlas.store.schema import markdown

    argparse.ArgumentParser(prog="headatlas store-schema",
                            description="print the store schema as Markdown").parse_args(argv)
    sys.stdout.write(markdown())


def _resources(argv: Sequence[str]) -> None:
    from headatlas.pipeline.resources import main

    main(argv, prog="headatlas resources")


def _config_docs(argv: Sequence[str]) -> None:
    from headatlas.pipeline.configdocs import main

    main(argv, prog="headatlas config-docs")


def _atlas(argv: Sequence[str]) -> None:
    """A model's head table (results/<model>/heads.csv), sorted by a column, or one head's profile."""
    from headatlas.report.atlas import head_profile, load

    parser = argparse.ArgumentParser(prog="headatlas atlas", description=_atlas.__doc__)
    parser.add_argument("model")
    parser.add_argument("head", nargs="?", help="one head, LAYER-HEAD (1-based, e.g. 3-9)")
    parser.add_argument("--results", default="results", help="the results folder (default: results)")
    parser.add_argument("--weighting", choices=("attention", "norm"), default="attention")
    parser.add_argument("--sort", help="a column to sort the table by (largest first)")
    parser.add_argument("--top", type=int, default=20, help="rows to print (default 20)")
    parser.add_argument("--columns", help="the columns to print, comma-separated (default: all, "
                        "wrapped to the terminal's width)")
    args = parser.parse_args(argv)
    width = shutil.get_terminal_size().columns
    try:
        if args.head:
            layer, _, head = args.head.partition("-")
            if not (layer.isdigit() and head.isdigit()):
                parser.error(f"head {args.head!r}: write LAYER-HEAD, e.g. 3-9")
            print(head_profile(args.model, int(layer), int(head), args.results, args.weighting).to_string())
            return
        table = load(args.results, args.model)
    except (FileNotFoundError, KeyError) as error:
        raise SystemExit(f"headatlas atlas: {error.args[0] if error.args else error}") from None
    table = table[table["weighting"] == args.weighting]
    wanted = [c.strip() for c in (args.columns or "").split(",") if c.strip()]
    unknown = [c for c in [args.sort, *wanted] if c and c not in table]
    if unknown:
        parser.error(f"no column {', '.join(map(repr, unknown))}; columns: {', '.join(table.columns)}")
    if args.sort:
        table = table.sort_values(args.sort, ascending=False)
    if wanted:
        table = table[[c for c in ("layer", "head") if c not in wanted] + wanted]
    print(table.head(args.top).to_string(index=False, line_width=width))


def _patterns_eval(argv: Sequence[str]) -> None:
    """The workflow's patterns_evaluate rule without Snakemake: packaged or given labels, the
    schema's default classifier and thresholds unless a config file or --classifier gives others."""
    import yaml

    from headatlas.analyses.patterns import Thresholds, evaluate_labels
    from headatlas.pipeline.config import default_config
    from headatlas.analyses.labels import load_maps, read_labels

    parser = argparse.ArgumentParser(prog="headatlas patterns-eval", description=_patterns_eval.__doc__)
    parser.add_argument("--labels", help="label CSV (default: the packaged 730 maps)")
    parser.add_argument("--maps", help="the labelled maps .npz (default: the packaged maps)")
    parser.add_argument("--config", type=Path, help="a config whose patterns.thresholds and classifier to use")
    parser.add_argument("--classifier", choices=("forest", "rules"),
                        help="forest (learned from the tune half) or rules (the thresholds); default: the config's")
    parser.add_argument("--out", type=Path, help="folder for evaluation.csv, agreement.csv, confusion.csv, thresholds.csv")
    args = parser.parse_args(argv)
    if (args.labels is None) != (args.maps is None):
        parser.error("give --labels and --maps together, or neither for the packaged set")
    config = default_config(yaml.safe_load(args.config.read_text()) if args.config else None)
    labels = read_labels(args.labels)
    maps, types, _ = load_maps(args.maps, labels)
    result = evaluate_labels(maps, types, labels, Thresholds.from_dict(config["patterns"]["thresholds"]),
                             classifier=args.classifier or config["patterns"]["classifier"])
    print(result.caption)
    print(result.table.to_string(index=False, float_format="{:.2f}".format))
    print(result.agreement.to_string(index=False, float_format="{:.3f}".format))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        result.table.to_csv(args.out / "evaluation.csv", index=False, float_format="%.2f")
        result.agreement.to_csv(args.out / "agreement.csv", index=False, float_format="%.4f")
        result.confusion.to_csv(args.out / "confusion.csv")
        result.thresholds.to_csv(args.out / "thresholds.csv", index=False)
        print(f"wrote {args.out}/evaluation.csv, agreement.csv, confusion.csv, thresholds.csv")


COMMANDS = {"version": _version, "label": _label, "patterns-eval": _patterns_eval,
            "store-schema": _store_schema, "resources": _resources, "config-docs": _config_docs,
            "atlas": _atlas}


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print(__doc__.strip())
        if argv and argv[0] not in ("-h", "--help"):
            raise SystemExit(f"headatlas: unknown command {argv[0]!r}; one of {', '.join(COMMANDS)}")
        return
    try:
        COMMANDS[argv[0]](argv[1:])
    except BrokenPipeError:  # the reader stopped early (| head): not an error
        sys.stdout = None


if __name__ == "__main__":
    main()
