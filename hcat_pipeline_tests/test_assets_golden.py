"""Asset tests: golden_set freezing / reuse / refusal, and the whole query stage twice ⇒ identical frozen bytes."""

import dagster as dg
import numpy as np
import polars as pl
import pytest

from hcat_pipeline.assets.golden_set import golden_candidates, golden_set
from hcat_pipeline.assets.queries import generated_queries, robustness_cases, selected_queries
from hcat_pipeline.golden.cases import cases_frame, new_case
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline_tests.stubs import stub_asset

PASS = (
    "The pass statement is a null operation: when it is executed, nothing happens. "
    "It is useful as a placeholder when a statement is required syntactically but no code needs to be executed."
)
BREAK = "The break statement terminates the nearest enclosing for or while loop. The loop's else clause is not executed when break is used."


def _cases(n=3):
    return cases_frame(
        [new_case(category="happy_path", query_type="simple", query=f"What does statement {i} do?", reference_answer=f"It does {i}.",
                  expected_behavior="answer", source_chunk_ids=[f"c{i}"]) for i in range(n)]
    )  # fmt: skip


def _materialize_version(version, golden_dir, candidates_path, instance):
    return dg.materialize(
        [golden_set],
        partition_key=version,
        instance=instance,
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(golden_dir.parent / "wh"))},
        run_config={"ops": {"golden_set": {"config": {"golden_dir": str(golden_dir), "candidates_path": str(candidates_path)}}}},
        raise_on_error=False,
    )


def _meta(result, key):
    mats = [e.materialization for e in result.get_asset_materialization_events() if e.materialization.asset_key.to_user_string() == key]
    return {k: v.value for k, v in mats[0].metadata.items()}


def test_golden_set_freezes_then_verifies_and_reuses(tmp_path):
    golden_dir = tmp_path / "golden_sets"
    cand = tmp_path / "golden_candidates.parquet"
    _cases(3).write_parquet(cand)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v1"])
    r1 = _materialize_version("v1", golden_dir, cand, instance)
    assert r1.success and _meta(r1, "golden_set")["frozen_in_this_run"] is True
    frozen = (golden_dir / "v1" / "golden_set.parquet").read_bytes()
    # candidates change: the frozen version is reused as is, never rewritten
    _cases(5).write_parquet(cand)
    r2 = _materialize_version("v1", golden_dir, cand, instance)
    meta = _meta(r2, "golden_set")
    assert r2.success and meta["frozen_in_this_run"] is False and meta["candidates_match_frozen"] == "False"
    assert (golden_dir / "v1" / "golden_set.parquet").read_bytes() == frozen
    assert r2.output_for_node("golden_set").height == 3
    # a tampered frozen file fails the run with a clear error
    path = golden_dir / "v1" / "golden_set.parquet"
    pl.read_parquet(path).head(1).write_parquet(path)
    r3 = _materialize_version("v1", golden_dir, cand, instance)
    assert not r3.success
    failure = [e for e in r3.all_events if e.is_step_failure][0]
    assert "modified" in failure.event_specific_data.error.message


