"""judge_ensemble as a Dagster asset with stand-in judges (known answers): a member that contradicts the judge makes every
item a disagreement, named with both scores and sent to the review queue's flags; the ensemble decides a dimension only
where judge_validation chose it for exactly these members; judge_validation with an ensemble writes its choice per
dimension beside κ."""

import dagster as dg
import polars as pl

from hcat_pipeline.assets.judge import judge_ensemble, judge_validation, llm_judge_scores
from hcat_pipeline.calibration.campaign import judge_review_flags
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.judge.data import DEFAULT_VALIDATION_DIR
from hcat_pipeline.judge.ensemble import ENSEMBLE, with_ensemble
from hcat_pipeline.judge.scoring import JudgeConfig, judge_config_hash
from hcat_pipeline.partitions import campaign_run, campaign_run_key, golden_set_version
from hcat_pipeline.resources.llm import LLM, LLMResult
from hcat_pipeline_tests.conftest import require_validation_dir
from hcat_pipeline_tests.stubs import stub_asset

VERSION, NIGHT = "gs-test", "2025-03-01"
CTX = "Savings accounts pay 2% interest per year. Fees are waived for students."
DIMS = ["groundedness", "correctness"]


class RuleJudge(LLM):
    """Scores 5 when the judged answer mentions 2%, else 1; ``contrary`` the other way round. ``for_model`` gives the
    contrary judge for the model named "contrary" (what an ensemble member's LLMSpec names)."""

    contrary: bool = False

    def fingerprint(self) -> str:
        return "local/contrary@sha256:1" if self.contrary else "local/rule@sha256:0"

    def for_model(self, spec):
        return RuleJudge(provider="local", contrary=True) if spec and spec.get("model") == "contrary" else self

    def generate(self, prompt, json_schema=None, temperature=0.0, seed=0, max_tokens=None, system=None):
        text = prompt[-1]["content"] if isinstance(prompt, list) else prompt
        if "winner" in json_schema["properties"]:
            return LLMResult("", {"justification": "-", "winner": "A"}, "local", "rule", 0.001, 10, 5, 0.0, 1)
        says = "2%" in text.split("RESPONSE:")[-1].split("TEXT:")[-1]
        return LLMResult("", {"justification": "-", "score": 5 if says != self.contrary else 1, "confidence": "high"},
                         "local", "rule", 0.001, 10, 5, 0.0, 1)  # fmt: skip


golden_set_stub = stub_asset("golden_set", lambda: pl.DataFrame({"case_id": ["c1"], "reference_answer": ["2% per year."]}), golden_set_version)
rag_responses_stub = stub_asset("rag_responses", lambda: pl.DataFrame({
    "case_id": ["c1", "c1"], "system_id": ["bm25", "closed_book"], "query": ["What interest?"] * 2,
    "answer": ["They pay 2% a year.", "About 5 percent."], "contexts": [[CTX], [CTX]], "context_chunk_ids": [["k1"], ["k1"]],
    "llm": ["local/qwen2.5-0.5b-instruct-q4_k_m"] * 2, "error": [None, None], "golden_set_version": [VERSION] * 2,
    "night": [NIGHT] * 2, "campaign_sha256": ["abc"] * 2}), campaign_run)  # fmt: skip
metric_tables_stub = stub_asset("metric_tables", lambda: pl.DataFrame({
    "case_id": ["c1", "c1"], "system_id": ["bm25", "closed_book"], "groundedness_nli": [0.55, 0.5], "answer_relevancy": [0.8, 0.9],
    "error": [None, None]}), campaign_run)  # fmt: skip


def _night(tmp_path, ensemble: list[dict]):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", [VERSION])
    io = PolarsParquetIOManager(base_dir=str(tmp_path / "wh"))
    assert dg.materialize([golden_set_stub], partition_key=VERSION, instance=instance, resources={"io_manager": io}).success
    cfg = {"validation_table": str(tmp_path / "wh" / "judge_validation.parquet"), "enabled": "on", "dimensions": DIMS, "ensemble": ensemble}
    res = dg.materialize([golden_set_stub, rag_responses_stub, metric_tables_stub, llm_judge_scores, judge_ensemble],
                         selection=["rag_responses", "metric_tables", "llm_judge_scores", "judge_ensemble"],
                         partition_key=campaign_run_key(VERSION, NIGHT), instance=instance,
                         resources={"io_manager": io, "llm": RuleJudge(provider="local")},
                         run_config={"ops": {"llm_judge_scores": {"config": cfg}, "judge_ensemble": {"config": cfg}}})  # fmt: skip
    return res, res.output_for_node("llm_judge_scores"), res.output_for_node("judge_ensemble")


