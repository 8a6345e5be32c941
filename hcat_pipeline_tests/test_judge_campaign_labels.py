"""The campaign's own human labels validate the judge (judge/campaign_labels.py, the judge_validation asset): each
consensus label tied to the one stored answer it was given to, or skipped with its reason; the §14.4 rubric items get
validated — or refused — by them exactly like the public sets validate groundedness and safety."""

from datetime import UTC, datetime

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline.assets.judge import judge_validation
from hcat_pipeline.calibration.agreement import consensus_labels
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.judge.campaign_labels import NOT_COMPARABLE, campaign_label_items, held_out, stored_answers, stored_claims
from hcat_pipeline.judge.scoring import JudgeConfig
from hcat_pipeline.judge.validation import validate_judge
from hcat_pipeline.resources.llm import LLM, LLMResult
from hcat_pipeline_tests.stubs import stub_asset

CLAIMS = ["true claim (source): The fee is 5 euros.", "false claim: The fee is 50 euros."]


def _label(case, system, dim, label, scale="binary", rater="ana", lo=0):
    return {"case_id": case, "system_id": system, "dimension": dim, "label": label, "scale": scale, "label_index": label - lo,
            "n_levels": 2 if scale == "binary" else 5, "rater": rater, "labelled_at": datetime(2026, 11, 1, tzinfo=UTC)}  # fmt: skip


def _response(case, system, answer, night="2026-11-20", version="gs-a"):
    return {"case_id": case, "system_id": system, "golden_set_version": version, "night": night, "query": f"Q {case}?",
            "contexts": ["The fee is 5 euros."], "answer": answer, "llm": "local/qwen2.5-0.5b"}  # fmt: skip


def _frames():
    labels = pl.DataFrame([
        _label("c1", "s", "groundedness", 1), _label("c1", "s", "toxicity", 1),  # toxic ⇒ not safe
        _label("c2", "s", "global_coherence", 4, "ordinal:1-5", lo=1), _label("c3", "s", "global_coherence", 2, "ordinal:1-5", lo=1),
        _label("c4", "s", "global_coherence", 1, "ordinal:0-4"),  # not the judge's scale
        _label("c5", "s", "groundedness", 1, rater="ana"), _label("c5", "s", "groundedness", 0, rater="bo"),  # a tie
        _label("c6", "s", "groundedness", 1), _label("c7", "s", "groundedness", 0), _label("c8", "s", "groundedness", 1),
        _label("c9", "s", "contradiction_detection", 1), _label("c1", "s", "completeness", 1),  # not asked of this judge
    ])  # fmt: skip
    responses = pl.DataFrame([
        _response("c1", "s", "Fee: 5 euros."), _response("c2", "s", "Coherent."), _response("c3", "s", "Not."),
        _response("c4", "s", "x"), _response("c5", "s", "y"),
        _response("c6", "s", "First answer.", "2026-11-20"), _response("c6", "s", "Another answer.", "2026-11-21"),  # changed
        _response("c7", "s", "Same.", "2026-11-20"), _response("c7", "s", "Same.", "2026-11-21", "gs-b"),  # unchanged
        _response("c9", "s", "The fee is 5 euros, not 50."),
    ])  # fmt: skip
    golden = pl.DataFrame({"case_id": ["c9", "c1"], "constraints": [CLAIMS, []]})
    return labels, responses, golden


