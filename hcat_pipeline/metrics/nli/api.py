"""Groundedness by natural language inference (HCAT paper §3.2.2), the pure part — public API.

The paper treats the context C as the premise and each answer sentence a_i as the hypothesis. A
linear classifier computes a logit ``z = wᵀx + b`` from a representation ``x`` of the (premise,
hypothesis) pair; the signed distance to the decision boundary ``wᵀx + b = 0`` is
``D = z / ‖w‖`` (D > 0: entailment side, grounded; D < 0: potential hallucination), mapped to a
groundedness score ``σ(D) = 1 / (1 + e^{-D})``.

No packaged 3-way NLI model exists offline, so the project learns that linear head itself. The
parts live in their own modules and are re-exported here for callers:

* ``nli_lexical`` — tokens, numbers, names, negation, hedges, connectives, antonyms;
* ``nli_parse`` — subject / object / predicate / negation from a dependency parse (spaCy-like doc);
* ``nli_features`` — ``featurize``: alignment of each answer sentence with the context sentences
  that support it, and the features x (novelty, agreement with the aligned sentences on subject,
  relation, number, polarity, hedging, links; contradiction probability);
* ``nli_head`` — ``NLIHead`` (z, D, σ(D), ``explain``) and ``fit_head`` (scikit-learn);
* ``nli_pairs`` / ``nli_qa_pairs`` — labelled training pairs generated from a corpus;
* ``nli_sets`` — the public validation sets and their seeded held-out split;
* ``nli_train`` — ``train_nli_head``, the one training recipe (CLI, asset, shipped head);
* ``nli_eval`` — AUROC, length-matched AUROC, the answer aggregate.

No model is loaded here; the resource ``hcat_pipeline.resources.nli.NLIModel`` supplies them.
"""

from __future__ import annotations

from hcat_pipeline.metrics.nli.evaluation import answer_aggregate, auroc, kind_stats, length_matched_auroc
from hcat_pipeline.metrics.nli.features import (
    ALIGN_FEATURES,
    CONTRADICTION_FEATURE,
    K_ALIGNED,
    K_CANDIDATES,
    LEX_FEATURES,
    SIM_FEATURES,
    candidates,
    feature_names,
    featurize,
)
from hcat_pipeline.metrics.nli.head import MONOTONE, NLIHead, fit_head, sigmoid
from hcat_pipeline.metrics.nli.lexical import (
    ANTONYMS,
    STOPWORDS,
    capitalised,
    content_tokens,
    negation_count,
    numbers,
    stem,
    tokens,
)
from hcat_pipeline.metrics.nli.pairs import FRAMES, NEGATIVE_KINDS, POSITIVE_KINDS, Pair, perturbation_pairs
from hcat_pipeline.metrics.nli.parse import PARSE_FEATURES, Parse, summarise
from hcat_pipeline.metrics.nli.qa_pairs import (
    QA_NEGATIVE_KINDS,
    QA_POSITIVE_KINDS,
    documents_from_chunks,
    documents_from_texts,
    nearest_neighbours,
    qa_pairs,
    vocabulary,
)
from hcat_pipeline.metrics.nli.train import TrainConfig, train_nli_head

__all__ = [
    "ALIGN_FEATURES", "ANTONYMS", "CONTRADICTION_FEATURE", "K_ALIGNED", "K_CANDIDATES", "LEX_FEATURES", "MONOTONE",
    "NEGATIVE_KINDS", "PARSE_FEATURES", "POSITIVE_KINDS", "QA_NEGATIVE_KINDS", "QA_POSITIVE_KINDS", "SIM_FEATURES",
    "STOPWORDS", "NLIHead", "Pair", "Parse", "TrainConfig", "FRAMES", "answer_aggregate", "auroc",
    "candidates", "capitalised", "content_tokens", "documents_from_chunks", "documents_from_texts", "feature_names",
    "featurize", "fit_head", "kind_stats", "length_matched_auroc", "nearest_neighbours", "negation_count", "numbers",
    "perturbation_pairs", "qa_pairs", "sigmoid", "stem", "summarise", "tokens", "train_nli_head", "vocabulary",
]  # fmt: skip
