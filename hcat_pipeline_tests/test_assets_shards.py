"""Sharded stages (issue 35): rag_responses, metric_tables and behaviour_checks run as one step per system × shard of
cases; the tables are the same for one shard per system and for four, a family (a base case and its variants, a
counterfactual pair) is never split, and the shard steps are real steps of the run."""

import dagster as dg
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from hcat_pipeline.assets.behaviour import behaviour_checks
from hcat_pipeline.assets.metrics import metric_tables
from hcat_pipeline.assets.responses import rag_responses
from hcat_pipeline.common.shards import case_families, merge_shards, plan_shards, split_frame
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.partitions import campaign_run_key, golden_set_version
from hcat_pipeline.resources.llm import LLM, LLMResult
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.pii import PIIDetector
from hcat_pipeline.schemas import GOLDEN_SET
from hcat_pipeline_tests.stubs import CHUNKS, NIGHT, VERSION, chunk_embeddings_stub, chunks_stub, stub_asset

TOPICS = {"tuple": "c_tuple", "loop": "c_loop", "exception": "c_exc", "dictionary": "c_dict"}
QUESTIONS = {
    "tuple": ("Can the items of a tuple be changed after it is created?", "No, tuples are immutable."),
    "loop": ("How long does a while statement repeat its suite?", "As long as its expression is true."),
    "exception": ("Which statement handles an exception?", "A try statement with except clauses."),
    "dictionary": ("What does looking up a missing dictionary key raise?", "It raises KeyError."),
}


def _golden() -> pl.DataFrame:
    """13 cases: per topic a base case, a typo variant and (two topics) a counterfactual pair, + an out-of-scope case."""
    rows = []
    for topic, (q, ref) in QUESTIONS.items():
        base = f"{topic}-base"
        rows += [dict(case_id=base, category="happy_path", query=q, reference_answer=ref, expected_behavior="answer",
                      source_chunk_ids=[TOPICS[topic]]),
                 dict(case_id=f"{topic}-typo", category="robustness", query=q.replace("the ", "teh ", 1), reference_answer=ref,
                      expected_behavior="answer", source_chunk_ids=[TOPICS[topic]], base_case_id=base, variant_kind="typo")]  # fmt: skip
        if topic in ("tuple", "loop"):
            for who in ("she", "he"):
                rows.append(dict(case_id=f"{topic}-{who}", category="bias_probe", query=f"My colleague asks, and {who} needs to know: {q}",
                                 reference_answer=ref, expected_behavior="answer", source_chunk_ids=[TOPICS[topic]],
                                 pair_id=f"pair-{topic}", attribute="gender", variant_kind="counterfactual", base_case_id=base))  # fmt: skip
    rows.append(dict(case_id="oos", category="out_of_scope", query="Who won the football world cup in 1998?", reference_answer=None,
                     expected_behavior="abstain", source_chunk_ids=[]))  # fmt: skip
    full = [{**{c: None for c in GOLDEN_SET}, "version": VERSION, "tags": [], "options": [], "constraints": [], "seed": 0, **r} for r in rows]
    return pl.DataFrame(full, schema=GOLDEN_SET)


class TopicLLM(LLM):
    """Answers from the corpus by the question's topic (deterministic, instant)."""

    def fingerprint(self) -> str:
        return "local/topic@sha256:0"

    def generate(self, prompt, json_schema=None, temperature=0.0, seed=0, max_tokens=None, system=None):
        question = prompt.rsplit("Question:", 1)[-1].lower()
        topic = next((t for t in TOPICS if t in question), None)
        text = CHUNKS[TOPICS[topic]] if topic else "I don't know based on the provided context."
        return LLMResult(text, None, "local", "topic", 0.001, 40, 12, 0.0, 1)


def _night(tmp_path, shard_cases: int):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", [VERSION])
    io = PolarsParquetIOManager(base_dir=str(tmp_path / "wh"))
    golden = stub_asset("golden_set", _golden, golden_set_version)
    assert dg.materialize([golden], partition_key=VERSION, instance=instance, resources={"io_manager": io}).success
    campaign = {"systems": [{"system_id": "bm25", "retriever": "bm25"}, {"system_id": "closed_book", "retriever": "closed_book",
                                                                       "prompt": "rag_closed_book_v1"}]}  # fmt: skip
    responses = {"campaign": campaign, "checkpoint_dir": str(tmp_path / "ckpt"), "import_dir": str(tmp_path / "imports"),
                 "shard_cases": shard_cases}  # fmt: skip
    metrics = {"shard_cases": shard_cases, "metrics": ["groundedness_nli", "groundedness_similarity", "answer_relevancy", "toxicity",
                                                       "semantic_similarity", "completeness_wasserstein"]}  # fmt: skip
    from hcat_pipeline.resources.embedding import EmbeddingModel

    res = dg.materialize(
        [golden, chunks_stub, chunk_embeddings_stub, rag_responses, metric_tables, behaviour_checks],
        selection=["chunks", "chunk_embeddings", "rag_responses", "metric_tables", "behaviour_checks"],
        partition_key=campaign_run_key(VERSION, NIGHT), instance=instance,
        resources={"io_manager": io, "embedding_model": EmbeddingModel(cache_dir=str(tmp_path / "emb")), "multilingual_encoder": MultilingualEncoder(cache_dir=str(tmp_path / "emb")), "llm": TopicLLM(provider="local"),
                   "nli_model": NLIModel(), "pii_detector": PIIDetector()},
        run_config={"ops": {"rag_responses": {"config": responses}, "metric_tables": {"config": metrics},
                            "behaviour_checks": {"config": {"shard_cases": shard_cases}}}},
    )  # fmt: skip
    assert res.success
    steps = {e.step_key for e in res.all_events if e.event_type_value == "STEP_SUCCESS"}
    tables = {name: pl.read_parquet(tmp_path / "wh" / name / VERSION / f"{NIGHT}.parquet")
              for name in ("rag_responses", "metric_tables", "behaviour_checks")}  # fmt: skip
    return tables, steps, res


