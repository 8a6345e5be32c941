"""rag_responses / retrieval_metrics as Dagster assets on a tiny golden set (stub upstream assets)."""

import json
import time

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline.assets.responses import default_systems, rag_responses, retrieval_metrics
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.partitions import golden_set_version
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM, LLMCallFailed, LLMResult
from hcat_pipeline.schemas import GOLDEN_SET, RAG_RESPONSES, conform

VERSION = "v-test"
CHUNKS = {
    "c_tuple": "Tuples are immutable sequences: once a tuple is created its items cannot be changed.",
    "c_loop": "The while statement repeats the execution of a suite as long as an expression is true.",
    "c_exc": "The raise statement raises an exception; a try statement with except clauses handles it.",
    "c_dict": "A dictionary maps hashable keys to values; looking up a missing key raises KeyError.",
}


def golden_frame() -> pl.DataFrame:
    rows = [
        dict(case_id="g1", category="happy_path", query="Can the items of a tuple be changed after it is created?",
             reference_answer="No, tuples are immutable.", expected_behavior="answer", source_chunk_ids=["c_tuple"]),
        dict(case_id="g2", category="adversarial", query="What happens when you look up a missing key in a dictionary?",
             reference_answer="A KeyError is raised.", expected_behavior="answer", source_chunk_ids=["c_dict"],
             distractor_passage="Looking up a missing dictionary key returns None silently."),
        dict(case_id="g3", category="out_of_scope", query="Who won the football world cup in 1998?",
             reference_answer=None, expected_behavior="abstain", source_chunk_ids=[]),
    ]
    full = []
    for r in rows:
        base = {c: None for c in GOLDEN_SET}
        base.update(version=VERSION, tags=[], options=[], constraints=[], seed=0, **r)
        full.append(base)
    return pl.DataFrame(full, schema=GOLDEN_SET)


@dg.asset(partitions_def=golden_set_version, name="golden_set")
def golden_set_stub() -> pl.DataFrame:
    return golden_frame()


@dg.asset(name="chunks")
def chunks_stub() -> pl.DataFrame:
    return pl.DataFrame({"chunk_id": list(CHUNKS), "doc_id": ["d"] * len(CHUNKS), "text": list(CHUNKS.values())})


@dg.asset(name="chunk_embeddings")
def chunk_embeddings_stub(embedding_model: EmbeddingModel) -> pl.DataFrame:
    v = embedding_model.embed(list(CHUNKS.values()))
    return pl.DataFrame({"chunk_id": list(CHUNKS), "embedding": pl.Series(v, dtype=pl.Array(pl.Float32, v.shape[1]))})


CALLS: list[str] = []


class ScriptedLLM(LLM):
    """A cheap LLM: records every call; Ctrl-C after ``crash_after`` calls; ``fail_every`` n-th call fails."""

    crash_after: int = -1
    fail_every: int = 0

    def generate(self, prompt, json_schema=None, temperature=0.0, seed=0, max_tokens=None, system=None):
        CALLS.append(prompt)
        if 0 <= self.crash_after < len(CALLS):
            raise KeyboardInterrupt
        if self.fail_every and len(CALLS) % self.fail_every == 0:
            raise LLMCallFailed("provider", "HTTP 503", 5)
        text = "I don't know based on the provided context." if "world cup" in prompt else "An answer."
        return LLMResult(text, None, "local", "scripted", 0.001, 50, 5, 0.0, 1)


def run(tmp_path, embedding_model, llm, config=None, select=("golden_set", "chunks", "chunk_embeddings", "rag_responses"),
        raise_on_error=True):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", [VERSION])
    cfg = {"checkpoint_dir": str(tmp_path / "ckpt"), "import_dir": str(tmp_path / "imports"), **(config or {})}
    assets = [golden_set_stub, chunks_stub, chunk_embeddings_stub, rag_responses, retrieval_metrics]
    return dg.materialize(
        assets, selection=list(select), partition_key=VERSION, instance=instance, raise_on_error=raise_on_error,
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(tmp_path / "wh")), "embedding_model": embedding_model, "llm": llm},
        run_config={"ops": {"rag_responses": {"config": cfg}}} if "rag_responses" in select else None,
    )


