"""Frame-level scoring: every metric for every row, each unique text split once, each unique sentence
embedded once (one ``embed`` call per frame), with explanation columns next to each score.

Input columns: ``query`` (str), ``contexts`` (list[str]), ``answer`` (str), optional ``reference``
(str) and ``error`` (str). Rows whose answer is null or whose error is set get null metrics and a
``score_skipped_reason``; they are never dropped.

Metrics and the columns that explain them (per-sentence lists are in sentence order):

| metric | explanation columns |
|---|---|
| context_relevancy (§3.1) | context_relevancy_smax (S_max per query sentence) |
| groundedness_similarity (§3.2.1) | groundedness_smax (per answer sentence), least_grounded_sentence, least_grounded_smax |
| groundedness_nli (§3.2.2) | nli_sigma (σ(D) per answer sentence), nli_distance (D), least_grounded_sentence_nli |
| completeness_similarity (§3.3.1) | completeness_smax (per context sentence), uncovered_context_sentences |
| completeness_wasserstein (§3.3.2, exact OT) | completeness_wasserstein_approx (mean pairwise distance) |
| answer_relevancy (§3.4) | answer_relevancy_smax (per answer sentence) |
| semantic_similarity (ch. 14.2, needs reference) | semantic_similarity_min, semantic_similarity_per_sentence, semantic_alignment |
| cross_lingual_similarity (ch. 14.2, opt-in, multilingual encoder) | — |
| toxicity (§4) | toxicity_mean, toxicity_per_sentence |
| pii_leak (§4, count of leaked entities) | pii_leaks (type/start/end/text) |
| refusal | — |

plus ``query_sentences``, ``context_sentences``, ``answer_sentences`` (``explain_sentences=True``).
The NLI and safety metrics come from their own modules; if one is missing or fails, its columns are
null and the reason is recorded in the info dict (``metrics_unavailable``).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from hcat_pipeline.core.chunking import split_sentences
from hcat_pipeline.core.metrics import aggregation as agg
from hcat_pipeline.core.metrics.completeness import OT_METRICS, completeness
from hcat_pipeline.core.metrics.groundedness import groundedness_similarity
from hcat_pipeline.core.metrics.relevancy import max_similarity, similarity_matrix
from hcat_pipeline.core.metrics.similarity import cross_lingual_similarity, semantic_similarity

METRICS = (
    "context_relevancy",
    "groundedness_similarity",
    "groundedness_nli",
    "completeness_similarity",
    "completeness_wasserstein",
    "answer_relevancy",
    "semantic_similarity",
    "toxicity",
    "pii_leak",
    "refusal",
)
OPT_IN = ("cross_lingual_similarity",)
EMBEDDING_METRICS = {
    "context_relevancy",
    "groundedness_similarity",
    "completeness_similarity",
    "completeness_wasserstein",
    "answer_relevancy",
    "semantic_similarity",
}

_F32 = pl.List(pl.Float32)
_F64 = pl.List(pl.Float64)
_STR = pl.List(pl.String)
PII_STRUCT = pl.Struct({"type": pl.String, "start": pl.Int64, "end": pl.Int64, "text": pl.String})

# column -> (dtype, metric that produces it)
COLUMNS: dict[str, tuple[Any, str]] = {
    "context_relevancy": (pl.Float64, "context_relevancy"),
    "context_relevancy_smax": (_F32, "context_relevancy"),
    "groundedness_similarity": (pl.Float64, "groundedness_similarity"),
    "groundedness_smax": (_F32, "groundedness_similarity"),
    "least_grounded_sentence": (pl.String, "groundedness_similarity"),
    "least_grounded_smax": (pl.Float64, "groundedness_similarity"),
    "groundedness_nli": (pl.Float64, "groundedness_nli"),
    "nli_sigma": (_F64, "groundedness_nli"),
    "nli_distance": (_F64, "groundedness_nli"),
    "least_grounded_sentence_nli": (pl.String, "groundedness_nli"),
    "completeness_similarity": (pl.Float64, "completeness_similarity"),
    "completeness_smax": (_F32, "completeness_similarity"),
    "uncovered_context_sentences": (_STR, "completeness_similarity"),
    "completeness_wasserstein": (pl.Float64, "completeness_wasserstein"),
    "completeness_wasserstein_approx": (pl.Float64, "completeness_wasserstein"),
    "answer_relevancy": (pl.Float64, "answer_relevancy"),
    "answer_relevancy_smax": (_F32, "answer_relevancy"),
    "semantic_similarity": (pl.Float64, "semantic_similarity"),
    "semantic_similarity_min": (pl.Float64, "semantic_similarity"),
    "semantic_similarity_per_sentence": (_F64, "semantic_similarity"),
    "semantic_alignment": (pl.String, "semantic_similarity"),
    "cross_lingual_similarity": (pl.Float64, "cross_lingual_similarity"),
    "toxicity": (pl.Float64, "toxicity"),
    "toxicity_mean": (pl.Float64, "toxicity"),
    "toxicity_per_sentence": (_F64, "toxicity"),
    "pii_leak": (pl.Int64, "pii_leak"),
    "pii_leaks": (pl.List(PII_STRUCT), "pii_leak"),
    "refusal": (pl.Float64, "refusal"),
}


def _resolve(obj):
    """A resource instance, or a zero-argument factory called lazily (only when needed)."""
    return obj() if inspect.isfunction(obj) or isinstance(obj, type) else obj


def _iter(it, progress: bool, desc: str, total: int | None = None):
    if not progress:
        return it
    from tqdm.auto import tqdm

    return tqdm(it, desc=desc, total=total, unit="row")


def requested_metrics(frame: pl.DataFrame, metrics: list[str] | None) -> list[str]:
    if metrics is None:
        return [m for m in METRICS if m != "semantic_similarity" or "reference" in frame.columns]
    bad = [m for m in metrics if m not in METRICS and m not in OPT_IN]
    if bad:
        raise ValueError(f"unknown metrics {bad}; expected some of {list(METRICS) + list(OPT_IN)}")
    return list(dict.fromkeys(metrics))


def score_frame(
    frame: pl.DataFrame,
    metrics: list[str] | None = None,
    *,
    embed: Callable[[list[str]], np.ndarray] | None = None,
    aggregation: str | dict[str, str] = "mean",
    sentence_weights: Callable[[list[str]], np.ndarray] | None = None,
    coverage_threshold: float = 0.5,
    ot_metric: str = "cosine",
    nli: Any = None,
    pii: Any = None,
    multilingual: Any = None,
    language: str = "en",
    explain_sentences: bool = True,
    progress: bool = False,
    embed_stats: Callable[[], dict] | None = None,
) -> tuple[pl.DataFrame, dict]:
    """Score ``frame``; returns (frame + metric and explanation columns, info dict). See the module docstring.

    ``embed`` maps texts to normalised vectors (``EmbeddingModel.embed``); ``nli``, ``pii`` and
    ``multilingual`` are resources or zero-argument factories, called only if their metric is requested.
    """
    t_start = time.perf_counter()
    for col in ("query", "contexts", "answer"):
        if col not in frame.columns:
            raise ValueError(f"score: input has no {col!r} column (columns: {frame.columns})")
    if ot_metric not in OT_METRICS:
        raise ValueError(f"ot_metric {ot_metric!r}: expected one of {OT_METRICS}")
    wanted = requested_metrics(frame, metrics)
    methods = {m: agg.resolve(m, aggregation) for m in agg.ALLOWED if m in wanted}
    weight_fn = sentence_weights or agg.token_weights
    unavailable: dict[str, str] = {}
    timings: dict[str, float] = {}
    n = frame.height

    queries = frame["query"].to_list()
    answers = frame["answer"].to_list()
    contexts = frame["contexts"].to_list()
    references = frame["reference"].to_list() if "reference" in frame.columns else [None] * n
    errors = frame["error"].to_list() if "error" in frame.columns else [None] * n
    skipped = [
        (f"response failed: {e}" if e is not None else "no answer") if (e is not None or a is None) else None
        for a, e in zip(answers, errors)
    ]
    valid = [i for i in range(n) if skipped[i] is None]

    # 1. split every unique text once
    t0 = time.perf_counter()
    split_memo: dict[str, list[str]] = {}

    def split(text: str | None) -> list[str]:
        if not text:
            return []
        s = split_memo.get(text)
        if s is None:
            s = split_memo[text] = split_sentences(text, language)
        return s

    q_s, c_s, a_s, r_s = [[] for _ in range(n)], [[] for _ in range(n)], [[] for _ in range(n)], [[] for _ in range(n)]
    for i in _iter(valid, progress, "split"):
        q_s[i] = split(queries[i])
        a_s[i] = split(answers[i])
        c_s[i] = list(dict.fromkeys(s for passage in (contexts[i] or []) for s in split(passage)))
        if "semantic_similarity" in wanted:
            r_s[i] = split(references[i])
    timings["split_s"] = time.perf_counter() - t0

    cols: dict[str, list] = {c: [None] * n for c, (_, m) in COLUMNS.items() if m in wanted}

    # 2. embed every unique sentence once, in one call
    emb_wanted = [m for m in wanted if m in EMBEDDING_METRICS]
    if emb_wanted:
        if embed is None:
            raise ValueError("score: an embed function is needed for " + ", ".join(emb_wanted))
        t0 = time.perf_counter()
        uniq: dict[str, int] = {}
        for i in valid:
            for group in (q_s[i], c_s[i], a_s[i], r_s[i]):
                for s in group:
                    if s not in uniq:
                        uniq[s] = len(uniq)
        vecs = np.asarray(embed(list(uniq)), dtype=np.float32) if uniq else np.zeros((0, 1), np.float32)
        timings["embed_s"] = time.perf_counter() - t0
        timings["unique_sentences"] = len(uniq)

        # 3. per-row similarity matrices (small products of normalised vectors)
        t0 = time.perf_counter()
        want = set(emb_wanted)
        for i in _iter(valid, progress, "score", total=len(valid)):
            vq = vecs[[uniq[s] for s in q_s[i]]]
            vc = vecs[[uniq[s] for s in c_s[i]]]
            va = vecs[[uniq[s] for s in a_s[i]]]
            if "context_relevancy" in want and len(vq) and len(vc):
                smax = max_similarity(similarity_matrix(vq, vc), axis=1)
                m = methods["context_relevancy"]
                cols["context_relevancy"][i] = agg.aggregate(smax, m, weight_fn(q_s[i]) if m == "weighted" else None)
                cols["context_relevancy_smax"][i] = smax.tolist()
            if "answer_relevancy" in want and len(va) and len(vq):
                smax = max_similarity(similarity_matrix(va, vq), axis=1)
                m = methods["answer_relevancy"]
                cols["answer_relevancy"][i] = agg.aggregate(smax, m, weight_fn(a_s[i]) if m == "weighted" else None)
                cols["answer_relevancy_smax"][i] = smax.tolist()
            if len(va) and len(vc) and want & {"groundedness_similarity", "completeness_similarity", "completeness_wasserstein"}:
                sim_ac = similarity_matrix(va, vc)  # k × n, shared by groundedness and completeness
                if "groundedness_similarity" in want:
                    g = groundedness_similarity(va, vc, methods["groundedness_similarity"], sim=sim_ac)
                    cols["groundedness_similarity"][i] = g.score
                    cols["groundedness_smax"][i] = g.smax.tolist()
                    cols["least_grounded_sentence"][i] = a_s[i][g.least_grounded_index]
                    cols["least_grounded_smax"][i] = float(g.smax[g.least_grounded_index])
                if want & {"completeness_similarity", "completeness_wasserstein"}:
                    m = methods.get("completeness_similarity", "mean")
                    c = completeness(
                        vc, va, m, weight_fn(c_s[i]) if m == "weighted" else None, coverage_threshold, ot_metric,
                        sim_answer_context=sim_ac, wasserstein="completeness_wasserstein" in want,
                    )
                    if "completeness_similarity" in want:
                        cols["completeness_similarity"][i] = c.score
                        cols["completeness_smax"][i] = c.smax.tolist()
                        cols["uncovered_context_sentences"][i] = [c_s[i][j] for j in c.uncovered]
                    if "completeness_wasserstein" in want:
                        cols["completeness_wasserstein"][i] = c.wasserstein
                        cols["completeness_wasserstein_approx"][i] = c.wasserstein_approx
            if "semantic_similarity" in want and r_s[i] and len(va):
                ss = semantic_similarity(va, vecs[[uniq[s] for s in r_s[i]]])
                cols["semantic_similarity"][i] = ss["mean_similarity"]
                cols["semantic_similarity_min"][i] = ss["min_similarity"]
                cols["semantic_similarity_per_sentence"][i] = ss["sentence_scores"]
                cols["semantic_alignment"][i] = ss["alignment"]
        timings["similarity_s"] = time.perf_counter() - t0

    # 4. metrics from other modules, each guarded
    def guarded(metric: str, fn: Callable[[], None]) -> None:
        if metric not in wanted:
            return
        t0 = time.perf_counter()
        try:
            fn()
        except Exception as e:  # a missing module or a failing model must not stop the other metrics
            unavailable[metric] = f"{type(e).__name__}: {e}"
            for c, (_, m) in COLUMNS.items():
                if m == metric:
                    cols[c] = [None] * n
        timings[f"{metric}_s"] = time.perf_counter() - t0

    def run_nli():
        from hcat_pipeline.core.metrics.groundedness_nli import groundedness_nli_batch

        rows_idx = [i for i in valid if a_s[i] and c_s[i]]
        if not rows_idx:
            return
        scorer = _resolve(nli) if nli is not None else _default_nli()
        res = groundedness_nli_batch([(a_s[i], c_s[i]) for i in rows_idx], scorer)
        for i, r in zip(rows_idx, res):
            g = r.get("groundedness_nli")
            cols["groundedness_nli"][i] = None if g is None or g != g else float(g)  # NaN (no sentence) -> null
            sig = r.get("nli_sigma")
            cols["nli_sigma"][i] = None if sig is None else [float(x) for x in sig]
            d = r.get("nli_distance")
            cols["nli_distance"][i] = None if d is None else [float(x) for x in d]
            if sig is not None and len(sig):
                cols["least_grounded_sentence_nli"][i] = a_s[i][int(np.argmin(sig))]

    def run_toxicity():
        from hcat_pipeline.core.metrics.safety import toxicity_scores

        rows_idx = [i for i in valid if a_s[i]]
        if not rows_idx:
            return
        for i, r in zip(rows_idx, toxicity_scores([a_s[i] for i in rows_idx])):
            cols["toxicity"][i] = r.get("toxicity")
            cols["toxicity_mean"][i] = r.get("toxicity_mean")
            per = r.get("toxicity_per_sentence")
            cols["toxicity_per_sentence"][i] = None if per is None else [float(x) for x in per]

    def run_refusal():
        try:
            from hcat_pipeline.core.metrics.safety import refusal_scores

            fn = refusal_scores
        except ImportError:  # the refusal classifier on its own (core/metrics/refusal.py)
            from hcat_pipeline.core.metrics.refusal import refusal_scores as by_classifier

            def fn(texts):
                return by_classifier(texts, embed=embed)

        if valid:
            for i, r in zip(valid, fn([answers[i] for i in valid])):
                cols["refusal"][i] = None if r is None else float(r)

    def run_pii():
        if not valid:
            return
        detector = _resolve(pii) if pii is not None else _default_pii()
        found = detector.leaks([answers[i] for i in valid], [list(contexts[i] or []) for i in valid])
        for i, leaks in zip(valid, found):
            leaks = [
                {"type": d.get("type"), "start": d.get("start"), "end": d.get("end"), "text": d.get("text")} for d in (leaks or [])
            ]
            cols["pii_leak"][i] = len(leaks)
            cols["pii_leaks"][i] = leaks

    def run_cross_lingual():
        if multilingual is None:
            raise ValueError("cross_lingual_similarity needs option multilingual= (a MultilingualEncoder)")
        if "reference" not in frame.columns:
            raise ValueError("cross_lingual_similarity needs a 'reference' column")
        enc = _resolve(multilingual)
        rows_idx = [i for i in valid if answers[i] and references[i]]
        sims = cross_lingual_similarity([answers[i] for i in rows_idx], [references[i] for i in rows_idx], enc.encode)
        for i, s in zip(rows_idx, sims):
            cols["cross_lingual_similarity"][i] = s

    guarded("groundedness_nli", run_nli)
    guarded("toxicity", run_toxicity)
    guarded("refusal", run_refusal)
    guarded("pii_leak", run_pii)
    guarded("cross_lingual_similarity", run_cross_lingual)
    if "semantic_similarity" in wanted and "reference" not in frame.columns:
        unavailable["semantic_similarity"] = "no 'reference' column"

    new = {c: pl.Series(c, v, dtype=COLUMNS[c][0]) for c, v in cols.items()}
    if explain_sentences and emb_wanted:
        new["query_sentences"] = pl.Series("query_sentences", [q if i_ok else None for q, i_ok in zip(q_s, _mask(n, valid))], dtype=_STR)
        new["context_sentences"] = pl.Series("context_sentences", [c if ok else None for c, ok in zip(c_s, _mask(n, valid))], dtype=_STR)
        new["answer_sentences"] = pl.Series("answer_sentences", [a if ok else None for a, ok in zip(a_s, _mask(n, valid))], dtype=_STR)
    new["score_skipped_reason"] = pl.Series("score_skipped_reason", skipped, dtype=pl.String)
    out = frame.with_columns(list(new.values()))
    computed = [m for m in wanted if m not in unavailable]
    info = {
        "metrics_requested": wanted,
        "metrics_computed": computed,
        "metrics_unavailable": unavailable,
        "aggregation": methods,
        "weights": "custom" if sentence_weights else "token_count",
        "ot_metric": ot_metric,
        "coverage_threshold": coverage_threshold,
        "rows": n,
        "rows_scored": len(valid),
        "rows_skipped": n - len(valid),
        "unique_texts_split": len(split_memo),
        "timings": {k: round(v, 4) if isinstance(v, float) else v for k, v in timings.items()},
        "seconds": round(time.perf_counter() - t_start, 4),
    }
    if embed_stats is not None:
        info["embedding"] = embed_stats()
    return out, info


def _mask(n: int, valid: list[int]) -> list[bool]:
    m = [False] * n
    for i in valid:
        m[i] = True
    return m


def _default_nli():
    from hcat_pipeline.resources.nli import NLIModel

    return NLIModel()


def _default_pii():
    from hcat_pipeline.resources.pii import PIIDetector

    return PIIDetector()