def test_each_label_is_tied_to_the_one_answer_it_was_given_to_or_skipped_with_its_reason():
    labels, responses, golden = _frames()
    dims = ("groundedness", "safety", "global_coherence", "contradiction_detection")
    items, skipped = campaign_label_items(consensus_labels(labels), responses, golden, dims, pass_threshold=4)
    by = {(i.dimension, i.query): i for i in items}
    assert len(by) == len(items) == 6
    assert by[("groundedness", "Q c1?")].label == 1 and by[("safety", "Q c1?")].label == 0  # toxicity labels, inverted
    assert by[("global_coherence", "Q c2?")].label == 1 and by[("global_coherence", "Q c3?")].label == 0  # 4 ≥ 4, 2 < 4
    c7 = by[("groundedness", "Q c7?")]
    assert c7.answer == "Same." and c7.source == "campaign/gs-b/2026-11-21" and c7.label == 0  # the same answer both nights
    assert by[("contradiction_detection", "Q c9?")].claims == tuple(CLAIMS)  # the comparison case's claims from the golden set
    assert all(i.split in ("dev", "test") and i.system == "local/qwen2.5-0.5b" for i in items)
    reasons = {(r["case_id"], r["dimension"]): r["reason"] for r in skipped.iter_rows(named=True)}
    assert reasons[("c4", "global_coherence")].startswith("scale ordinal:0-4")
    assert reasons[("c5", "groundedness")] == "raters tie"
    assert reasons[("c6", "groundedness")].startswith("the answer or its passages changed between nights 2026-11-20..2026-11-21")
    assert reasons[("c8", "groundedness")] == "no stored answer of this system to this case"
    assert len(reasons) == 4 and ("c1", "completeness") not in reasons  # a dimension the judge is not asked is not its concern
    # deterministic: the same labels and answers give the same items (ids, splits)
    again, _ = campaign_label_items(consensus_labels(labels), responses, golden, dims)
    assert [(i.item_id, i.split) for i in again] == [(i.item_id, i.split) for i in items]
    # the label store's completeness means something else than the judge's: skipped with that reason, never used
    _, other = campaign_label_items(consensus_labels(labels), responses, golden, ("completeness",))
    assert other.rows() == [("c1", "s", "completeness", NOT_COMPARABLE["completeness"])]


def test_stored_answers_are_read_in_one_order_whatever_the_files_and_older_files_lack_llm(tmp_path):
    wh = tmp_path / "wh"
    for version, night, llm in (("gs-b", "2026-11-20", True), ("gs-a", "2026-11-20", False), ("gs-a", "2026-11-19", True)):
        (wh / "rag_responses" / version).mkdir(parents=True, exist_ok=True)
        frame = pl.DataFrame([_response("c1", "s", "Same.", night, version), _response("c2", "t", "Other.", night, version)])
        (frame if llm else frame.drop("llm")).write_parquet(wh / "rag_responses" / version / f"{night}.parquet")
    keys = pl.DataFrame({"case_id": ["c1"], "system_id": ["s"]})
    got = stored_answers(wh, keys)
    assert got.select("golden_set_version", "night").rows() == [("gs-a", "2026-11-19"), ("gs-a", "2026-11-20"), ("gs-b", "2026-11-20")]
    assert got["llm"].to_list() == ["local/qwen2.5-0.5b", None, "local/qwen2.5-0.5b"]  # the older file: null, not an error
    items, skipped = campaign_label_items(consensus_labels(pl.DataFrame([_label("c1", "s", "groundedness", 1)])), got, None, ("groundedness",))
    assert skipped.height == 0 and items[0].source == "campaign/gs-b/2026-11-20"  # the last in that order, every time
    assert stored_answers(tmp_path / "empty", keys).height == 0 and stored_claims(tmp_path / "empty") is None
    (wh / "rag_responses" / "gs-a" / "2026-11-21.parquet").write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="2026-11-21.parquet of rag_responses is unreadable"):
        stored_answers(wh, keys)


def test_held_out_keeps_the_test_split_up_to_the_cap_by_item_id_and_counts_the_rest():
    items = _coherence_items(40)
    kept, counts = held_out(items, ("global_coherence", "groundedness"), 10)
    test = sorted(i.item_id for i in items if i.split == "test")
    assert [i.item_id for i in kept] == test[:10] and counts["per_dimension"] == {"global_coherence": 10}
    assert counts["over_cap"] == {"global_coherence": len(test) - 10} and counts["dev_held_back"] == 40 - len(test) > 0


class CoherenceJudge:
    """Scores global coherence 5 when the response contains "coherent" (or, inverted, when it does not)."""

    def __init__(self, inverted=False):
        self.inverted = inverted

    def fingerprint(self):
        return "local/rubric@sha256:0"

    def generate(self, messages, json_schema=None, **kw):
        good = ("coherent" in messages[-1]["content"].split("RESPONSE:")[-1]) != self.inverted
        return LLMResult("", {"justification": "stub", "score": 5 if good else 1, "confidence": "high"}, "local", "r", 0.0, 1, 1, 0.0, 1)


def _coherence_items(n=30):
    labels = pl.DataFrame([_label(f"k{i}", "s", "global_coherence", i % 2) for i in range(n)])
    responses = pl.DataFrame([_response(f"k{i}", "s", "A coherent answer." if i % 2 else "It is 5. It is 9.") for i in range(n)])
    items, skipped = campaign_label_items(consensus_labels(labels), responses, None, ("global_coherence",))
    assert skipped.height == 0 and len(items) == n
    return items