def test_unfrozen_version_without_candidates_fails_clearly(tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v9"])
    r = _materialize_version("v9", tmp_path / "golden_sets", tmp_path / "missing.parquet", instance)
    assert not r.success
    msg = [e for e in r.all_events if e.is_step_failure][0].event_specific_data.error.message
    assert "not frozen" in msg and "golden_candidates" in msg


def _upstream_assets(embedding_model):
    texts = {"c1": PASS, "c2": BREAK}
    vecs = embedding_model.embed(list(texts.values()))

    def chunks__table() -> pl.DataFrame:
        return pl.DataFrame({"chunk_id": list(texts), "doc_id": ["d1", "d2"], "text": list(texts.values())})

    chunks_ = stub_asset("chunks", chunks__table)

    def chunk_embeddings__table() -> pl.DataFrame:
        return pl.DataFrame({"chunk_id": list(texts), "embedding": pl.Series(vecs, dtype=pl.Array(pl.Float32, vecs.shape[1]))})

    chunk_embeddings_ = stub_asset("chunk_embeddings", chunk_embeddings__table)

    def topic_strata__table() -> pl.DataFrame:
        return pl.DataFrame({"chunk_id": list(texts), "stratum": pl.Series([0, 0], dtype=pl.Int32), "stratum_label": ["statements"] * 2})

    topic_strata_ = stub_asset("topic_strata", topic_strata__table)

    def sampled_chunks__table() -> pl.DataFrame:
        return pl.DataFrame(
            {"chunk_id": ["c1"], "doc_id": ["d1"], "text": [PASS], "stratum": pl.Series([0], dtype=pl.Int32),
             "stratum_label": ["statements"], "sample_rank": pl.Series([0], dtype=pl.Int32)}
        )  # fmt: skip

    sampled_chunks_ = stub_asset("sampled_chunks", sampled_chunks__table)

    return [chunks_, chunk_embeddings_, topic_strata_, sampled_chunks_]


@pytest.mark.slow
@pytest.mark.parametrize("types", [["simple", "yes_no"]])
def test_two_runs_give_byte_identical_golden_sets(tmp_path, local_llm, embedding_model, types):
    """Same corpus + config + seed + model ⇒ byte-identical frozen golden set (real local LLM, tiny input)."""
    upstream = _upstream_assets(embedding_model)
    config = {
        "generated_queries": {"config": {"max_chunks": 1, "query_types": types, "max_tokens": 160, "cases_per_stratum": 2,
                                         "max_requests_per_stratum": 3}},
        "robustness_cases": {"config": {"n_typo": 1, "n_colloquial": 1, "n_misleading_premise": 1, "n_distractor": 1,
                                        "n_injection": 1, "n_ood": 2, "n_counterfactual_pairs": 1}},
        "golden_candidates": {"config": {"created_at": "2025-06-01"}},
    }  # fmt: skip
    digests, counts = [], []
    for run in ("a", "b"):
        wh = tmp_path / run / "warehouse"
        res = {"io_manager": PolarsParquetIOManager(base_dir=str(wh)), "llm": local_llm, "embedding_model": embedding_model, "nli_model": NLIModel()}
        r = dg.materialize([*upstream, generated_queries, selected_queries, robustness_cases, golden_candidates], resources=res, run_config={"ops": config})
        assert r.success
        instance = dg.DagsterInstance.ephemeral()
        instance.add_dynamic_partitions("golden_set_version", ["v1"])
        golden_dir = tmp_path / run / "golden_sets"
        r2 = dg.materialize(
            [golden_set], partition_key="v1", instance=instance, resources={"io_manager": PolarsParquetIOManager(base_dir=str(wh))},
            run_config={"ops": {"golden_set": {"config": {"golden_dir": str(golden_dir), "candidates_path": str(wh / "golden_candidates.parquet")}}}},
        )  # fmt: skip
        assert r2.success
        digests.append((golden_dir / "v1" / "golden_set.parquet").read_bytes())
        frame = r2.output_for_node("golden_set")
        counts.append(frame.height)
        rej = pl.read_parquet(wh / "query_rejections.parquet")
        gen = pl.read_parquet(wh / "generated_queries.parquet")
        assert 2 <= gen.height <= 3 and rej.height + pl.read_parquet(wh / "selected_queries.parquet").height == gen.height
        # grounded by construction: every reference is a source sentence (yes / no: after its label)
        flat = " ".join((PASS + " " + BREAK).split())  # the sampled chunk and the stratum's reserve chunk
        assert all(r.split(". ", 1)[-1] in flat for r in gen["reference_answer"].drop_nulls()), gen["reference_answer"].to_list()
        assert set(gen["query_type"]) <= set(types)
        assert {"out_of_scope"} <= set(frame["category"])
        assert set(frame["created_at"]) == {"2025-06-01"}
        variants = frame.filter(pl.col("base_case_id").is_not_null())
        assert set(variants["base_case_id"]) <= set(frame["case_id"])  # every variant links to a base case in the set
    assert digests[0] == digests[1], "two identical runs froze different bytes"
    assert counts[0] == counts[1] and counts[0] >= 2
    assert np.isfinite(counts[0])


def test_golden_set_validity_check_reports_rate_with_interval(tmp_path):
    from hcat_pipeline.assets.golden_set import golden_set_validity

    golden_dir = tmp_path / "golden_sets"
    cand = tmp_path / "golden_candidates.parquet"
    cases = _cases(10).with_columns(
        pl.Series("validity_verdict", ["valid"] * 8 + ["unsure", "invalid"]), pl.Series("validity_score", [0.9] * 8 + [0.5, 0.1])
    )
    cases.write_parquet(cand)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v1"])
    r = dg.materialize(
        [golden_set, golden_set_validity], partition_key="v1", instance=instance,
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(tmp_path / "wh"))},
        run_config={"ops": {"golden_set": {"config": {"golden_dir": str(golden_dir), "candidates_path": str(cand)}}}},
    )  # fmt: skip
    (check,) = r.get_asset_check_evaluations()
    meta = {k: v.value for k, v in check.metadata.items()}
    assert check.passed is False and meta["n"] == 10 and meta["valid_rate"] == 0.8  # below the 90 % target
    assert meta["ci_low"] < 0.8 < meta["ci_high"] and meta["unchecked"] == 0
