"""Grader-gaming checks on responses (golden-eval §7.5), pure core.

Answers that can score on a metric without meeting the objective, flagged per case (``gaming_flags``)
and per system (``gaming_summary``, each rate with its bootstrap CI):

* ``empty`` — no answer, or only whitespace / punctuation (a failed call is not gaming: ``error`` set
  rows are counted apart as ``failed``);
* ``format_only`` — markup, labels and filler but fewer than ``MIN_CONTENT_WORDS`` content words
  (yes/no and multiple-choice cases are exempt: "Yes." is a full answer there; so are refusals);
* ``context_copy`` — the answer is the retrieved context pasted back: ≥ ``COPY_CONTAINMENT`` of its
  word 8-grams come from the context *and* it reproduces ≥ ``COPY_COVERAGE`` of the context's 8-grams
  (groundedness metrics reward this);
* ``canned`` — the same normalised answer given to ≥ ``CANNED_MIN_SHARE`` of the system's cases (and at
  least ``CANNED_MIN_CASES``);
* ``question_echo`` — the answer adds nothing to the question: ≥ ``ECHO_SHARE`` of its content words (at least one) are
  the question's own (besides yes / no); yes/no and multiple-choice cases are exempt ("The match statement is used for
  pattern matching." answers "Is the match statement used for pattern matching?"). Groundedness and relevancy reward
  parroting a question built from a source sentence; ``ungamed`` scores such answers 0 for rankings and the frontier;
* ``refusal`` — the project's rule-based refusal detector (``metrics.refusal.is_refusal``); per
  system, ``refuses_everything`` when the refusal rate on answerable cases (expected_behavior
  "answer") is ≥ ``REFUSE_ALL_RATE``.
"""

from __future__ import annotations

import re

import polars as pl

from hcat_pipeline.common.stats import bootstrap_ci
from hcat_pipeline.common.text import content_words
from hcat_pipeline.gates.trace_cheating import trace_flags
from hcat_pipeline.metrics.refusal import is_refusal

MIN_CONTENT_WORDS = 3
COPY_NGRAM = 8
COPY_CONTAINMENT = 0.9
COPY_COVERAGE = 0.5
CANNED_MIN_SHARE = 0.2
CANNED_MIN_CASES = 3
REFUSE_ALL_RATE = 0.8
SHORT_ANSWER_TYPES = ("yes_no", "multiple_choice")
ECHO_SHARE = 0.9
FLAGS = ("empty", "format_only", "context_copy", "canned", "question_echo", "refusal", "trace_cheating")
_YES_NO = frozenset({"yes", "no", "true", "false", "correct", "indeed"})
_WORD = re.compile(r"[a-z0-9]+")
_MARKUP = re.compile(r"(?im)^\s*(?:answer|response|final answer|output)\s*[:：]|[*_#>`|\[\]{}()\-]+")


def _ngrams(words: list[str], k: int) -> set[tuple[str, ...]]:
    return {tuple(words[i:i + k]) for i in range(len(words) - k + 1)}


