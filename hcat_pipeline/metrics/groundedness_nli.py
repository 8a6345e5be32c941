"""Groundedness by NLI over answers (HCAT paper §3.2.2, aggregated as in §3.2).

Each answer sentence a_i is the hypothesis and the context sentences C are the premise; the scorer
(``hcat_pipeline.resources.nli.NLIModel`` or anything with the same ``decision`` method) gives the
logit z_i, the distance D_i = z_i / ‖w‖ to the decision boundary and σ(D_i). The answer's
``groundedness_nli`` is the mean of σ(D_i) over its k sentences (S = 1/k Σ_i, §3.2); the least
grounded sentence i* = argmin_i σ(D_i) is reported too, since a low σ(D_i) flags a potential
hallucination.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from hcat_pipeline.metrics.nli.evaluation import answer_aggregate
from hcat_pipeline.metrics.nli.head import DEFAULT_TASK, GroundingTask  # noqa: F401 (re-exported for the scorers' callers)


class NLIScorer(Protocol):
    def decision(self, premise_sentence_lists: Sequence[Sequence[str]], hypotheses: Sequence[str], task: str = "all") -> dict: ...


def groundedness_nli_batch(
    rows: Sequence[tuple[Sequence[str], Sequence[str]]], scorer: NLIScorer, task: str | Sequence[str] = DEFAULT_TASK
) -> list[dict]:
    """Score many answers at once: ``rows`` = [(answer_sentences, context_sentences), ...].

    Returns one dict per row: ``groundedness_nli`` (mean σ(D) over the answer sentences, NaN for an
    empty answer), ``nli_sigma`` / ``nli_distance`` / ``nli_logit`` (per answer sentence, in order),
    ``nli_min_sigma`` and ``nli_least_grounded`` (index i* of the least grounded sentence, -1 if none),
    and the explanation when the scorer gives one: ``nli_support`` (per answer sentence, the index in
    the row's non-empty context sentences of the sentence that supports it best, -1 if none) and
    ``nli_reasons`` (per answer sentence, the features that lowered D most, e.g. "contradiction").
    ``task`` — one grounding task for every row or one per row ("qa" RAG answers, "dialogue",
    "summary"; "all" the general head) — picks the scorer's head; the pairs of each task go to the
    scorer in one call.
    """
    premises: list[list[str]] = []
    hypotheses: list[str] = []
    owner: list[int] = []
    for r, (answer_sentences, context_sentences) in enumerate(rows):
        ctx = [s for s in context_sentences if s and s.strip()]
        for s in answer_sentences:
            if s and s.strip():
                premises.append(ctx)
                hypotheses.append(s)
                owner.append(r)
    tasks = [task] * len(rows) if isinstance(task, str) else list(task)
    if len(tasks) != len(rows):
        raise ValueError(f"groundedness_nli: {len(tasks)} tasks for {len(rows)} rows")
    z, D, sig = np.zeros(len(hypotheses)), np.zeros(len(hypotheses)), np.zeros(len(hypotheses))
    aligned: list = [[] for _ in hypotheses]
    reasons: list = [[] for _ in hypotheses]
    for t in sorted({tasks[r] for r in owner}):
        idx = [j for j, r in enumerate(owner) if tasks[r] == t]
        out = scorer.decision([premises[j] for j in idx], [hypotheses[j] for j in idx], task=t)
        for k, arr in (("z", z), ("D", D), ("sigma", sig)):
            arr[idx] = np.asarray(out[k], dtype=np.float64)
        for j, a, why in zip(idx, out.get("aligned") or [[]] * len(idx), out.get("reasons") or [[]] * len(idx), strict=True):
            aligned[j], reasons[j] = a, why
    own = np.asarray(owner, dtype=int)
    results = []
    for r in range(len(rows)):
        idx = np.where(own == r)[0]
        sigmas = [float(v) for v in sig[idx]]
        results.append(
            {
                "groundedness_nli": answer_aggregate(sigmas),
                "nli_sigma": sigmas,
                "nli_distance": [float(v) for v in D[idx]],
                "nli_logit": [float(v) for v in z[idx]],
                "nli_min_sigma": min(sigmas) if sigmas else math.nan,
                "nli_least_grounded": int(np.argmin(sigmas)) if sigmas else -1,
                "nli_support": [int(aligned[j][0]) if len(aligned[j]) else -1 for j in idx],
                "nli_reasons": [[name for name, _ in reasons[j]] for j in idx],
            }
        )
    return results
