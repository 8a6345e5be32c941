"""``hcat train-nli``: (re)train the NLI groundedness head (HCAT paper §3.2.2).

The recipe is ``metrics.nli.train.train_nli_head`` — the same one the ``nli_head`` asset and
``scripts/build_nli_head.py`` (the shipped ``metrics/nli/nli_head.json``) use. Every field of
``TrainConfig`` is an option here with the same default (the options are generated from it), so
``hcat train-nli --out X`` reproduces the shipped head byte for byte on the same machine setup.
Training pairs: perturbation pairs and QA twins from the corpus (default: the pydoc_data topics,
ingested and chunked like the ``chunks`` asset; ``--texts DIR`` for your own), plus the "train"
part of the public validation sets (``--public-sets ""`` for none).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from hcat_pipeline.commands import command
from hcat_pipeline.resources.nli import train_and_save


def add_arguments(p: argparse.ArgumentParser) -> None:
    from hcat_pipeline.metrics.nli.train import TrainConfig

    p.add_argument("--out", default=None, help="where to write the head JSON (default: data/warehouse/nli_head.json)")
    p.add_argument("--texts", default=None, help="a folder of .txt/.md/.rst files to train on (default: the pydoc_data topics)")
    for f in dataclasses.fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        if f.type in (bool, "bool"):
            p.add_argument(flag, type=lambda v: v.lower() in ("1", "true", "yes"), default=f.default, metavar="BOOL")
        else:
            kind = f.type if isinstance(f.type, str) else f.type.__name__
            cast = str if kind.startswith("Literal") else {"int": int, "float": float, "str": str}[kind]
            p.add_argument(flag, type=cast, default=f.default)


@command("train-nli", "train the NLI groundedness head (corpus perturbation pairs + public sets' train split)", add_arguments)
def _train(args: argparse.Namespace) -> int:
    from hcat_pipeline.metrics.nli.qa_pairs import documents_from_texts
    from hcat_pipeline.metrics.nli.train import TrainConfig, default_documents
    from hcat_pipeline.paths import WAREHOUSE_DIR

    config = TrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)})
    if args.texts:
        files = sorted(p for p in Path(args.texts).rglob("*") if p.suffix in {".txt", ".md", ".rst"})
        docs, name = documents_from_texts([f.read_text(errors="replace") for f in files]), str(args.texts)
    else:
        docs, name = default_documents(), "chunks"
    out = Path(args.out) if args.out else WAREHOUSE_DIR / "nli_head.json"
    head, pairs, _ = train_and_save(docs, out, config, corpus_name=name)
    print(
        f"trained on {len(pairs)} pairs ({head.info['pairs_by_source']}), C={head.info['C']}: "
        f"train AUROC {head.info['train_auroc']:.3f}, ‖w‖ {head.w_norm:.3f}"
    )
    for n, w in zip(head.feature_names, head.w):
        print(f"  w[{n}] = {w:+.3f}")
    print(f"saved {out}")
    return 0
