"""One monitored day, end to end and pure: screen → strata → score sample → metrics → signals → cell sums, the
personal data masked before anything leaves (the sample is what reports and the review page read).

The models come in as callables: ``embed(texts) -> normalised vectors``, ``score(frame) -> frame + metric columns``
(``metrics.score`` with the nights' resources), ``find_pii(texts) -> [[{type, start, end}]]`` (the PII detector).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import polars as pl

from hcat_pipeline.monitoring.sampling import SampleConfig, nearest_strata, score_sample, screen
from hcat_pipeline.monitoring.signals import SAMPLE_SIGNALS, SignalConfig, column, day_cells, sample_signals, screen_signals

MASKED_COLUMNS = ("question", "answer", "correction", "error")
# text columns that carry no words of the user or the service; every other text column of the metrics (sentences they
# split, the least grounded sentence, the leaked entity …) is dropped from the sample rather than masked
PLAIN_COLUMNS = ("request_id", "day", "timestamp", "source", "feedback", "score_skipped_reason", "toxicity_category", "toxicity_head")
QUEUE_REASONS = {"novel": "fails and is far from every topic stratum", "failing": "fails a monitored signal",
                 "negative": "the user's feedback was negative"}  # fmt: skip


@dataclass(frozen=True)
class CorpusIndex:
    """The corpus chunks' vectors and topic strata a question is placed by."""

    vectors: np.ndarray  # chunks × dim, L2-normalised
    strata: np.ndarray  # chunks
    labels: Mapping[int, str]
    golden: np.ndarray | None = None  # the golden set's questions × dim (None: no frozen version to compare with)


class DayResult(NamedTuple):
    sample: pl.DataFrame  # the scored sample: masked text, metric columns, signals, weight
    cells: pl.DataFrame  # signals.cell_sums of screen and sample
    screened: int
    masked_entities: int


def mask(texts: Sequence[str | None], find_pii: Callable[[list], list[list[dict]]]) -> tuple[list[str | None], list[int]]:
    """Each personal-data span replaced by ``[TYPE]``; (masked texts, spans masked per text)."""
    found = find_pii([t or "" for t in texts])
    out, counts = [], []
    for text, spans in zip(texts, found):
        if text is None:
            out.append(None)
            counts.append(0)
            continue
        for s in sorted(spans, key=lambda s: -s["start"]):
            text = text[: s["start"]] + f"[{s['type']}]" + text[s["end"] :]
        out.append(text)
        counts.append(len(spans))
    return out, counts


def mask_frame(frame: pl.DataFrame, find_pii: Callable) -> pl.DataFrame:
    """The text columns and every passage masked (the metric columns were computed on the raw text before), and
    ``masked_spans``: the spans masked in the row."""
    total = [0] * frame.height
    cols = {}
    for c in MASKED_COLUMNS:
        cols[c], n = mask(frame[c].to_list(), find_pii)
        total = [a + b for a, b in zip(total, n)]
    contexts = frame["contexts"].to_list()
    masked, n = mask([p for ctx in contexts for p in (ctx or [])], find_pii)
    it = iter(zip(masked, n))
    cols["contexts"] = []
    for i, ctx in enumerate(contexts):
        pairs = [next(it) for _ in (ctx or [])]
        cols["contexts"].append([p for p, _ in pairs])
        total[i] += sum(k for _, k in pairs)
    drop = [c for c, t in frame.schema.items() if c not in (*MASKED_COLUMNS, "contexts", *PLAIN_COLUMNS) and _holds_text(t)]
    return frame.drop(drop).with_columns([pl.Series(c, v, dtype=frame.schema[c]) for c, v in cols.items()]).with_columns(
        pl.Series("masked_spans", total, dtype=pl.Int64))


def _holds_text(dtype: pl.DataType) -> bool:
    return dtype == pl.String or isinstance(dtype, pl.List | pl.Array | pl.Struct | pl.Object) or dtype == pl.Categorical


def monitor_day(rows: pl.DataFrame, day: str, index: CorpusIndex, *, embed: Callable, score: Callable, find_pii: Callable,
                sample_config: SampleConfig = SampleConfig(), signal_config: SignalConfig = SignalConfig(),
                pass_probability: Mapping[str, Callable] | None = None) -> DayResult:  # fmt: skip
    screened = screen(rows, sample_config, day)
    vectors = embed(screened["question"].to_list()) if screened.height else np.zeros((0, index.vectors.shape[1]))
    stratum, similarity = nearest_strata(np.asarray(vectors), index.vectors, index.strata, sample_config.neighbours)
    screened = screened.with_columns(pl.Series("stratum", stratum, dtype=pl.Int32), pl.Series("max_similarity", similarity, dtype=pl.Float64))
    if index.golden is not None and len(index.golden) and screened.height:
        screened = screened.with_columns(pl.Series("golden_similarity", (np.asarray(vectors) @ index.golden.T).max(axis=1), dtype=pl.Float64))
    screened = screen_signals(screened, signal_config, sample_config)
    sample = score_sample(screened, sample_config, day)
    answered = sample.with_columns(pl.col("answer").fill_null(""), pl.col("question").alias("query"))
    scored = score(answered.select("query", "contexts", "answer"))
    metric_cols = [c for c in scored.columns if c not in ("query", "contexts", "answer")]
    sample = sample_signals(pl.concat([sample, scored.select(metric_cols)], how="horizontal"), signal_config, pass_probability)
    cells = day_cells(screened, sample, day)
    masked = mask_frame(sample, find_pii)
    labels = pl.Series("stratum_label", [index.labels.get(int(g), str(g)) for g in masked["stratum"].to_list()], dtype=pl.String)
    return DayResult(masked.with_columns(labels), cells, screened.height, int(masked["masked_spans"].sum()))


def review_queue(sample: pl.DataFrame, size: int, far_below: float) -> pl.DataFrame:
    """The day's rows a person should read (golden-eval §7.3 novel failure modes): failing and far from every
    stratum first, then the most signals failed, the least similar to the corpus; negative feedback after."""
    signals = [column(s) for s in SAMPLE_SIGNALS if column(s) in sample.columns]
    failed = pl.sum_horizontal([pl.col(s).fill_null(0) for s in signals]) if signals else pl.lit(0)
    ranked = sample.with_columns(failed.alias("signals_failed")).with_columns(
        pl.when((pl.col("signals_failed") > 0) & (pl.col("max_similarity") < far_below)).then(pl.lit("novel"))
        .when(pl.col("signals_failed") > 0).then(pl.lit("failing"))
        .when(pl.col("feedback") == "negative").then(pl.lit("negative")).otherwise(None).alias("queue_reason"))  # fmt: skip
    order = pl.col("queue_reason").replace_strict({"novel": 0, "failing": 1, "negative": 2}, return_dtype=pl.Int8)
    return (ranked.filter(pl.col("queue_reason").is_not_null()).with_columns(order.alias("_o"))
            .sort("_o", "signals_failed", "max_similarity", "request_id", descending=[False, True, False, False]).drop("_o").head(size))  # fmt: skip
