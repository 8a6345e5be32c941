"""Synthetic traffic of a RAG service over a corpus, with faults planted on known days — the known answers the
anomaly tests are proven on (like the gates' canaries), and a way to try monitoring before wiring real logs.

Every request asks about one sentence of a corpus chunk (its topic stratum known); an honest answer is that sentence
with it and a neighbour as the retrieved passages. Planted faults, each on its own signal:

* ``acute_day``: that day only, ``acute_rate`` of the answers deny their passage ("It is not true that …"): ungrounded;
* ``drift_from``: from that day the refusal rate rises by ``drift_step`` a day;
* ``category_stratum`` from ``category_from``: that stratum's retrieval returns another topic's passages and the
  answer follows them (grounded, but not an answer to the question): irrelevant.

The log records are nested, like a service's own (``request.query``, ``response.answer``, ``response.sources[*]``,
``feedback.thumbs``), so a campaign file needs its field map (``FIELDS``). Some questions carry personal data and a
few lines are broken, so the masking and the rejected-row counts have something to find.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hcat_pipeline.common.sentences import sentences
from hcat_pipeline.monitoring.logs import LogFields

FIELDS = LogFields(question_path="request.query", answer_path="response.answer", contexts_path="response.sources",
                   timestamp_path="ts", request_id_path="id", latency_ms_path="latency_ms", error_path="response.error",
                   thumbs_path="feedback.thumbs", retried_path="feedback.retried", output_tokens_path="response.tokens")  # fmt: skip
REFUSAL = "I'm sorry, but I can't help with that request."
PII = ("My email is jane.doe@example.com and", "Call me on 415-555-0132,", "I am Maria Gonzalez, account 4111 1111 1111 1111, and")


@dataclass(frozen=True)
class TrafficPlan:
    days: int = 10
    first_day: str = "2026-11-01"
    rows_per_day: int = 400
    ungrounded_rate: float = 0.03
    refusal_rate: float = 0.03
    acute_day: int | None = None
    acute_rate: float = 0.45
    drift_from: int | None = None
    drift_step: float = 0.025
    category_stratum: int | None = None
    category_from: int | None = None
    error_rate: float = 0.005
    pii_rate: float = 0.02
    broken_lines: int = 2
    seed: int = 0

    def day(self, i: int) -> str:
        return (dt.date.fromisoformat(self.first_day) + dt.timedelta(days=i - 1)).isoformat()


def sentence_pools(texts: list[str], strata: list[int], min_words: int = 8, max_words: int = 35) -> dict[int, list[str]]:
    """Usable sentences of each stratum's chunks (plain prose of 8-35 words)."""
    pools: dict[int, list[str]] = {}
    for text, g in zip(texts, strata):
        for s in sentences(text):
            words = s.split()
            if min_words <= len(words) <= max_words and s[-1:] == "." and sum(c.isalpha() for c in s) > 0.7 * len(s):
                pools.setdefault(int(g), []).append(s)
    return {g: sorted(set(p)) for g, p in pools.items() if len(p) >= 2}


def _question(sentence: str) -> str:
    return f"What can you tell me about this: {sentence.rstrip('.')[0].lower()}{sentence.rstrip('.')[1:]}?"


def _row(plan: TrafficPlan, i: int, n: int, rng: np.random.Generator, pools: dict[int, list[str]], strata: list[int]) -> dict:
    g = strata[rng.integers(len(strata))]
    pool = pools[g]
    j = int(rng.integers(len(pool)))
    sentence, neighbour = pool[j], pool[(j + 1) % len(pool)]
    question, passages, answer = _question(sentence), [sentence, neighbour], sentence
    failed = False
    if plan.category_stratum == g and plan.category_from is not None and i >= plan.category_from:
        other = pools[strata[(strata.index(g) + 1 + int(rng.integers(len(strata) - 1))) % len(strata)]]
        k = int(rng.integers(len(other)))
        passages, answer, failed = [other[k], other[(k + 1) % len(other)]], other[k], True
    refusal = plan.refusal_rate + (plan.drift_step * (i - plan.drift_from + 1) if plan.drift_from and i >= plan.drift_from else 0.0)
    ungrounded = plan.acute_rate if plan.acute_day == i else plan.ungrounded_rate
    u = 1.0 if failed else rng.random()  # the stratum's fault stands; the other faults land on honest answers
    if u < refusal:
        answer, failed = REFUSAL, True
    elif u < refusal + ungrounded:
        answer, failed = f"It is not true that {sentence[0].lower()}{sentence[1:]}", True
    if rng.random() < plan.pii_rate:
        question = f"{PII[int(rng.integers(len(PII)))]} {question[0].lower()}{question[1:]}"
    error = rng.random() < plan.error_rate
    stamp = dt.datetime.fromisoformat(plan.day(i)).replace(tzinfo=dt.UTC) + dt.timedelta(seconds=int(86399 * n / plan.rows_per_day))
    thumbs = "down" if rng.random() < (0.3 if failed else 0.03) else "up" if rng.random() < 0.2 else None
    return {"id": f"req-{plan.day(i)}-{n:06d}", "ts": stamp.isoformat().replace("+00:00", "Z"), "request": {"query": question},
            "response": {"answer": None if error else answer, "error": "upstream timeout" if error else None,
                         "sources": [{"id": f"s{k}", "text": p} for k, p in enumerate(passages)], "tokens": len(answer.split())},
            "latency_ms": round(float(rng.lognormal(7.0, 0.35)), 1), "feedback": {"thumbs": thumbs, "retried": bool(failed and rng.random() < 0.2)}}  # fmt: skip


def write_traffic(folder: Path, plan: TrafficPlan, pools: dict[int, list[str]]) -> list[Path]:
    """One ``traffic-<day>.jsonl`` a day (deterministic in the plan's seed); returns the files."""
    folder.mkdir(parents=True, exist_ok=True)
    strata = sorted(pools)
    if plan.category_stratum is not None and plan.category_stratum not in pools:
        raise ValueError(f"category_stratum {plan.category_stratum} has no usable sentences (strata: {strata})")
    out = []
    for i in range(1, plan.days + 1):
        rng = np.random.default_rng([plan.seed, i])
        lines = [json.dumps(_row(plan, i, n, rng, pools, strata), ensure_ascii=False) for n in range(plan.rows_per_day)]
        for b in range(plan.broken_lines):
            lines.insert(7 + b * 11, '{"id": "broken", "request": {"query": ' if b % 2 == 0 else '{"id": "no-question", "response": {"answer": "x"}}')
        path = folder / f"traffic-{plan.day(i)}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        out.append(path)
    return out
