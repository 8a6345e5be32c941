"""rag_responses / retrieval_metrics as Dagster assets on a tiny golden set (stub upstream assets),
one campaign run = golden-set version × night."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline.campaign_spec import load_campaign
from hcat_pipeline.paths import PROJECT_ROOT
from hcat_pipeline.resources.llm import LLM, LLMCallFailed, LLMResult
from hcat_pipeline.schemas import RAG_RESPONSES, conform
from hcat_pipeline_tests.stubs import (  # noqa: F401
    CHUNKS,
    NIGHT,
    RUN,
    VERSION,
    chunk_embeddings_stub,
    chunks_stub,
    golden_frame,
    golden_set_stub,
    load,
    run,
)

CALLS: list[str] = []


class ScriptedLLM(LLM):
    """A cheap LLM: records every call; Ctrl-C after ``crash_after`` calls; ``fail_every`` n-th call fails."""

    crash_after: int = -1
    fail_every: int = 0

    def fingerprint(self) -> str:
        return "local/scripted@sha256:0"

    def generate(self, prompt, json_schema=None, temperature=0.0, seed=0, max_tokens=None, system=None):
        CALLS.append(prompt)
        if 0 <= self.crash_after < len(CALLS):
            raise KeyboardInterrupt
        if self.fail_every and len(CALLS) % self.fail_every == 0:
            raise LLMCallFailed("provider", "HTTP 503", 5)
        text = "I don't know based on the provided context." if "world cup" in prompt else "An answer."
        return LLMResult(text, None, "local", "scripted", 0.001, 50, 5, 0.0, 1)


# every reference system (the full profile: the default campaign runs three of them)
# (the five of the exam paper's first comparison; the second dense encoder, dense_use, has its own test below)
DEFAULT_SYSTEMS = [s.model_dump(mode="json") for s in load_campaign(PROJECT_ROOT / "campaigns" / "full.yaml").systems
                   if s.retriever != "dense_use"]


@pytest.mark.slow
def test_default_campaign_five_systems_on_the_local_llm(tmp_path, embedding_model, local_llm):
    t0 = time.perf_counter()
    # the default five systems, with short answers to keep the test quick on 2 shared cores
    systems = [{**s, "max_tokens": 32} for s in DEFAULT_SYSTEMS]
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


def test_the_second_dense_encoder_retrieves_with_its_own_index(tmp_path, embedding_model):
    # dense_use (exam paper §4.2: two dense encoders): the packaged USE-M3 embeds the chunks and the query; its index
    # fingerprint names that model, so its config hash differs from MiniLM's dense with everything else equal
    CALLS.clear()
    systems = [{"system_id": "dense", "retriever": "dense"}, {"system_id": "dense_use", "retriever": "dense_use"}]
    res = run(tmp_path, embedding_model, ScriptedLLM(), config={"systems": systems},
              select=("golden_set", "chunks", "chunk_embeddings", "rag_responses", "retrieval_metrics"))
    assert res.success
    out = load(tmp_path, "rag_responses")
    by = {(r["system_id"], r["case_id"]): r for r in out.iter_rows(named=True)}
    assert by[("dense_use", "g1")]["context_chunk_ids"][0] == "c_tuple" and by[("dense_use", "g1")]["retriever"] == "dense_use"
    assert by[("dense_use", "g1")]["config_hash"] != by[("dense", "g1")]["config_hash"]
    metrics = {r["system_id"]: r for r in load(tmp_path, "retrieval_metrics").iter_rows(named=True)}
    assert metrics["dense_use"]["recall_at_k"] == 1.0
    # the chunk vectors went through the embedding cache under the multilingual model's own id
    from hcat_pipeline.resources.multilingual import MultilingualEncoder

    use = MultilingualEncoder(cache_dir=embedding_model.cache_dir)
    from hcat_pipeline.resources.embedding_cache import EmbeddingCache

    assert EmbeddingCache(use.cache_dir, use.model_id, 512).size()["entries"] >= len(CHUNKS)


def test_crash_mid_run_then_resume_never_repeats_a_finished_call(tmp_path, embedding_model):
    CALLS.clear()
    with pytest.raises((KeyboardInterrupt, dg.DagsterExecutionInterruptedError)):
        run(tmp_path, embedding_model, ScriptedLLM(crash_after=7))
    assert len(CALLS) == 8  # 7 finished + the interrupted one
    lines = (tmp_path / "ckpt" / VERSION / NIGHT / "responses.jsonl").read_text().splitlines()
    finished = {(json.loads(x)["system_id"], json.loads(x)["case_id"]) for x in lines}
    assert len(finished) == 7
    CALLS.clear()
    res = run(tmp_path, embedding_model, ScriptedLLM())
    assert res.success and len(CALLS) == 15 - 7
    lines = (tmp_path / "ckpt" / VERSION / NIGHT / "responses.jsonl").read_text().splitlines()
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
    assert not (tmp_path / "wh" / "rag_responses" / VERSION / f"{NIGHT}.parquet").exists()  # no silently thinner table
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
    assert "| 2 |" in meta["import_errors"].value and meta["systems_run"].value["team_rag"]["bad_rows"] == 1
    # ICL@2 from the other answerable cases, never the case itself: g1 and g2 each get the other one, g3 both
    prompt = {cid: [p for p in CALLS if q in p.split("Question:")[-1]][0] for cid, q in
              [("g1", "tuple be changed"), ("g2", "missing key"), ("g3", "world cup")]}
    assert prompt["g1"].count("Example ") == 1 and "A KeyError is raised." in prompt["g1"]
    assert "No, tuples are immutable." not in prompt["g1"]
    assert prompt["g2"].count("Example ") == 1 and "A KeyError is raised." not in prompt["g2"]
    assert prompt["g3"].count("Example ") == 2
    m = {r["system_id"]: r for r in load(tmp_path, "retrieval_metrics").iter_rows(named=True)}
    assert m["team_rag"]["recall_at_k"] == 1.0 and m["team_rag"]["abstention_rate"] == 1.0


class _NightlyService(BaseHTTPRequestHandler):
    """A user's RAG service whose behaviour changes overnight: ``server.mode`` says how it answers."""

    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with self.server.lock:
            self.server.calls += 1
        q = body.get("query", "")
        if self.server.mode == "good":
            answer = {"tuple": "No, tuples are immutable.", "missing key": "A KeyError is raised."}
            text = next((a for k, a in answer.items() if k in q), "I don't know based on the documents.")
        else:  # a regression shipped overnight: confident nonsense
            text = "Bananas are an excellent source of potassium."
        data = json.dumps({"answer": text}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_second_night_asks_http_again_and_reuses_an_unchanged_deterministic_local_system(tmp_path, embedding_model):
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _NightlyService)
    srv.daemon_threads, srv.lock, srv.calls, srv.mode = True, threading.Lock(), 0, "good"
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        campaign = {"systems": [
            {"system_id": "bm25", "retriever": "bm25"},
            {"system_id": "team_api", "http": {"url": f"http://127.0.0.1:{srv.server_address[1]}/q", "max_retries": 0}},
        ]}  # fmt: skip
        CALLS.clear()
        with_checks = ("chunks", "chunk_embeddings", "rag_responses", "behaviour_checks")
        assert run(tmp_path, embedding_model, ScriptedLLM(), config=campaign, night="2026-11-20", select=with_checks).success
        assert len(CALLS) == 3 and srv.calls == 3
        n1 = load(tmp_path, "rag_responses", f"{VERSION}|2026-11-20")
        srv.mode = "broken"
        CALLS.clear()
        res = run(tmp_path, embedding_model, ScriptedLLM(), config=campaign, night="2026-11-21", select=with_checks)
        assert res.success
        # the verdicts on the http system moved with its answers (the out-of-scope case is no longer declined)
        checks = {n: load(tmp_path, "behaviour_checks", f"{VERSION}|{n}").filter(pl.col("system_id") == "team_api")
                  for n in ("2026-11-20", "2026-11-21")}  # fmt: skip
        passed = {n: int((c["verdict"] == "pass").sum()) for n, c in checks.items()}
        assert passed["2026-11-21"] < passed["2026-11-20"], {n: c.select("case_id", "verdict", "evidence").to_dicts() for n, c in checks.items()}
        oos = {n: c.filter(pl.col("case_id") == "g3")["verdict"][0] for n, c in checks.items()}
        assert oos == {"2026-11-20": "pass", "2026-11-21": "fail"}
        n2 = load(tmp_path, "rag_responses", f"{VERSION}|2026-11-21")
        # the http system was asked again and its answers moved; the local deterministic one was not asked
        assert srv.calls == 6 and CALLS == []
        api1, api2 = (f.filter(pl.col("system_id") == "team_api").sort("case_id") for f in (n1, n2))
        assert api2["reused_from"].null_count() == 3 and (api1["answer"] != api2["answer"]).all()
        loc2 = n2.filter(pl.col("system_id") == "bm25").sort("case_id")
        assert (loc2["reused_from"] == f"{VERSION}|2026-11-20").all()
        assert loc2["answer"].to_list() == n1.filter(pl.col("system_id") == "bm25").sort("case_id")["answer"].to_list()
        assert (n2["night"] == "2026-11-21").all() and n2["campaign_sha256"].n_unique() == 1
        meta = res.asset_materializations_for_node("rag_responses")[0].metadata
        assert meta["responses_reused_from_earlier_nights"].value == 3 and meta["llm_calls_this_run"].value == 3
        assert meta["systems_run"].value["team_api"]["reusable"] is False
        # a changed configuration (here the prompt's max_tokens) is a different system: asked again, not reused
        changed = {"systems": [{"system_id": "bm25", "retriever": "bm25", "max_tokens": 50}]}
        CALLS.clear()
        assert run(tmp_path, embedding_model, ScriptedLLM(), config=changed, night="2026-11-22").success
        assert len(CALLS) == 3
        # reuse: never — every night asks every system
        CALLS.clear()
        assert run(tmp_path, embedding_model, ScriptedLLM(), config={**changed, "reuse": "never"}, night="2026-11-23").success
        assert len(CALLS) == 3
    finally:
        srv.shutdown()
