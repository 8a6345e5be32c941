"""Lineage stage 6: golden_candidates (unpartitioned) → golden_set (one frozen version per partition).

``golden_set`` for partition ``<version>``: if ``<golden_dir>/<version>/manifest.json`` exists (frozen
by an earlier run, by ``hcat freeze`` / ``hcat import-cases``, or dropped in by hand) the version
is loaded and its SHA-256 verified — never regenerated or rewritten; otherwise the current
``golden_candidates`` are frozen under that version (golden-eval §2.5). ``golden_candidates`` is
read from the warehouse only in that second case, so a hand-dropped version needs no generation.

(No `from __future__ import annotations` in asset modules: Dagster reads the Config annotations.)
"""

from pathlib import Path

import dagster as dg
import polars as pl
from pydantic import Field

from hcat_pipeline.assets._metadata import frame_metadata, preview
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.golden.case_checks import check_rows, reason_counts, validity_rate
from hcat_pipeline.golden.cases import (
    GoldenSetError,
    cases_frame,
    freeze_version,
    load_version,
    resolve_created_at,
    table_sha256,
)
from hcat_pipeline.golden.composition import CompositionTarget, composition, describe, suite_record
from hcat_pipeline.golden.coverage import golden_coverage
from hcat_pipeline.golden.validity import MIN_VALID_RATE
from hcat_pipeline.partitions import golden_set_version
from hcat_pipeline.paths import GOLDEN_SETS_DIR, WAREHOUSE_DIR
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.nli import NLIModel

# the size and share targets *are* the core's CompositionTarget (campaign file: generation.target_size, happy_path_share)
GoldenCandidatesConfig = config_from(
    CompositionTarget, "GoldenCandidatesConfig",
    keep_unsure=(bool, Field(default=False, description="keep cases the validity checks are unsure about (marked); default: only valid cases")),
    created_at=(str, Field(default="", description="ISO date recorded on the cases; empty: SOURCE_DATE_EPOCH, else 1970-01-01 (never the "
                                                  "wall clock, so identical inputs give byte-identical frozen sets)")),
)  # fmt: skip


class GoldenSetConfig(dg.Config):
    golden_dir: str = Field(default=str(GOLDEN_SETS_DIR), description="where frozen versions live (<dir>/<version>/)")
    candidates_path: str = Field(
        default=str(WAREHOUSE_DIR / "golden_candidates.parquet"),
        description="the stored golden_candidates table, read only when the version is not frozen yet",
    )
    strata_path: str = Field(
        default=str(WAREHOUSE_DIR / "topic_strata.parquet"),
        description="the corpus' topic strata, for the coverage table (skipped, and said so, when not materialized)",
    )


def coverage_metadata(strata_path: str, golden: pl.DataFrame, responses: pl.DataFrame | None = None) -> dict:
    """Coverage of the corpus' topic strata by the golden set (and by each system's answered cases)."""
    path = Path(strata_path)
    if not path.exists():
        return {"coverage": f"no topic_strata at {path}: materialize topic_strata for the coverage table"}
    table = golden_coverage(pl.read_parquet(path), golden, responses)
    covered = int((table["golden_cases"] > 0).sum())
    return {"coverage": preview(table, 100), "strata_covered": f"{covered}/{table.height}"}


def _checked(cases: pl.DataFrame, chunks: pl.DataFrame, embedding_model: EmbeddingModel, keep_unsure: bool = False, parse=None,
             ) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """(kept cases with their validity columns, rejected cases, rejections per reason code with zeros): invalid cases
    and, unless ``keep_unsure``, unsure ones are rejected; a variant of a rejected base goes with it (``base_rejected``)."""
    checked = check_rows(cases.to_dicts(), dict(zip(chunks["chunk_id"], chunks["text"], strict=True)), embedding_model.embed, parse=parse)
    bad = {r["case_id"] for r in checked if r["validity_verdict"] == "invalid" or (r["validity_verdict"] == "unsure" and not keep_unsure)}
    for r in checked:
        if r["base_case_id"] in bad and r["case_id"] not in bad:
            r["validity_reasons"] = [*r["validity_reasons"], f"base_rejected: base case {r['base_case_id']} is invalid"]
            bad.add(r["case_id"])
    reasons = reason_counts(checked) | {"base_rejected": sum(any(x.startswith("base_rejected") for x in r["validity_reasons"]) for r in checked)}
    frame = cases_frame(checked)
    return frame.filter(~pl.col("case_id").is_in(sorted(bad))), frame.filter(pl.col("case_id").is_in(sorted(bad))), reasons


