"""Paraphrase robustness cases (golden-eval §3.2.3 ROBUSTNESS, §3.5.2 prompt sensitivity): each of a few happy-path
base cases worded N more ways, so that a campaign can measure the per-case variance of a system's score over the same
intent (``reports.robustness.paraphrase_variance``) and flag the cases it answers under one wording only.

A base's group is its case plus ``per_case`` paraphrases, all with its reference (variant kind ``paraphrase``,
category ``robustness``, tag ``paraphrase_group:<base id>``). The LLM writes the rewordings in one call
(``golden.generation.paraphrases``); a rewording is kept only if it is still a question, differs from the base and
from the other rewordings, keeps every number and quoted term of the base, and its cosine to the base is at least
``min_similarity`` (``MIN_SIMILARITY``). A base with fewer than two kept rewordings is a failure (with its reason) and the next base is
tried. No Dagster import.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import numpy as np

PER_CASE = 3  # rewordings per base case (the night reads the base and all of them: one group)
# a rewording's MiniLM cosine to the base at least this: on the default corpus's first groups the rewordings that kept the
# meaning scored 0.86-0.99 and the three that changed it ("What does a dictionary display yield?" → "What does a dictionary
# return when it is iterated over?") 0.69-0.79 (the colloquial rewrites' 0.5 let those through)
MIN_SIMILARITY = 0.8
_KEPT = re.compile(r"\"[^\"]+\"|“[^”]+”|\b\d[\d.,]*\b")  # numbers and quoted terms a rewording must keep


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def rewording_problem(text: str, base: str, others: Iterable[str]) -> str | None:
    """Why ``text`` is not a usable rewording of ``base`` (before the similarity check), or None."""
    if not text.strip().endswith("?"):
        return f"not a question: {text[:60]!r}"
    if _norm(text) == _norm(base) or any(_norm(text) == _norm(o) for o in others):
        return f"a repeat: {text[:60]!r}"
    lost = [k for k in _KEPT.findall(base) if k.strip('"“”').lower() not in text.lower()]
    if lost:
        return f"drops {lost[:3]} of the question: {text[:60]!r}"
    return None


def paraphrase_group(base: dict, texts: list[str], embed: Callable[[list[str]], np.ndarray], min_similarity: float,
                     per_case: int = PER_CASE) -> tuple[list[str], list[str]]:
    """(kept rewordings, why each other one was dropped) for one base case."""
    kept, dropped = [], []
    sims = embed([base["query"], *texts]) if texts else np.zeros((1, 1))
    for i, t in enumerate(texts):
        why = rewording_problem(t, base["query"], kept)
        sim = float(sims[i + 1] @ sims[0]) if why is None else 0.0
        if why is None and sim < min_similarity:
            why = f"off-meaning (similarity {sim:.2f} < {min_similarity}): {t[:60]!r}"
        (dropped if why else kept).append(why or t)
    return kept[:per_case], dropped


def paraphrase_cases(bases: Iterable[dict], n_cases: int, per_case: int, reword, embed, variant, seed: int,
                     min_similarity: float = MIN_SIMILARITY) -> tuple[list[dict], list[dict]]:
    """Paraphrase variants for up to ``n_cases`` of ``bases`` (in the given order); (cases, failures).
    ``reword(query, n, seed) -> (texts, prompt_hash, model, error)``; ``variant(base, **fields)`` builds a variant case."""
    cases: list[dict] = []
    failures: list[dict] = []
    made, pending = 0, iter(bases)
    while made < n_cases and per_case > 0 and (base := next(pending, None)) is not None:  # no base drawn past the count
        texts, phash, model, err = reword(base["query"], per_case, seed)
        kept, dropped = paraphrase_group(base, texts, embed, min_similarity, per_case) if not err else ([], [err])
        if len(kept) < min(2, per_case):
            failures.append({"kind": "paraphrase", "base_case_id": base["case_id"],
                             "reason": f"{len(kept)} usable rewording(s) of {per_case}: " + "; ".join(dropped[:3])})  # fmt: skip
            continue
        made += 1
        for i, text in enumerate(kept):
            cases.append(variant(base, category="robustness", variant_kind="paraphrase", query=text, prompt_hash=phash, model=model,
                                 tags=[f"paraphrase_group:{base['case_id']}", f"paraphrase:{i + 1}"],
                                 constraints=["must answer the reworded question as the original: same intent, same answer"]))  # fmt: skip
    return cases, failures