def load(tmp_path, name) -> pl.DataFrame:
    return pl.read_parquet(tmp_path / "wh" / name / f"{VERSION}.parquet")


@pytest.mark.slow
def test_default_campaign_five_systems_on_the_local_llm(tmp_path, embedding_model, local_llm):
    t0 = time.perf_counter()
    # the default five systems, with short answers to keep the test quick on 2 shared cores
    systems = [{**s.model_dump(exclude={"http"}), "max_tokens": 32} for s in default_systems()]
    res = run(tmp_path, embedding_model, local_llm, config={"systems": systems},
              select=("golden_set", "chunks", "chunk_embeddings", "rag_responses", "retrieval_metrics"))
    assert res.success
    out = conform(load(tmp_path, "rag_responses"), RAG_RESPONSES)
    assert out.height == 15 and out["error"].null_count() == 15, out.filter(pl.col("error").is_not_null())
    assert sorted(out["system_id"].unique()) == ["bm25", "closed_book", "dense", "hybrid", "oracle"]
    assert out["answer"].str.len_chars().min() > 0 and out["output_tokens"].max() <= 32
    by = {(r["system_id"], r["case_id"]): r for r in out.iter_rows(named=True)}
    assert by[("oracle", "g1")]["context_chunk_ids"] == ["c_tuple"] and by[("closed_book", "g1")]["contexts"] == []
    assert by[("dense", "g1")]["context_chunk_ids"][0] == "c_tuple" and len(by[("bm25", "g1")]["context_chunk_ids"]) <= 3
    g2 = by[("hybrid", "g2")]
    assert any(c.startswith("distractor:") for c in g2["context_chunk_ids"]) and "returns None silently" in " ".join(g2["contexts"])
    assert out["config_hash"].n_unique() == 5
    metrics = load(tmp_path, "retrieval_metrics")
    m = {r["system_id"]: r for r in metrics.iter_rows(named=True)}
    assert m["oracle"]["recall_at_k"] == 1.0 and m["oracle"]["mrr"] == 1.0 and m["closed_book"]["recall_at_k"] is None
    assert m["dense"]["recall_at_k"] == 1.0 and m["bm25"]["n_out_of_scope"] == 1
    assert set(metrics.columns) >= {"recall_at_k", "precision_at_k", "mrr", "abstention_rate", "false_refusal_rate"}
    mat = res.asset_materializations_for_node("rag_responses")[0].metadata
    assert mat["llm_calls_this_run"].value == 15 and mat["failed_responses"].value == 0
    print(f"5 systems × 3 cases on the local LLM: {time.perf_counter() - t0:.1f}s")


def test_crash_mid_run_then_resume_never_repeats_a_finished_call(tmp_path, embedding_model):
    CALLS.clear()
    with pytest.raises((KeyboardInterrupt, dg.DagsterExecutionInterruptedError)):
        run(tmp_path, embedding_model, ScriptedLLM(crash_after=7))
    assert len(CALLS) == 8  # 7 finished + the interrupted one
    lines = (tmp_path / "ckpt" / VERSION / "responses.jsonl").read_text().splitlines()
    finished = {(json.loads(x)["system_id"], json.loads(x)["case_id"]) for x in lines}
    assert len(finished) == 7
    CALLS.clear()
    res = run(tmp_path, embedding_model, ScriptedLLM())
    assert res.success and len(CALLS) == 15 - 7
    lines = (tmp_path / "ckpt" / VERSION / "responses.jsonl").read_text().splitlines()
    keys = [(json.loads(x)["system_id"], json.loads(x)["case_id"]) for x in lines]
    assert len(keys) == 15 and len(set(keys)) == 15  # each case × system answered exactly once across both runs
    out = load(tmp_path, "rag_responses")
    assert out.height == 15 and out["error"].null_count() == 15
    meta = res.asset_materializations_for_node("rag_responses")[0].metadata
    assert meta["responses_resumed_from_checkpoint"].value == 7 and meta["llm_calls_this_run"].value == 8
    CALLS.clear()
    assert run(tmp_path, embedding_model, ScriptedLLM()).success and CALLS == []