def _counts(frame: pl.DataFrame, col: str) -> dict:
    vc = frame[col].fill_null("none").value_counts()
    return {str(k): int(v) for k, v in sorted(zip(vc[col].to_list(), vc["count"].to_list(), strict=True))}


@dg.asset(
    group_name="golden_set",
    description="Every candidate test case (golden-eval §2.4): selected generated queries (happy path) + robustness and "
    "risk cases, in the GOLDEN_SET contract, not yet versioned. Each case carries its validity checks (golden.validity: "
    "score, verdict, reasons); invalid cases, and variants of an invalid base, are rejected with their reason.",
)
def golden_candidates(
    context: dg.AssetExecutionContext,
    config: GoldenCandidatesConfig,
    embedding_model: EmbeddingModel,
    nli_model: NLIModel,
    selected_queries: pl.DataFrame,
    robustness_cases: pl.DataFrame,
    chunks: pl.DataFrame,
) -> pl.DataFrame:
    from hcat_pipeline.golden.cases import case_from_query, corpus_hash

    chash = corpus_hash(chunks["doc_id"].unique().to_list())
    bases = cases_frame([case_from_query(r, chash) for r in selected_queries.to_dicts()])
    out = pl.concat([bases, robustness_cases.select(bases.columns)], how="vertical")
    out = cases_frame(out.to_dicts()).with_columns(pl.lit(resolve_created_at(config.created_at or None)).alias("created_at"))
    out, rejected, reasons = _checked(out, chunks, embedding_model, config.keep_unsure, nli_model.docs)
    orphans = out.filter(pl.col("base_case_id").is_not_null() & ~pl.col("base_case_id").is_in(out["case_id"].to_list()))
    if orphans.height:
        context.log.warning(f"{orphans.height} variant(s) whose base case is not among the candidates")
    if rejected.height:
        context.log.warning(f"{rejected.height} candidate case(s) rejected by the validity checks; see the metadata")
    coverage = _generation_coverage(context)
    comp = composition(out["category"].to_list(), to_core(CompositionTarget, config), coverage.get("generation"))
    planned = coverage.get("suites") or {}
    if planned.get("planned"):  # the suites after the validity checks, against what their gates need
        comp["suites"] = suite_record(out, planned.get("sized_for"), planned["planned"], [])
        comp["why_not"] += [f"suite {k} {v} (the gates reading it need that many to decide)" for k, v in comp["suites"]["short"].items()]
        comp["meets_target"] = not comp["why_not"]
    if not comp["meets_target"]:
        context.log.warning(f"golden-set composition: {describe(comp)}")
    context.add_output_metadata(
        {
            "composition": dg.MetadataValue.json(comp),
            **frame_metadata(out.select("case_id", "category", "query_type", "variant_kind", "query", "validity_verdict")),
            "cases": out.height,
            "rejected": rejected.height,
            "rejected_by_reason": dg.MetadataValue.json(reasons),
            "rejections": preview(rejected.select("case_id", "category", "variant_kind", "query", "validity_reasons"), 60, 160),
            "by_verdict": dg.MetadataValue.json(_counts(out, "validity_verdict")),
            "by_category": dg.MetadataValue.json(_counts(out, "category")),
            "by_query_type": dg.MetadataValue.json(_counts(out, "query_type")),
            "by_variant_kind": dg.MetadataValue.json(_counts(out, "variant_kind")),
            "candidates_sha256": table_sha256(out),
        }
    )
    return out


