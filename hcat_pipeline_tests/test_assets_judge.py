"""llm_judge_scores / judge_validation as Dagster assets, with a deterministic stand-in LLM resource: the
time-budget skip says why, every score row carries the run columns, the judge config hash and the
validated flag looked up from judge_validation for the same hash."""

import dagster as dg
import polars as pl

from hcat_pipeline.assets.judge import judge_validation, llm_judge_scores
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.judge.data import DEFAULT_VALIDATION_DIR
from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version
from hcat_pipeline.resources.llm import LLM, LLMResult
from hcat_pipeline_tests.conftest import require_validation_dir
from hcat_pipeline_tests.stubs import stub_asset

VERSION, NIGHT = "gs-test", "2025-03-01"
CTX = "Savings accounts pay 2% interest per year. Fees are waived for students."


class RuleJudge(LLM):
    """Scores 5 when the judged text mentions 2%, else 1 (and prefers the response shown first in pairs)."""

    def fingerprint(self) -> str:
        return "local/qwen-rule@sha256:0"

    def generate(self, prompt, json_schema=None, temperature=0.0, seed=0, max_tokens=None, system=None):
        text = prompt[-1]["content"] if isinstance(prompt, list) else prompt
        if "winner" in json_schema["properties"]:
            return LLMResult("", {"justification": "-", "winner": "A"}, "local", "rule", 0.001, 10, 5, 0.0, 1)
        answer = text.split("RESPONSE:")[-1].split("TEXT:")[-1]
        return LLMResult("", {"justification": "-", "score": 5 if "2%" in answer else 1, "confidence": "high"},
                         "local", "rule", 0.001, 10, 5, 0.0, 1)  # fmt: skip


def golden_set_stub_table() -> pl.DataFrame:
    return pl.DataFrame({"case_id": ["c1", "c2"], "reference_answer": ["2% per year.", None]})


golden_set_stub = stub_asset("golden_set", golden_set_stub_table, golden_set_version)


def rag_responses_stub_table() -> pl.DataFrame:
    return pl.DataFrame({
        "case_id": ["c1", "c1", "c2"], "system_id": ["bm25", "closed_book", "bm25"], "query": ["What interest?"] * 3,
        "answer": ["They pay 2% a year.", "About 5 percent.", None], "contexts": [[CTX], [], [CTX]],
        "context_chunk_ids": [["k1"], [], ["k1"]], "llm": ["local/qwen2.5-0.5b-instruct-q4_k_m", "local/qwen2.5-0.5b-instruct-q4_k_m", None],
        "error": [None, None, "provider: HTTP 503"], "golden_set_version": [VERSION] * 3, "night": [NIGHT] * 3,
        "campaign_sha256": ["abc"] * 3,
    })  # fmt: skip


rag_responses_stub = stub_asset("rag_responses", rag_responses_stub_table, campaign_run)
# what the metrics say: (c1, bm25) undecided grounding (the tier), (c1, closed_book) no context, (c2, bm25) failed
metric_tables_stub = stub_asset("metric_tables", lambda: pl.DataFrame({
    "case_id": ["c1", "c1", "c2"], "system_id": ["bm25", "closed_book", "bm25"], "groundedness_nli": [0.55, None, None],
    "answer_relevancy": [0.8, 0.9, None], "error": [None, None, "provider: HTTP 503"]}), campaign_run)  # fmt: skip


def _run(tmp_path, config: dict, llm=None, extra=()):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", [VERSION])
    io = PolarsParquetIOManager(base_dir=str(tmp_path / "wh"))
    assert dg.materialize([golden_set_stub], partition_key=VERSION, instance=instance, resources={"io_manager": io}).success
    cfg = {"validation_table": str(tmp_path / "wh" / "judge_validation.parquet"), **config}
    return dg.materialize(
        [golden_set_stub, rag_responses_stub, metric_tables_stub, llm_judge_scores, *extra],
        selection=["rag_responses", "metric_tables", "llm_judge_scores"],
        partition_key=campaign_run_key(VERSION, NIGHT), instance=instance,
        resources={"io_manager": io, "llm": llm or RuleJudge(provider="local")},
        run_config={"ops": {"llm_judge_scores": {"config": cfg}}},
    )  # fmt: skip


def _meta(result, key):
    mats = [m for m in result.asset_materializations_for_node("llm_judge_scores")]
    return mats[-1].metadata[key].value


