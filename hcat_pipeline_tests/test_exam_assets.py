"""The exam assets wired end to end in Dagster (a scripted LLM, the real embedding model): exam_candidates →
exam (frozen) → exam_responses → irt_model → exam_report, and the IRT analysis on simulated 3PL answers."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from hcat_pipeline.exam.irt_tables import analyse_exam
from hcat_pipeline.exam.report import accuracy_table, component_table
from hcat_pipeline.resources.llm import LLM, LLMResult
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline_tests.stubs import stub_asset

FACTS = [
    ("tuple", "A tuple is an immutable sequence type.", "What kind of sequence is a tuple?", "An immutable sequence type"),
    ("list", "A list is a mutable sequence type that can grow.", "What kind of sequence is a Python list?", "A mutable sequence type"),
    ("dict", "A dict maps hashable keys to arbitrary values.", "What does a dict map hashable keys to?", "Arbitrary values"),
    ("set", "A set is an unordered collection of distinct hashable objects.", "What does a set contain?", "Distinct hashable objects"),
    ("str", "A str holds immutable sequences of Unicode code points.", "What does a str hold?", "Unicode code points"),
    ("bytes", "A bytes object is an immutable sequence of single bytes.", "What is a bytes object a sequence of?", "Single bytes"),
]


class ScriptedLLM(LLM):
    """Replies from the FACTS table; option log-likelihoods favour the longest option (no model needed)."""

    def generate(self, prompt, json_schema=None, temperature=0.0, seed=0, max_tokens=None, system=None):
        text = prompt[-1]["content"] if isinstance(prompt, list) else prompt
        data = None
        if json_schema and "wrong_answers" in json_schema["properties"]:
            data = {"wrong_answers": ["A compiled bytecode object", "A mutable mapping type", "Hashable integer keys",
                                      "Ordered pairs of values", "A generator of numbers"]}  # fmt: skip
        elif json_schema:
            fact = next(f for f in FACTS if f[1] in text)
            data = {"question": fact[2], "answer": fact[3], "evidence": fact[1]}
        return LLMResult(text="B" if data is None else str(data), data=data, provider="local", model="scripted", latency_s=0.0,
                         input_tokens=1, output_tokens=1, cost_usd=0.0, attempts=1)  # fmt: skip

    def option_logprobs(self, prompt, options, system=None):
        return [{"logprob": -10.0 + 0.1 * len(o), "n_tokens": 3, "n_chars": 1} for o in options]


@pytest.fixture
def corpus_tables():
    chunks = pl.DataFrame({"chunk_id": [f"c-{f[0]}" for f in FACTS], "doc_id": [f"d-{f[0]}" for f in FACTS],
                           "text": [f[1] for f in FACTS], "start": [0] * len(FACTS), "end": [len(f[1]) for f in FACTS]})  # fmt: skip
    strata = pl.DataFrame({"chunk_id": chunks["chunk_id"], "stratum": pl.Series([0, 0, 1, 1, 2, 2], dtype=pl.Int32),
                           "stratum_label": ["a", "a", "b", "b", "c", "c"], "x": [0.0] * 6, "y": [0.0] * 6})  # fmt: skip
    return chunks, strata


def test_exam_group_materializes(tmp_path, embedding_model, corpus_tables):
    import dagster as dg

    from hcat_pipeline.assets import exam as exam_assets
    from hcat_pipeline.assets.exam_topics import exam_topics

    chunks, strata = corpus_tables
    emb = chunks.select("chunk_id", pl.Series("embedding", embedding_model.embed(chunks["text"].to_list())))  # Array(Float32, 384)
    (tmp_path / "campaign.yaml").write_text("name: t\nsystems:\n  - {system_id: closed_book, retriever: closed_book}\n"
                                            "  - {system_id: bm25, retriever: bm25}\n  - {system_id: oracle, retriever: oracle}\n"
                                            "  - {system_id: dense_use, retriever: dense_use}\n")  # fmt: skip

    _strata = stub_asset("topic_strata", strata)

    _chunks = stub_asset("chunks", chunks)

    _emb = stub_asset("chunk_embeddings", emb)

    run_config = {"ops": {
        "exam_candidates": {"config": {"sample_size": 6, "intra_cosine_min": 0.0, "extra_cosine_min": 0.0, "extra_cosine_margin": 1.0,
                                       "extra_jaccard_margin": 1.0, "length_ratio_max": 10.0, "length_ratio_min": 0.0,
                                       "checkpoint_dir": str(tmp_path / "gen")}},
        "exam": {"config": {"exam_dir": str(tmp_path / "exams")}},
        "exam_responses": {"config": {"campaign_file": str(tmp_path / "campaign.yaml"), "checkpoint_dir": str(tmp_path / "ck")}},
        "irt_model": {"config": {"model": "2pl", "max_rounds": 1}},
    }}  # fmt: skip
    assets = [_strata, _chunks, _emb, exam_assets.exam_candidates, exam_assets.exam, exam_assets.exam_responses,
              exam_assets.irt_model, exam_assets.exam_report, exam_topics]  # fmt: skip
    resources = {"llm": ScriptedLLM(), "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir)}
    result = dg.materialize(assets, resources=resources, run_config=run_config)
    assert result.success
    exam = result.output_for_node("exam")
    version = exam["exam_version"][0]
    assert exam.height == 6 and version.startswith("ex-") and (tmp_path / "exams" / version / "manifest.json").exists()
    responses = result.output_for_node("exam_responses")
    assert responses.height == 6 * 12 and set(responses["exam_version"]) == {version}  # 4 systems × ICL 0/1/2
    use = responses.filter(pl.col("retriever") == "dense_use")  # the second dense encoder (USE-M3) takes the exam too
    assert use.height == 18 and use["context_chunk_ids"].list.len().min() > 0
    # the scripted scorer picks the longest option: accuracy equals the longest-answer baseline
    report = result.output_for_node("exam_report")
    assert np.allclose(report["accuracy"].to_numpy(), report["longest_answer_baseline"].to_numpy())
    irt = result.output_for_node("irt_model")
    assert set(irt["kind"]) == {"item", "taker", "component"} and set(irt["exam_version"]) == {version}
    # per topic × taker (App. A.5): the answers add up to the taker's, each topic its stratum's questions
    topics = result.output_for_node("exam_topics")
    per_taker = topics.group_by("system_id").agg(pl.col("n").sum(), pl.col("correct").sum()).sort("system_id")
    assert per_taker.rows() == report.select("system_id", "n", "correct").sort("system_id").rows()
    stratum_n = exam.group_by("stratum").len()["len"].sort().to_list()
    assert topics.filter(pl.col("system_id") == topics["system_id"][0])["n"].sort().to_list() == stratum_n
    assert topics["exam_version"].unique().to_list() == [version] and topics["mean_information"].drop_nulls().min() > 0
    assert "accuracy_by_topic" in result.asset_materializations_for_node("exam_report")[0].metadata  # shown in exam_report too
    # a second run freezes the same version and resumes every answer from the checkpoint
    again = dg.materialize(assets, resources=resources, run_config=run_config)
    assert again.output_for_node("exam")["exam_version"][0] == version
    meta = again.asset_materializations_for_node("exam_responses")[0].metadata
    assert meta["llm_calls_this_run"].value == 0 and meta["resumed_from_checkpoint"].value == 72
    gen = again.asset_materializations_for_node("exam_candidates")[0].metadata
    assert gen["candidates_from_checkpoint"].value == 6  # nothing generated again


def test_exam_chunking_compares_two_chunkings_of_the_corpus(tmp_path, embedding_model, corpus_tables):
    # the scripted taker picks the longest option whatever the passages say: the two chunkings cannot differ for it, and
    # the comparison must say so (Δ = 0, no difference resolved); the oracle's sources are mapped into each chunking
    import dagster as dg

    from hcat_pipeline.assets import exam as exam_assets
    from hcat_pipeline.assets.exam_chunking import exam_chunking

    chunks, strata = corpus_tables
    corpus = pl.DataFrame({"doc_id": chunks["doc_id"], "text": chunks["text"], "title": [None] * chunks.height}, schema_overrides={"title": pl.String})
    emb = chunks.select("chunk_id", pl.Series("embedding", embedding_model.embed(chunks["text"].to_list())))
    (tmp_path / "campaign.yaml").write_text(
        "name: t\nsystems:\n  - {system_id: bm25, retriever: bm25}\n  - {system_id: oracle, retriever: oracle}\n"
        "exam_chunkings:\n  - {name: wide, max_tokens: 200, overlap_tokens: 40}\n  - {name: narrow, max_tokens: 40, overlap_tokens: 0}\n")  # fmt: skip
    assets = [stub_asset("topic_strata", strata), stub_asset("chunks", chunks), stub_asset("chunk_embeddings", emb), stub_asset("corpus", corpus),
              exam_assets.exam_candidates, exam_assets.exam, exam_chunking]  # fmt: skip
    run_config = {"ops": {
        "exam_candidates": {"config": {"sample_size": 6, "intra_cosine_min": 0.0, "extra_cosine_min": 0.0, "extra_cosine_margin": 1.0,
                                       "extra_jaccard_margin": 1.0, "length_ratio_max": 10.0, "length_ratio_min": 0.0,
                                       "checkpoint_dir": str(tmp_path / "gen")}},
        "exam": {"config": {"exam_dir": str(tmp_path / "exams")}},
        "exam_chunking": {"config": {"campaign_file": str(tmp_path / "campaign.yaml"), "checkpoint_dir": str(tmp_path / "ck"), "n_boot": 20}},
    }}  # fmt: skip
    result = dg.materialize(assets, resources={"llm": ScriptedLLM(), "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir)}, run_config=run_config)
    assert result.success
    table = result.output_for_node("exam_chunking")
    assert table.height == 4 and set(table["chunking"]) == {"wide", "narrow"} and set(table["taker"]) == {"bm25@icl0", "oracle@icl0"}
    assert table["verdict"].unique().to_list() == ["no difference: every taker gave the same answers under both chunkings"]
    assert table["delta"][0] == pytest.approx(0.0, abs=1e-6) and table["comparison"][0] == "narrow − wide"
    wide = table.filter(pl.col("chunking") == "wide")
    narrow = table.filter(pl.col("chunking") == "narrow")
    assert wide["accuracy"].to_list() == narrow["accuracy"].to_list()


def _simulate(n_takers: int, n_items: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_takers)
    a = rng.uniform(0.3, 2.5, n_items)
    b = rng.normal(size=n_items)
    c = np.full(n_items, 0.25)
    p = c + (1 - c) / (1 + np.exp(-a * (theta[:, None] - b)))
    return (rng.random(p.shape) < p).astype(float), theta, a


def test_analyse_exam_prunes_low_discrimination_and_fits_better_than_the_mean():
    y, theta, a = _simulate(30, 50)
    res = analyse_exam(y, [f"t{i}" for i in range(30)], [f"q{j}" for j in range(50)], None, "3pl", 0.1, 2, seed=0)
    assert res.summary["rmse_irt"]["mean"] < res.summary["rmse_mean_prediction_baseline"]["mean"]
    assert np.corrcoef(res.takers["theta"].to_numpy(), theta)[0, 1] > 0.8
    kept = res.items.filter(pl.col("kept"))
    assert kept.height == [r for r in res.rounds if r["accepted"]][-1]["n_items"]
    dropped = res.items.filter(~pl.col("kept"))
    assert np.isfinite(res.items.select("a", "b", "c").to_numpy()).all()  # a pruned question keeps the parameters it was dropped with
    if dropped.height:  # pruned questions are the truly less discriminating ones, on average
        idx = [int(q[1:]) for q in dropped["question_id"]]
        assert a[idx].mean() < a.mean()
    accepted = [r["score"] for r in res.rounds if r["accepted"]]
    assert accepted == sorted(accepted)
    assert set(res.items.filter(~pl.col("kept"))["dropped_after_step"].to_list()) <= {r["step"] for r in res.rounds if r["accepted"]}


def test_component_abilities_and_report_tables():
    y, _, _ = _simulate(12, 30, seed=1)
    y[:6] = np.minimum(1, y[:6] + (np.random.default_rng(2).random((6, 30)) < 0.5))  # oracle takers answer more
    comps = {"llm": ["m"] * 12, "retriever": ["oracle"] * 6 + ["closed_book"] * 6, "icl": ["icl@0", "icl@1", "icl@2"] * 4}
    res = analyse_exam(y, [f"t{i}" for i in range(12)], [f"q{j}" for j in range(30)], comps, "2pl", 0.1, 1)
    th = {r["level"]: r["theta"] for r in res.components.filter(pl.col("component") == "retriever").to_dicts()}
    assert th["oracle"] > th["closed_book"]
    resp = pl.DataFrame({
        "system_id": [f"t{i}" for i in range(12) for _ in range(30)], "question_id": [f"q{j}" for _ in range(12) for j in range(30)],
        "correct": pl.Series(y.reshape(-1).astype(int), dtype=pl.Int8), "llm": "m", "mode": "loglik",
        "retriever": [comps["retriever"][i] for i in range(12) for _ in range(30)],
        "icl_examples": [i % 3 for i in range(12) for _ in range(30)], "unparseable": False, "error": None,
    })  # fmt: skip
    base = {"fixed_position": {"accuracy": 0.3}, "longest_answer": {"accuracy": 0.4}, "chance": 0.25}
    acc = accuracy_table(resp, base)
    assert acc.height == 12 and (acc["ci_low"] <= acc["accuracy"]).all() and (acc["accuracy"] <= acc["ci_high"]).all()
    assert (acc["n"] == 30).all()
    comp = component_table(resp)
    assert comp.filter(pl.col("component") == "retriever")["n"].to_list() == [180, 180]
    assert comp.filter(pl.col("component") == "icl")["value"].to_list() == ["icl@0", "icl@1", "icl@2"]


def test_takers_are_llm_x_retriever_x_icl_with_the_two_packaged_gguf(tmp_path, embedding_model, corpus_tables):
    """Exam paper §4, Table 3: systems naming their own LLM make θ_llm a component with one level per LLM — here the
    packaged Qwen2.5-0.5B-Instruct (the resource) and Gemma 3 270M (named in the campaign file), really loaded."""
    import dagster as dg

    from hcat_pipeline.assets import exam as exam_assets

    chunks, strata = corpus_tables
    emb = chunks.select("chunk_id", pl.Series("embedding", embedding_model.embed(chunks["text"].to_list())))
    frozen = dg.materialize(
        [stub_asset("topic_strata", strata), stub_asset("chunks", chunks), exam_assets.exam_candidates,
         stub_asset("chunk_embeddings", emb), exam_assets.exam],
        resources={"llm": ScriptedLLM(), "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir)},
        run_config={"ops": {"exam_candidates": {"config": {"sample_size": 6, "intra_cosine_min": 0.0, "extra_cosine_min": 0.0,
                                                           "extra_cosine_margin": 1.0, "extra_jaccard_margin": 1.0,
                                                           "length_ratio_max": 10.0, "length_ratio_min": 0.0,
                                                           "checkpoint_dir": str(tmp_path / "gen")}},
                            "exam": {"config": {"exam_dir": str(tmp_path / "exams")}}}},
    ).output_for_node("exam")  # fmt: skip
    (tmp_path / "campaign.yaml").write_text(
        "name: two_llms\nsystems:\n  - {system_id: qwen_bm25, retriever: bm25}\n"
        "  - {system_id: gemma_bm25, retriever: bm25, llm: {provider: local, model: gemma-3-270m-q4_k_m}}\n")  # fmt: skip
    result = dg.materialize(
        [stub_asset("exam", frozen), stub_asset("chunks", chunks), stub_asset("chunk_embeddings", emb),
         exam_assets.exam_responses, exam_assets.irt_model],
        resources={"llm": LLM(), "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir)},
        run_config={"ops": {"exam_responses": {"config": {"campaign_file": str(tmp_path / "campaign.yaml"), "icl_levels": [0, 1],
                                                          "checkpoint_dir": str(tmp_path / "ck")}},
                            "irt_model": {"config": {"model": "1pl", "max_rounds": 1}}}},
    )  # fmt: skip
    responses = result.output_for_node("exam_responses")
    llms = dict(responses.select("system_id", "llm").unique().iter_rows())
    assert llms == {"qwen_bm25@icl0": "local/qwen2.5-0.5b-instruct-q4_k_m", "qwen_bm25@icl1": "local/qwen2.5-0.5b-instruct-q4_k_m",
                    "gemma_bm25@icl0": "local/gemma-3-270m-q4_k_m", "gemma_bm25@icl1": "local/gemma-3-270m-q4_k_m"}  # fmt: skip
    assert responses["error"].is_null().all() and responses.height == 4 * frozen.height
    assert set(responses["mode"]) == {"loglik"}  # both local: option log-likelihoods
    components = result.output_for_node("irt_model").filter(pl.col("kind") == "component")
    levels = set(components.filter(pl.col("component") == "llm")["id"])
    assert levels == {"local/qwen2.5-0.5b-instruct-q4_k_m", "local/gemma-3-270m-q4_k_m"}, components