def _generation_coverage(context: dg.AssetExecutionContext) -> dict:
    """The latest generation's cases per stratum against its budget and why a stratum is short (``generated_queries``'
    metadata) and the candidates' composition against the campaign's target (``golden_candidates``'), kept in the
    manifest so the report can name a short stratum and a short set; {} when there is none on record."""
    out = {}
    for asset, keys in (("generated_queries", ("cases_per_stratum", "kept_per_stratum", "short_strata", "stratum_labels", "llm_seconds")),
                        ("robustness_cases", ("suites",)), ("golden_candidates", ("composition",))):
        records = context.instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset)), limit=1)
        meta = records.records[0].asset_materialization.metadata if records.records else {}
        found = {k: meta[k].value for k in keys if k in meta}
        if asset == "generated_queries" and found:
            out["generation"] = found
        elif found:
            out |= found
    return out


@dg.asset(
    partitions_def=golden_set_version,
    group_name="golden_set",
    deps=[golden_candidates],
    description="A frozen golden-set version (immutable Parquet + manifest with SHA-256 under data/golden_sets/<version>/): "
    "verified and reused when it exists, else the current golden_candidates frozen under this version.",
)
def golden_set(context: dg.AssetExecutionContext, config: GoldenSetConfig) -> pl.DataFrame:
    version = context.partition_key
    golden_dir = Path(config.golden_dir)
    frozen_now = False
    candidates_match = None
    try:
        if (golden_dir / version / "manifest.json").exists():
            frame, manifest = load_version(version, golden_dir)
            cpath = Path(config.candidates_path)
            if cpath.exists() and manifest.get("source") == "generated":
                candidates_match = table_sha256(pl.read_parquet(cpath).sort("case_id")) == manifest.get("inputs_sha256")
                if not candidates_match:
                    context.log.warning(
                        f"golden_candidates changed since version {version!r} was frozen; the frozen version is used as is. "
                        "Freeze the new candidates under a new version to evaluate them."
                    )
        else:
            cpath = Path(config.candidates_path)
            if not cpath.exists():
                raise dg.Failure(
                    f"golden-set version {version!r} is not frozen in {golden_dir} and there are no golden_candidates at {cpath}: "
                    "materialize golden_candidates first, or drop a frozen version (manifest.json + golden_set.parquet) there"
                )
            candidates = pl.read_parquet(cpath)
            manifest = freeze_version(candidates, version, golden_dir, provenance={"run_id": context.run.run_id, **_generation_coverage(context)})
            frame, manifest = load_version(version, golden_dir)
            frozen_now = True
    except GoldenSetError as e:
        raise dg.Failure(str(e)) from e
    context.add_output_metadata(
        {
            **frame_metadata(frame.select("case_id", "category", "query_type", "variant_kind", "query")),
            "version": version,
            "frozen_in_this_run": frozen_now,
            "source": manifest.get("source", "unknown"),
            "content_sha256": manifest["content_sha256"],
            "inputs_sha256": manifest.get("inputs_sha256", ""),
            "manifest_path": str(golden_dir / version / "manifest.json"),
            "candidates_match_frozen": "n/a" if candidates_match is None else str(candidates_match),
            "by_category": dg.MetadataValue.json(_counts(frame, "category")),
            "by_query_type": dg.MetadataValue.json(_counts(frame, "query_type")),
            "by_variant_kind": dg.MetadataValue.json(_counts(frame, "variant_kind")),
            **coverage_metadata(config.strata_path, frame),
        }
    )
    return frame


@dg.asset_check(
    asset=golden_set,
    partitions_def=golden_set_version,
    description="Share of the version's cases that passed the validity checks (golden.validity), with its Wilson 95 % "
    f"interval and n; warns below {MIN_VALID_RATE:.0%} or when cases were never checked (versions frozen before the checks).",
)
def golden_set_validity(golden_set: pl.DataFrame) -> dg.AssetCheckResult:
    verdicts = golden_set["validity_verdict"].to_list()
    checked = [v for v in verdicts if v is not None]
    rate = validity_rate(checked)
    ok = bool(checked) and len(checked) == len(verdicts) and rate["rate"] >= MIN_VALID_RATE
    return dg.AssetCheckResult(
        passed=ok,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "valid_rate": float(rate["rate"]) if checked else float("nan"), "ci_low": float(rate["ci_low"]) if checked else float("nan"),
            "ci_high": float(rate["ci_high"]) if checked else float("nan"), "n": rate["n"], "unchecked": len(verdicts) - len(checked),
            "by_verdict": dg.MetadataValue.json(rate["by_verdict"]),
        },
    )  # fmt: skip