def test_a_contrary_member_disagrees_on_every_item_and_the_queue_hears_of_it(tmp_path):
    _, primary, ens = _night(tmp_path, [{"model": "contrary"}])
    combined = ens.filter(pl.col("judge_model") == ENSEMBLE)
    assert combined.height == 2 * len(DIMS) and not combined["judges_agree"].any() and combined["score"].to_list() == [3.0] * 4
    assert set(ens["judge_model"]) == {"local/rule@sha256:0", "local/contrary@sha256:1", ENSEMBLE}
    assert not combined["used"].any() and combined["validation_reason"][0].startswith("judge_validation has not judged this ensemble")
    assert with_ensemble(primary, ens).equals(primary)  # not chosen: the gates read the judge's own rows
    calibrated = pl.DataFrame({"case_id": ["c1", "c1"], "system_id": ["bm25", "closed_book"], "dimension": ["groundedness"] * 2,
                               "machine_verdict": ["pass", "pass"]})  # fmt: skip
    flags = judge_review_flags(primary, calibrated, ens)
    assert flags.filter(pl.col("system_id") == "bm25")["judge_reason"][0].startswith("judges disagree: local/contrary@sha256:1 1/5")


def test_no_ensemble_configured_is_an_empty_table_that_says_so(tmp_path):
    res, primary, ens = _night(tmp_path, [])
    assert ens.height == 0 and primary.height == 2 * len(DIMS)
    assert res.asset_materializations_for_node("judge_ensemble")[-1].metadata["skipped"].value == "no ensemble configured (judge.ensemble)"


def test_the_ensemble_decides_where_judge_validation_chose_it_for_these_members(tmp_path):
    cfg_hash = judge_config_hash(JudgeConfig(dimensions=tuple(DIMS)), "local/rule@sha256:0")
    members = "local/contrary@sha256:1,local/rule@sha256:0"
    (tmp_path / "wh").mkdir()
    pl.DataFrame({"judge_config_hash": [cfg_hash] * 2, "dimension": DIMS, "validated": [True, True], "kappa": [0.5, 0.5],
                  "reason": [None, None], "members": [members, "someone,else"], "ensemble_used": [True, True],
                  "ensemble_validated": [True, True], "ensemble_kappa": [0.7, 0.7], "ensemble_reason": ["beats each judge", "x"]}
                 ).write_parquet(tmp_path / "wh" / "judge_validation.parquet")  # fmt: skip
    _, primary, ens = _night(tmp_path, [{"model": "contrary"}])
    combined = ens.filter(pl.col("judge_model") == ENSEMBLE)
    assert dict(combined.select("dimension", "used").unique().iter_rows()) == {"groundedness": True, "correctness": False}
    read = with_ensemble(primary, ens)
    grounded = read.filter(pl.col("dimension") == "groundedness")
    assert set(grounded["judge_model"]) == {ENSEMBLE} and grounded["validated"].all() and not grounded["passed"].any()  # 3/5
    assert read.filter(pl.col("dimension") == "correctness")["judge_model"].to_list() != [ENSEMBLE] * 2


def test_judge_validation_with_an_ensemble_writes_its_choice_per_dimension(tmp_path):
    require_validation_dir(DEFAULT_VALIDATION_DIR)
    never_labelled = stub_asset("human_labels", pl.DataFrame())
    val = dg.materialize([never_labelled, judge_validation], selection=["judge_validation"], instance=dg.DagsterInstance.ephemeral(),
                         resources={"io_manager": PolarsParquetIOManager(base_dir=str(tmp_path / "wh")), "llm": RuleJudge(provider="local")},
                         run_config={"ops": {"judge_validation": {"config": {"n_per_label": 6, "n_pairs": 0, "min_items": 4,
                                                                              "dimensions": ["groundedness"], "ensemble": [{"model": "contrary"}]}}}})  # fmt: skip
    row = val.output_for_node("judge_validation").row(0, named=True)
    assert row["members"] == "local/contrary@sha256:1,local/rule@sha256:0" and row["ensemble_reason"]
    # the two judges are exact opposites: their mean is 3/5 on every item, one verdict only — it beats neither
    assert row["ensemble_used"] is False and "does not beat each judge" in row["ensemble_reason"]