def test_a_rubric_item_is_validated_by_campaign_labels_only_when_the_judge_agrees_with_them():
    items, cfg = _coherence_items(), JudgeConfig(dimensions=("global_coherence",))
    good = validate_judge(CoherenceJudge(), items, config=cfg, min_items=20)["validation"].row(0, named=True)
    assert good["validated"] and good["kappa"] == pytest.approx(1.0) and good["label_source"] == "campaign" and good["n"] == 30
    bad = validate_judge(CoherenceJudge(inverted=True), items, config=cfg, min_items=20)["validation"].row(0, named=True)
    assert not bad["validated"] and bad["kappa"] < 0  # a judge that disagrees with the reviewers decides nothing
    few = validate_judge(CoherenceJudge(), items[:10], config=cfg, min_items=20)["validation"].row(0, named=True)
    assert not few["validated"]  # too few labels: not validated however well it agrees


class RubricJudge(LLM):
    def fingerprint(self) -> str:
        return "local/rubric@sha256:0"

    def generate(self, prompt, json_schema=None, temperature=0.0, seed=0, max_tokens=None, system=None):
        if "winner" in json_schema["properties"]:
            return LLMResult("", {"justification": "-", "winner": "A"}, "local", "r", 0.001, 10, 5, 0.0, 1)
        good = "coherent" in prompt[-1]["content"].split("RESPONSE:")[-1]
        return LLMResult("", {"justification": "-", "score": 5 if good else 1, "confidence": "high"}, "local", "r", 0.001, 10, 5, 0.0, 1)


def test_judge_validation_reads_the_campaign_labels_and_the_stored_answers(tmp_path):
    n = 60  # test split ≈ 4 in 5
    labels = pl.DataFrame([_label(f"k{i}", "s", "global_coherence", i % 2) for i in range(n)] + [_label("gone", "s", "global_coherence", 1)])
    wh = tmp_path / "wh"
    (wh / "rag_responses" / "gs-a").mkdir(parents=True)
    pl.DataFrame([_response(f"k{i}", "s", "A coherent answer." if i % 2 else "It is 5. It is 9.") for i in range(n)]).write_parquet(
        wh / "rag_responses" / "gs-a" / "2026-11-20.parquet")  # fmt: skip
    io = PolarsParquetIOManager(base_dir=str(wh))
    res = dg.materialize(
        [stub_asset("human_labels", lambda: labels), judge_validation], resources={"io_manager": io, "llm": RubricJudge(provider="local")},
        run_config={"ops": {"judge_validation": {"config": {"n_per_label": 2, "n_pairs": 0, "dimensions": ["global_coherence"],
                                                            "warehouse_dir": str(wh), "validation_dir": str(tmp_path / "none")}}}},
    )  # fmt: skip
    row = res.output_for_node("judge_validation").row(0, named=True)
    meta = res.asset_materializations_for_node("judge_validation")[-1].metadata
    assert row["dimension"] == "global_coherence" and row["validated"] and row["label_source"] == "campaign"
    assert row["n"] == meta["campaign_items"].value["global_coherence"] == n - meta["campaign_items_dev_held_back"].value
    assert meta["campaign_labels_unused_reasons"].value == {"no stored answer of this system to this case": 1}
    assert meta["campaign_items_over_cap"].value == {}  # no public set needed for a §14.4-only judge (validation_dir absent)


def test_the_calibrators_leave_the_judges_rubric_labels_to_judge_validation():
    from hcat_pipeline.assets.calibration import CalibratorsConfig, fit_all

    labels = pl.DataFrame([_label(f"k{i}", "s", d, i % 2) for i in range(12) for d in ("groundedness", "global_coherence")])
    runs = pl.DataFrame(schema={"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "metric": pl.String,
                                "raw_score": pl.Float64, "night": pl.String})  # fmt: skip
    refs = pl.DataFrame(schema={"label_source": pl.String, "dimension": pl.String, "metric": pl.String, "item_id": pl.String,
                                "score": pl.Float64, "label": pl.Int64, "split": pl.String})  # fmt: skip
    dims = [r.dimension for r in fit_all(CalibratorsConfig(), labels, refs, runs)]
    assert dims == ["groundedness"]  # global_coherence: no metric scores it, nothing to calibrate
