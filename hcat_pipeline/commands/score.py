"""``hcat score INPUT OUTPUT``: score an existing set of responses outside Dagster.

INPUT / OUTPUT are JSONL (``.jsonl`` / ``.ndjson``) or Parquet (``.parquet``); one row per response
with ``query``, ``contexts`` (list of passages), ``answer`` and optionally ``reference``, ``error``
and any other columns (kept). The output has the metric and explanation columns of
``hcat_pipeline.metrics.score`` added. A requested metric that cannot run (model, package or input
column missing) stops the command with exit code 2 and the metric, cause and fix on stderr, unless
``--allow-unavailable`` (its columns are then null and the reason is printed and kept in ``score_info``).

An input with a ``task_type`` column (``long_document`` | ``multilingual_synthesis`` | ``planning`` | ``qa``) and no
``--metrics`` is scored by the concept-level chapter's harness (§14.5, ``metrics.harness``): each row by its task's checks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import get_args

from hcat_pipeline.commands import command
from hcat_pipeline.metrics.groundedness_nli import GroundingTask
from hcat_pipeline.metrics.options import ScoreOptions
from hcat_pipeline.metrics.refusal import REFUSAL_MODES

_JSONL = (".jsonl", ".ndjson", ".json")
_DEFAULTS = ScoreOptions()


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="responses: .jsonl or .parquet")
    p.add_argument("output", help="scored table: .jsonl or .parquet")
    p.add_argument("--metrics", default="", help="comma-separated metric names (default: all that apply)")
    p.add_argument(
        "--allow-unavailable", action="store_true", help="a metric that cannot run gets null columns instead of failing"
    )
    p.add_argument("--aggregation", default=_DEFAULTS.aggregation, choices=["mean", "weighted", "minimax"])
    p.add_argument("--coverage-threshold", type=float, default=_DEFAULTS.coverage_threshold)
    p.add_argument("--ot-metric", default=_DEFAULTS.ot_metric, choices=["cosine", "euclidean"])
    p.add_argument("--refusal-mode", default=_DEFAULTS.refusal_mode, choices=list(REFUSAL_MODES))
    p.add_argument("--refusal-threshold", type=float, default=_DEFAULTS.refusal_threshold)
    p.add_argument(
        "--task",
        default=_DEFAULTS.task,
        choices=list(get_args(GroundingTask)),
        help="what groundedness_nli scores (a `task` column in the input overrides it per row)",
    )
    p.add_argument("--no-sentences", action="store_true", help="omit the query/context/answer sentence lists")
    p.add_argument("--cache-dir", default="", help="embedding cache directory (default: the project cache)")
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--cross-lingual", action="store_true", help="add cross_lingual_similarity (answer vs reference, multilingual encoder)"
    )
    p.add_argument("--with", dest="extra", default="", help="comma-separated opt-in metrics to run beside --metrics or the "
                   "defaults (e.g. hierarchical_consistency)")


def read_table(path: Path):
    import polars as pl

    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return pl.read_parquet(path)
    if suffix in _JSONL:
        return pl.read_ndjson(path)
    raise ValueError(f"{path}: expected .jsonl/.ndjson or .parquet")


def write_table(frame, path: Path) -> None:
    suffix = path.suffix.lower()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    if suffix == ".parquet":
        frame.write_parquet(tmp)
    elif suffix in _JSONL:
        frame.write_ndjson(tmp)
    else:
        raise ValueError(f"{path}: expected .jsonl/.ndjson or .parquet")
    tmp.replace(path)


def _by_task(frame, dst: Path, options: dict) -> int:
    import polars as pl

    from hcat_pipeline.metrics.harness import TASK_CHECKS, evaluate_tasks

    out = evaluate_tasks(frame, **options)
    write_table(out, dst)
    print(f"scored {out.height} rows by task type -> {dst}")
    for task in sorted(set(out["task_type"].to_list())):
        part = out.filter(pl.col("task_type") == task)
        cols = [c for c in TASK_CHECKS[task] or () if c in part.columns] or ["(the default metrics)"]
        means = {c: part[c].cast(float).mean() for c in cols if c in part.columns}
        print(f"  {task} ({part.height} rows): " + json.dumps({k: None if v is None else round(float(v), 4) for k, v in means.items()}))
    return 0


@command("score", "score responses (JSONL/Parquet) with the explainable metrics, outside Dagster", _args)
def run(args: argparse.Namespace) -> int:
    from hcat_pipeline.metrics import score
    from hcat_pipeline.metrics.registry import resolve_metrics
    from hcat_pipeline.resources.embedding import EmbeddingModel

    src, dst = Path(args.input), Path(args.output)
    try:
        frame = read_table(src)
    except Exception as e:
        print(f"hcat score: cannot read {src}: {e}", file=sys.stderr)
        return 2
    model = EmbeddingModel(cache_dir=args.cache_dir) if args.cache_dir else EmbeddingModel()
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()] or None
    extra = (["cross_lingual_similarity"] if args.cross_lingual else []) + [m.strip() for m in args.extra.split(",") if m.strip()]
    if extra:
        base = metrics or [m.name for m in resolve_metrics(None, "reference" in frame.columns)]
        metrics = [*base, *extra]
    options = dict(allow_unavailable=args.allow_unavailable, embedding_model=model, aggregation=args.aggregation,
                   coverage_threshold=args.coverage_threshold, ot_metric=args.ot_metric, refusal_mode=args.refusal_mode,
                   refusal_threshold=args.refusal_threshold, task=args.task, explain_sentences=not args.no_sentences,
                   progress=not args.no_progress)  # fmt: skip
    try:
        if metrics is None and "task_type" in frame.columns:  # the chapter's harness (§14.5): each row's checks by its task type
            return _by_task(frame, dst, options)
        out, info = score(frame, metrics, return_info=True, **options)
        write_table(out, dst)
    except ValueError as e:  # bad input, unknown metric, or a requested metric that cannot run (MetricUnavailable)
        print(f"hcat score: {e}", file=sys.stderr)
        return 2
    means = {m: out[m].cast(float).mean() for m in info["metrics_computed"] if m in out.columns}
    print(f"scored {info['rows_scored']}/{info['rows']} rows ({info['rows_skipped']} skipped) in {info['seconds']:.1f}s -> {dst}")
    print("means: " + json.dumps({k: None if v is None else round(float(v), 4) for k, v in means.items()}))
    for m, why in info["metrics_unavailable"].items():
        print(f"not computed: {m}: {why}")
    return 0
