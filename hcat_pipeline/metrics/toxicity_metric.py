"""Toxicity (HCAT paper §4) as a registered metric: the calibrated per-sentence score of
``toxicity.py`` (max over the answer's sentences = ``toxicity``), with its explanation — which
sentence, which category, which signal, what evidence, which head — and each attribute of
``toxicity_attributes`` (severe toxicity, identity attack, insult, profanity, threat: max over the
answer's sentences) with the reasons in ``toxicity_attribute_reasons``.

The scores come from ``toxicity_explanations`` with the head's ``full`` variant (one call for every
answer sentence of the batch: one call of the MiniLM layer features through the project's embedding
cache, one of the packaged USE-M3 encoder); this module is its one call site. The head's fine-tuned encoder runs on
the device of the embedding model whose ``layer_features`` are given (``device: auto | cpu | cuda``).
"""

from __future__ import annotations

import polars as pl

from hcat_pipeline.metrics.registry import F64_LIST, MetricUnavailable, metric

EXPLANATION_COLUMNS = {
    "toxicity_mean": pl.Float64,
    "toxicity_per_sentence": F64_LIST,
    "toxicity_severe_toxicity": pl.Float64,
    "toxicity_identity_attack": pl.Float64,
    "toxicity_insult": pl.Float64,
    "toxicity_profanity": pl.Float64,
    "toxicity_threat": pl.Float64,
    "toxicity_abuse": pl.Float64,  # max of insult, profanity and threat: abuse aimed at the reader (the no_abuse_of_user gate)
    "toxicity_attribute_reasons": pl.String,
    "toxicity_top_sentence": pl.String,
    "toxicity_category": pl.String,
    "toxicity_signal": pl.String,
    "toxicity_evidence": pl.String,
    "toxicity_head": pl.String,
}


def _scorer():
    """``(answer sentences per row, embed) -> [{toxicity, …explanation columns}]``."""
    from hcat_pipeline.metrics.toxicity.model import toxicity_explanations

    return toxicity_explanations


ABUSE_ATTRIBUTES = ("insult", "profanity", "threat")


# the head's "full" variant (MiniLM layer features ⊕ USE-M3): chosen over "minilm" on the train split's
# grouped CV (stack 0.8993 vs 0.8960) and its val split (0.844 vs 0.843)
@metric("toxicity", needs={"embed_layers", "multilingual"}, columns=EXPLANATION_COLUMNS)
def toxicity_metric(batch, resources, options) -> dict[str, list]:
    """Calibrated toxicity of the answer: max over its sentences (top sentence, category, signal and evidence explain it)."""
    out = {c: batch.column() for c in ("toxicity", *EXPLANATION_COLUMNS)}
    rows = [i for i in batch.valid if batch.sentences("answer", i)]
    if not rows:
        return out
    try:  # the fine-tuned encoder runs on the caller's device (score_frame's ``device``: the embedding model's)
        results = _scorer()([batch.sentences("answer", i) for i in rows], resources.get("embed_layers"),
                            embed_aux=resources.get("multilingual").encode, device=resources.device, answers=True)
    except ModuleNotFoundError as e:  # the packaged classifier is not installed: an environment problem, not a bug
        raise MetricUnavailable("toxicity", f"the toxicity classifier could not be loaded ({e})",
                                "install the project's dependencies (`bash scripts/setup.sh`; alt-profanity-check)") from e  # fmt: skip
    for i, r in zip(rows, results, strict=True):
        for c in out:
            v = r.get(c)
            out[c][i] = [float(x) for x in v] if c == "toxicity_per_sentence" and v is not None else v
        parts = [r.get(f"toxicity_{a}") for a in ABUSE_ATTRIBUTES]
        out["toxicity_abuse"][i] = max((float(p) for p in parts if p is not None), default=None)
    return out