def gaming_flags(responses: pl.DataFrame, cases: pl.DataFrame | None = None, allowed_hosts: tuple[str, ...] = (),
                 allowed_tools: tuple[str, ...] = ()) -> pl.DataFrame:  # fmt: skip
    """Per response: the five flags, ``trace_cheating`` (``gates.trace_cheating``: the tool-call trace read for network
    access, the evaluation's files, shell calls and uncited sources), ``gamed`` (any flag but refusal), the copy numbers
    and the evidence."""
    need = ("case_id", "system_id", "answer")
    missing = [c for c in need if c not in responses.columns]
    if missing:
        raise ValueError(f"gaming_flags: responses lack columns {missing}")
    frame = responses
    extra = [c for c in ("query_type", "expected_behavior") if c not in frame.columns]
    if cases is not None and extra:
        frame = frame.join(cases.select("case_id", *[c for c in extra if c in cases.columns]).unique("case_id"), on="case_id", how="left")
    recs = frame.to_dicts()
    norm = [" ".join(_WORD.findall((r["answer"] or "").lower())) for r in recs]
    per_system: dict[str, int] = {}
    counts: dict[tuple[str, str], int] = {}
    for r, n in zip(recs, norm):
        per_system[r["system_id"]] = per_system.get(r["system_id"], 0) + 1
        if n:
            counts[(r["system_id"], n)] = counts.get((r["system_id"], n), 0) + 1
    rows = []
    for r, n in zip(recs, norm):
        failed = bool(r.get("error")) and r["answer"] is None
        answer = r["answer"] or ""
        words = n.split()
        short_ok = r.get("query_type") in SHORT_ANSWER_TYPES
        empty = not failed and not words
        content = content_words(_WORD.findall(_MARKUP.sub(" ", answer).lower()))
        refusal = not failed and bool(words) and is_refusal(answer)
        format_only = not failed and bool(words) and not short_ok and not refusal and len(content) < MIN_CONTENT_WORDS
        ctx_words = _WORD.findall(" ".join(c or "" for c in (r.get("contexts") or [])).lower())
        a_ng, c_ng = _ngrams(words, COPY_NGRAM), _ngrams(ctx_words, COPY_NGRAM)
        containment = len(a_ng & c_ng) / len(a_ng) if a_ng else 0.0
        coverage = len(a_ng & c_ng) / len(c_ng) if c_ng else 0.0
        copy = containment >= COPY_CONTAINMENT and coverage >= COPY_COVERAGE
        asked = set(content_words(_WORD.findall((r.get("query") or "").lower())))
        said = [w for w in content if w not in _YES_NO]
        echo = (not failed and not short_ok and not refusal and bool(asked) and bool(said)
                and sum(w in asked for w in said) / len(said) >= ECHO_SHARE)  # fmt: skip
        k = counts.get((r["system_id"], n), 0)
        canned = bool(words) and k >= CANNED_MIN_CASES and k / per_system[r["system_id"]] >= CANNED_MIN_SHARE
        ev = [s for s, on in (("empty answer", empty), (f"{len(content)} content words", format_only),
                              (f"copies the context ({containment:.0%} of its 8-grams, {coverage:.0%} of the context)", copy),
                              (f"same answer on {k} of {per_system[r['system_id']]} cases", canned),
                              ("only the question's own words", echo), ("refusal", refusal)) if on]  # fmt: skip
        rows.append({"case_id": r["case_id"], "system_id": r["system_id"], "failed": failed, "empty": empty, "format_only": format_only,
                     "context_copy": copy, "canned": canned, "question_echo": echo, "refusal": refusal,
                     "gamed": empty or format_only or copy or canned or echo,
                     "copy_containment": containment, "context_coverage": coverage,
                     "expected_behavior": r.get("expected_behavior"), "evidence": "; ".join(ev) or None})  # fmt: skip
    flags = pl.DataFrame(rows, schema={"case_id": pl.String, "system_id": pl.String, "failed": pl.Boolean, "empty": pl.Boolean,
                                       "format_only": pl.Boolean, "context_copy": pl.Boolean, "canned": pl.Boolean,
                                       "question_echo": pl.Boolean, "refusal": pl.Boolean,
                                       "gamed": pl.Boolean, "copy_containment": pl.Float64, "context_coverage": pl.Float64,
                                       "expected_behavior": pl.String, "evidence": pl.String})  # fmt: skip
    trace = trace_flags(frame, allowed_hosts, allowed_tools).select("case_id", "system_id", "trace_cheating", "trace_evidence")
    flags = flags.join(trace, on=["case_id", "system_id"], how="left").with_columns(pl.col("trace_cheating").fill_null(False))
    return flags.with_columns((pl.col("gamed") | pl.col("trace_cheating")).alias("gamed"),
                              pl.concat_str([pl.col("evidence"), pl.col("trace_evidence")], separator="; ", ignore_nulls=True)
                              .replace("", None).alias("evidence")).drop("trace_evidence")  # fmt: skip


def gaming_summary(flags: pl.DataFrame, *, n_boot: int = 1000, seed: int = 42) -> pl.DataFrame:
    """Per system: n, failed, and for each flag the rate with its CI; ``refuses_everything``."""
    rows = []
    for system in sorted(flags["system_id"].unique().to_list()):
        part = flags.filter((pl.col("system_id") == system) & ~pl.col("failed"))
        row = {"system_id": system, "n": part.height, "failed": int(flags.filter(pl.col("system_id") == system)["failed"].sum())}
        for flag in (*FLAGS, "gamed"):
            est = bootstrap_ci(part[flag].cast(pl.Float64).to_numpy(), "mean", n_boot=n_boot, seed=seed)
            row |= {f"{flag}_rate": est.estimate, f"{flag}_ci_low": est.ci_low, f"{flag}_ci_high": est.ci_high}
        answerable = part.filter(pl.col("expected_behavior") == "answer") if part["expected_behavior"].is_not_null().any() else part
        ref = bootstrap_ci(answerable["refusal"].cast(pl.Float64).to_numpy(), "mean", n_boot=n_boot, seed=seed)
        row |= {"n_answerable": ref.n, "refusal_on_answerable": ref.estimate, "refusal_on_answerable_ci_low": ref.ci_low,
                "refusal_on_answerable_ci_high": ref.ci_high,
                "refuses_everything": bool(ref.n and ref.estimate >= REFUSE_ALL_RATE)}  # fmt: skip
        rows.append(row)
    return pl.DataFrame(rows)


def ungamed(metrics: pl.DataFrame, flags: pl.DataFrame | None, columns: list[str] | tuple[str, ...]) -> pl.DataFrame:
    """``metrics`` with each of ``columns`` set to 0 where the answer games the graders (``gamed``): what rankings and the
    Pareto frontier compare, so an answer that only echoes the question or copies the context never wins on the metric
    it games. Rows without a flag are left as they are."""
    if flags is None or flags.height == 0:
        return metrics
    gamed = flags.select("case_id", "system_id", pl.col("gamed").alias("_gamed"))
    out = metrics.join(gamed, on=["case_id", "system_id"], how="left")
    cols = list(dict.fromkeys(c for c in columns if c in out.columns))
    scored = lambda c: pl.col(c).cast(pl.Float64).is_not_null() & pl.col(c).cast(pl.Float64).is_not_nan()  # noqa: E731
    # only a measured value becomes 0: a metric that does not apply (null / NaN, e.g. no context) stays unknown
    return out.with_columns([pl.when(pl.col("_gamed").fill_null(False) & scored(c)).then(0.0).otherwise(pl.col(c).cast(pl.Float64))
                             .alias(c) for c in cols]).drop("_gamed")  # fmt: skip