def test_failure_rate_bound_fails_loudly_and_under_it_failures_are_counted(tmp_path, embedding_model):
    CALLS.clear()
    res = run(tmp_path, embedding_model, ScriptedLLM(fail_every=2), config={"max_failure_rate": 0.2}, raise_on_error=False)
    assert not res.success
    failure = [e for e in res.all_events if e.is_step_failure][0]
    msg = failure.event_specific_data.error.message
    assert "max_failure_rate=0.2" in msg and "re-run to resume" in msg
    assert not (tmp_path / "wh" / "rag_responses" / f"{VERSION}.parquet").exists()  # no silently thinner table
    CALLS.clear()
    res = run(tmp_path / "b", embedding_model, ScriptedLLM(fail_every=5), config={"max_failure_rate": 0.5})
    assert res.success
    out = load(tmp_path / "b", "rag_responses")
    failed = out.filter(pl.col("error").is_not_null())
    assert out.height == 15 and failed.height == 3 and failed["error"].str.starts_with("provider:").all()
    meta = res.asset_materializations_for_node("rag_responses")[0].metadata
    assert meta["failed_responses"].value == 3


def test_imported_responses_join_the_table_and_bad_rows_are_reported(tmp_path, embedding_model):
    d = tmp_path / "imports" / VERSION
    d.mkdir(parents=True)
    (d / "team_rag.jsonl").write_text("\n".join([
        json.dumps({"case_id": "g1", "answer": "No.", "contexts": [{"text": CHUNKS["c_tuple"], "chunk_id": "c_tuple"}]}),
        json.dumps({"case_id": "nope", "answer": "?"}),
        json.dumps({"case_id": "g3", "answer": "I don't know."}),
    ]) + "\n")
    CALLS.clear()
    res = run(tmp_path, embedding_model, ScriptedLLM(),
              config={"systems": [{"system_id": "bm25", "retriever": "bm25", "icl_examples": 2}]},
              select=("golden_set", "chunks", "chunk_embeddings", "rag_responses", "retrieval_metrics"))
    assert res.success
    out = load(tmp_path, "rag_responses")
    assert sorted(out["system_id"].unique()) == ["bm25", "team_rag"] and out.filter(pl.col("system_id") == "team_rag").height == 2
    meta = res.asset_materializations_for_node("rag_responses")[0].metadata
    assert meta["import_bad_rows"].value == 1 and "| 2 |" in meta["import_errors"].value
    # ICL@2 from the other answerable cases, never the case itself: g1 and g2 each get the other one, g3 both
    prompt = {cid: [p for p in CALLS if q in p.split("Question:")[-1]][0] for cid, q in
              [("g1", "tuple be changed"), ("g2", "missing key"), ("g3", "world cup")]}
    assert prompt["g1"].count("Example ") == 1 and "A KeyError is raised." in prompt["g1"]
    assert "No, tuples are immutable." not in prompt["g1"]
    assert prompt["g2"].count("Example ") == 1 and "A KeyError is raised." not in prompt["g2"]
    assert prompt["g3"].count("Example ") == 2
    m = {r["system_id"]: r for r in load(tmp_path, "retrieval_metrics").iter_rows(named=True)}
    assert m["team_rag"]["recall_at_k"] == 1.0 and m["team_rag"]["abstention_rate"] == 1.0
