"""Re-ranking the hybrid retriever's fused list (exam paper §4.2: hybrid retrieval with a cross-encoder re-ranker).

No cross-encoder ships in a package here (``../shared/stack.md``: none of the checked re-rankers, NLI or extractive-QA
models load offline), so the re-ranker is the system's own local LLM read as a pointwise cross-encoder: it reads the
question and one passage *together* (``rerank_relevance_v1``: "does the passage contain the answer? Yes or No") and
the score is log P("Yes") − log P("No") of its reply (``LLM.option_logprobs``; local llama.cpp models only, an API
model raises). ``responses.retrieval.HybridReranked`` takes the hybrid's reciprocal-rank-fusion list to ``depth`` (10), scores each
passage, and returns the ``k`` best by that score (ties: the fused order). Deterministic: every prompt is evaluated
from scratch. Measured with the packaged 0.5B model (``benchmarks/rerank.py``, 38 golden cases), it *hurts*: hit@3
0.316 against the fusion's 0.789, ~15 s a question. So no shipped campaign uses it; it is there for a stronger local
model, to be measured the same way. No Dagster import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hcat_pipeline.common.prompts import load_prompt

RERANK_PROMPT = "rerank_relevance_v1"
PASSAGE_CHARS = 1200
Scorer = Callable[[str, Sequence[str]], list[float]]


def llm_relevance(llm) -> Scorer:
    """score(question, passages) → log P(Yes) − log P(No) per passage, by ``llm.option_logprobs`` (local models)."""
    if not getattr(llm, "supports_logprobs", False):
        raise ValueError("retriever hybrid_rerank: the re-ranker reads option log-likelihoods, which only a local llama.cpp model "
                         "gives; choose a local llm for this system or the hybrid retriever")  # fmt: skip
    template = load_prompt(RERANK_PROMPT)

    def score(question: str, passages: Sequence[str]) -> list[float]:
        out = []
        for p in passages:
            messages = template.render(question=question, passage=" ".join(p.split())[:PASSAGE_CHARS])
            yes, no = llm.option_logprobs(messages, ["Yes", "No"])
            out.append(float(yes["logprob"] - no["logprob"]))
        return out

    score.prompt_hash = template.hash  # type: ignore[attr-defined]  (the index fingerprint names the re-ranker)
    return score
