"""Frame-level scoring: the requested metrics for every row, resolved through the registry.

Input columns: ``query`` (str), ``contexts`` (list[str]), ``answer`` (str), optional ``reference``
(str) and ``error`` (str). Rows whose answer is null or whose error is set get null metrics and a
``score_skipped_reason``; they are never dropped. The metrics, their explanation columns, needs and
aggregations are declared in their family modules (``registry.registered()`` lists them).

Order of work, so that a call fails early and each piece of work is done once:

1. resolve the names (unknown → ``ValueError`` listing the known ones; ``None`` → every default
   metric that applies: those needing a reference only when there is a ``reference`` column);
2. acquire what each metric needs (``batch.Resources``). A metric that cannot run raises
   ``MetricUnavailable`` naming the metric, the cause and the fix — unless ``allow_unavailable``,
   in which case its columns are null and ``info["metrics_unavailable"]`` holds {metric: reason};
3. embed every needed sentence of the frame in one call;
4. run each metric. An exception inside a metric is a bug and propagates (only an explicit
   ``MetricUnavailable`` is treated as unavailability).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import polars as pl

from hcat_pipeline.metrics.batch import LOAD_ERRORS, Batch, Resources
from hcat_pipeline.metrics.options import ScoreOptions
from hcat_pipeline.metrics.registry import FIXES, RESOURCES, STR_LIST, Metric, MetricUnavailable, registered, resolve_metrics
from hcat_pipeline.metrics.score_cache import ScoreCache, frame_key
from hcat_pipeline.resources.devices import Device

SENTENCE_COLUMNS = {"query_sentences": "query", "context_sentences": "context", "answer_sentences": "answer"}


def score_frame(
    frame: pl.DataFrame,
    metrics: list[str] | None = None,
    *,
    allow_unavailable: bool = False,
    sentence_weights: Callable[[list[str]], np.ndarray] | None = None,
    progress: bool = False,
    embed_stats: Callable[[], dict] | None = None,
    device: Device = "cpu",
    cache: ScoreCache | None = None,
    **options: Any,
) -> tuple[pl.DataFrame, dict]:
    """Score ``frame``; returns (frame + metric and explanation columns, info dict). See the module docstring.

    ``options``: the resources ``embed`` (texts → normalised vectors), ``embed_layers`` (texts → layer
    features, ``EmbeddingModel.layer_features``), ``nli``, ``pii``,
    ``multilingual``, ``llm`` (instances, or zero-argument factories called only when a requested
    metric needs them) and the ``ScoreOptions`` fields (``aggregation`` may be a {metric: method} dict).
    ``device``: where the metrics' own fine-tuned encoders run (the toxicity head's; pass the embedding model's).
    ``cache``: a ``ScoreCache`` whose ``models`` name the resources given; the same inputs scored before are read from it
    (``info["cache"]`` says ``hit`` or ``miss``), a result with an unavailable metric is never stored.
    """
    t_start = time.perf_counter()
    given = {k: options.pop(k) for k in RESOURCES if k in options}
    opts = ScoreOptions.from_kwargs(**options)
    batch = Batch(frame, opts.language, sentence_weights, progress)
    wanted = resolve_metrics(metrics, batch.has_reference)
    if unknown := set(opts.aggregation_by_metric) - set(registered()):
        raise ValueError(f"aggregation for unknown metrics {sorted(unknown)}; known metrics: {sorted(registered())}")
    key = None
    if cache is not None and sentence_weights is None:
        key = frame_key(frame, [m.name for m in wanted], opts, {**cache.models, "given": sorted(given), "device": device})
        if (entry := cache.get(key)) is not None:
            columns, info = entry
            return frame.with_columns(columns), {**info, "cache": "hit", "seconds": round(time.perf_counter() - t_start, 4)}
    resources = Resources(batch.has_reference, device, **given)
    unavailable: dict[str, MetricUnavailable] = {}
    timings: dict[str, float | int] = {}

    def give_up(errors: list[MetricUnavailable]) -> None:
        if errors and not allow_unavailable:
            raise MetricUnavailable.several(errors)
        unavailable.update({e.metric: e for e in errors})

    # 2. needs, before any work
    t0 = time.perf_counter()
    errors = []
    for m in wanted:
        try:
            for need in sorted(m.needs_for(opts)):
                resources.acquire(need, m.name)
        except MetricUnavailable as e:
            errors.append(e)
    timings["resources_s"] = time.perf_counter() - t0
    give_up(errors)

    # 3. one embedding call for every sentence the embedding metrics read
    embedders = [m for m in wanted if m.embeds and m.name not in unavailable]
    if embedders:
        t0 = time.perf_counter()
        try:
            timings["unique_sentences"] = batch.embed_all(resources.get("embed"), sorted({k for m in embedders for k in m.embeds}))
        except LOAD_ERRORS as e:
            cause = f"the embedding model could not be loaded ({type(e).__name__}: {e})"
            give_up([MetricUnavailable(m.name, cause, FIXES["embed"]) for m in embedders])
        timings["embed_s"] = time.perf_counter() - t0

    # 4. the metrics
    columns: dict[str, list] = {}
    for m in wanted:
        if m.name in unavailable:
            continue
        t0 = time.perf_counter()
        try:
            columns.update(_checked(m, m.compute(batch, resources, opts), batch.n))
        except MetricUnavailable as e:
            give_up([e])
        timings[f"{m.name}_s"] = time.perf_counter() - t0

    new = []
    for m in wanted:
        for col, dtype in m.output_columns.items():
            new.append(pl.Series(col, columns.get(col, [None] * batch.n), dtype=dtype))
    if opts.explain_sentences and any(m.embeds for m in wanted):
        scored = set(batch.valid)
        for col, kind in SENTENCE_COLUMNS.items():
            new.append(pl.Series(col, [batch.sentences(kind, i) if i in scored else None for i in range(batch.n)], dtype=STR_LIST))
    new.append(pl.Series("score_skipped_reason", batch.skipped, dtype=pl.String))
    info = {
        "metrics_requested": [m.name for m in wanted],
        "metrics_computed": [m.name for m in wanted if m.name not in unavailable],
        "metrics_unavailable": {name: e.reason for name, e in unavailable.items()},
        "aggregation": {m.name: opts.method(m) for m in wanted if m.aggregations},
        "weights": "custom" if sentence_weights else "token_count",
        "ot_metric": opts.ot_metric,
        "coverage_threshold": opts.coverage_threshold,
        "refusal_mode": opts.refusal_mode,
        "refusal_threshold": opts.refusal_threshold,
        "rows": batch.n,
        "rows_scored": len(batch.valid),
        "rows_skipped": batch.n - len(batch.valid),
        "unique_texts_split": batch.texts_split,
        "timings": {k: round(v, 4) if isinstance(v, float) else v for k, v in timings.items()},
        "seconds": round(time.perf_counter() - t_start, 4),
    }
    if embed_stats is not None and embedders:
        info["embedding"] = embed_stats()
    if key is not None:
        info["cache"] = "miss"
        if not unavailable:
            cache.put(key, pl.DataFrame(new), info)
    return frame.with_columns(new), info


def _checked(m: Metric, result: dict[str, list], n: int) -> dict[str, list]:
    """A metric must return exactly its declared columns, one value per row (else it is a bug in the metric)."""
    if set(result) != set(m.output_columns):
        raise RuntimeError(f"metric {m.name} returned columns {sorted(result)}, declared {sorted(m.output_columns)}")
    if bad := [c for c, v in result.items() if len(v) != n]:
        raise RuntimeError(f"metric {m.name}: columns {bad} do not have one value per row ({n})")
    return result


_SUMMED_INFO = ("rows", "rows_scored", "rows_skipped", "unique_texts_split", "seconds")


def merge_score_infos(infos: Sequence[dict]) -> dict:
    """The ``score_frame`` info of several shards of one table as one: row counts, unique texts, seconds and the
    per-metric timings summed (step seconds), unavailable metrics united; the options are the shards' own."""
    out = {**infos[0], "timings": dict(infos[0].get("timings", {})), "metrics_unavailable": dict(infos[0]["metrics_unavailable"])}
    for info in infos[1:]:
        for k in _SUMMED_INFO:
            out[k] = round((out.get(k) or 0) + (info.get(k) or 0), 4)
        for k, v in info.get("timings", {}).items():
            out["timings"][k] = round((out["timings"].get(k) or 0) + v, 4)
        out["metrics_unavailable"].update(info["metrics_unavailable"])
    out["metrics_computed"] = [m for m in out["metrics_requested"] if m not in out["metrics_unavailable"]]
    out["shards"] = len(infos)
    out["shards_reused"] = sum(info.get("cache") == "hit" for info in infos)  # read from the score cache, not recomputed
    out.pop("cache", None)
    return out