def test_auto_mode_skips_when_the_local_estimate_exceeds_the_budget_and_says_why(tmp_path):
    res = _run(tmp_path, {"time_budget_s": 10.0, "local_seconds_per_call": 6.0})
    assert res.success
    out = res.output_for_node("llm_judge_scores")
    assert out.height == 0
    skipped = _meta(res, "skipped")
    assert "budget" in skipped and "enabled=on" in skipped
    assert _meta(res, "estimated_calls") == 2 * 5  # two answered responses × five dimensions
    assert "not one answer fits the budget" in skipped


def test_auto_mode_over_budget_judges_the_tier_the_metrics_flag(tmp_path):
    res = _run(tmp_path, {"time_budget_s": 35.0, "local_seconds_per_call": 6.0})  # one answer × 5 dimensions fits
    out = res.output_for_node("llm_judge_scores")
    assert set(zip(out["case_id"], out["system_id"])) == {("c1", "bm25")} and out.height == 5  # the undecided one only
    tier = _meta(res, "tier")
    assert "tiered" in tier and "the 1 of 1 answers the metrics flag" in tier


def test_scores_per_dimension_with_hash_run_columns_and_not_validated_without_validation(tmp_path):
    res = _run(tmp_path, {"enabled": "on", "dimensions": ["groundedness", "correctness", "safety"]})
    out = res.output_for_node("llm_judge_scores")
    assert out.height == 3 * 3  # every case × system × dimension keeps a row
    assert out["judge_config_hash"].n_unique() == 1 and out["judge_config_hash"][0] == _meta(res, "judge_config_hash")
    assert set(out["golden_set_version"]) == {VERSION} and set(out["night"]) == {NIGHT}
    by = {(r["case_id"], r["system_id"], r["dimension"]): r for r in out.iter_rows(named=True)}
    assert by[("c1", "bm25", "groundedness")]["score"] == 5 and by[("c1", "bm25", "groundedness")]["passed"] is True
    assert by[("c1", "closed_book", "groundedness")]["skipped_reason"] == "no retrieved context"
    assert by[("c1", "closed_book", "correctness")]["score"] == 1
    assert by[("c2", "bm25", "safety")]["skipped_reason"] == "no answer"
    assert by[("c1", "bm25", "safety")]["same_family"] is True  # the system's LLM and the judge are both qwen
    assert not out["validated"].any() and out["validation_reason"][0].startswith("no judge_validation")
    assert "never use them for gates" in _meta(res, "not_validated_warning")


def test_judge_validation_table_figures_and_its_flag_reach_the_score_rows(tmp_path):
    require_validation_dir(DEFAULT_VALIDATION_DIR)
    instance = dg.DagsterInstance.ephemeral()
    io = PolarsParquetIOManager(base_dir=str(tmp_path / "wh"))
    dims = ["groundedness", "safety"]
    never_labelled = stub_asset("human_labels", pl.DataFrame())  # not materialized: the optional input is None
    val = dg.materialize([never_labelled, judge_validation], selection=["judge_validation"], instance=instance, resources={"io_manager": io, "llm": RuleJudge(provider="local")},
                         run_config={"ops": {"judge_validation": {"config": {"n_per_label": 4, "n_pairs": 3, "min_items": 4,
                                                                              "dimensions": dims}}}})  # fmt: skip
    table = val.output_for_node("judge_validation")
    assert set(table["dimension"]) == set(dims) and table["judge_config_hash"].n_unique() == 1
    assert table.filter(pl.col("n") > 0).height == 2  # both dimensions have held-out human labels
    meta = val.asset_materializations_for_node("judge_validation")[-1].metadata
    for fig in ("judge_agreement", "judge_length_bias", "judge_self_preference", "judge_position_bias"):
        assert meta[fig].value.startswith(f"![{fig}](data:image/png;base64,")
    assert meta["position_bias"].value["flip_rate"] == 1.0  # the rule judge always prefers the first response
    # the same judge configuration on a campaign run: its rows carry that validation's flag and κ
    res = _run(tmp_path, {"enabled": "on", "dimensions": dims})
    out = res.output_for_node("llm_judge_scores")
    flags = dict(zip(table["dimension"], table["validated"], strict=True))
    for r in out.iter_rows(named=True):
        assert r["validated"] is flags[r["dimension"]]
        assert r["validation_reason"] is None or not r["validation_reason"].startswith("no judge_validation")
    # another configuration (another pass threshold) is a different judge: not validated
    other = _run(tmp_path, {"enabled": "on", "dimensions": dims, "pass_threshold": 3}).output_for_node("llm_judge_scores")
    assert not other["validated"].any()