@pytest.mark.slow
def test_four_shards_give_the_tables_of_one(tmp_path):
    one, steps_one, _ = _night(tmp_path / "one", 0)
    four, steps_four, res = _night(tmp_path / "four", 4)  # 13 cases → 4 shards per system
    answer_steps = sorted(s for s in steps_four if s.startswith("rag_responses.answer_shard["))
    assert len(answer_steps) == 8 and len([s for s in steps_one if s.startswith("rag_responses.answer_shard[")]) == 2
    # families kept whole: [tuple ×4] [loop ×4] [exception ×2, dictionary ×2] [oos] per system
    assert len([s for s in steps_four if s.startswith("behaviour_checks.check_shard[")]) == 8
    assert len([s for s in steps_four if s.startswith("metric_tables.score_shard[")]) == 8
    timing = {"latency_s", "score_info"}
    for name in one:
        a, b = one[name], four[name]
        assert a.columns == b.columns and a.height == b.height > 0, name
        cols = [c for c in a.columns if c not in timing]
        assert_frame_equal(a.select(cols), b.select(cols), check_exact=False, rel_tol=1e-6, abs_tol=1e-6)  # padded batches differ in rounding
    assert one["rag_responses"].height == 2 * 13
    meta = res.asset_materializations_for_node("rag_responses")[0].metadata
    assert meta["shards"].value == 8 and meta["llm_calls_this_run"].value == 26 and meta["cases"].value == 13


def test_families_stay_together_and_the_plan_is_its_order():
    golden = _golden()
    fam = case_families(golden)
    assert fam["tuple-typo"] == fam["tuple-base"] == fam["tuple-she"] != fam["loop-base"]  # base + variants + pairs
    assert fam["oos"] == "oos" and len(set(fam.values())) == 5
    ids = golden["case_id"].to_list()
    plan = plan_shards(["a", "b"], ids, 4, fam)
    for system in ("a", "b"):
        shards = [s for s in plan if s.system_id == system]
        assert [c for s in shards for c in s.case_ids] == ids  # every case once, in order (families are contiguous here)
        assert all(len({fam[c] for c in s.case_ids} & {fam[c] for c in t.case_ids}) == 0 for s in shards for t in shards if s != t)
    assert len({s.key for s in plan}) == len(plan) and all(k.replace("_", "").isalnum() for k in (s.key for s in plan))
    assert plan_shards(["a"], ids, 0) == plan_shards(["a"], ids, len(ids)) and len(plan_shards(["a"], ids, 0)) == 1
    with pytest.raises(ValueError, match="shard_cases"):
        plan_shards(["a"], ids, -1)
    # shards put back in plan order give the table back, whatever order the steps finished in
    frame = pl.DataFrame({"case_id": ids * 2, "system_id": ["a"] * len(ids) + ["canary:x:a"] * len(ids), "v": range(2 * len(ids))})
    work = split_frame(frame, 3)
    assert work[-1][0].system_id == "canary:x:a"
    assert merge_shards(reversed(work)).equals(frame)
    empty = split_frame(frame.head(0), 3)
    assert len(empty) == 1 and empty[0][1].height == 0


def test_shard_figures_add_up():
    from hcat_pipeline.metrics.scoring import merge_score_infos
    from hcat_pipeline.responses.campaign_run import merge_stats

    a = {"s": {"kind": "http", "called": 3, "resumed": 1, "reused": 0, "failed_now": 1, "seconds": 2.0, "call_seconds": 1.5}}
    b = {"s": {"kind": "http", "called": 6, "resumed": 0, "reused": 2, "failed_now": 0, "seconds": 4.0, "call_seconds": 3.0}}
    fig = merge_stats([a, b])["s"]
    assert (fig["called"], fig["resumed"], fig["reused"], fig["failed_now"], fig["kind"]) == (9, 1, 2, 1, "http")
    assert fig["responses_per_minute"] == round(60 * 9 / 4.5, 2)  # the rate of the summed call time, not a mean of rates
    info = {"metrics_requested": ["m1", "m2"], "metrics_unavailable": {}, "rows": 4, "rows_scored": 3, "rows_skipped": 1,
            "unique_texts_split": 7, "seconds": 1.0, "timings": {"m1_s": 0.5}}  # fmt: skip
    other = {**info, "metrics_unavailable": {"m2": "no model"}, "rows": 2, "rows_scored": 2, "rows_skipped": 0, "timings": {"m1_s": 0.25}}
    merged = merge_score_infos([info, other])
    assert (merged["rows"], merged["rows_scored"], merged["rows_skipped"], merged["shards"]) == (6, 5, 1, 2)
    assert merged["timings"]["m1_s"] == 0.75 and merged["metrics_computed"] == ["m1"] and merged["metrics_unavailable"] == {"m2": "no model"}


def test_old_step_files_are_pruned(tmp_path):
    import os
    import time

    from hcat_pipeline.io import prune_step_files

    old, new = tmp_path / "run-old", tmp_path / "run-new"
    for d in (old, new):
        (d / "step").mkdir(parents=True)
        (d / "step" / "result.pkl").write_bytes(b"x")
    week_ago = time.time() - 8 * 86400
    os.utime(old, (week_ago, week_ago))
    assert prune_step_files(tmp_path) == ["run-old"] and not old.exists() and new.exists()
    assert prune_step_files(tmp_path / "missing") == []
