"""Fault drills: a campaign process killed with SIGKILL mid-rag_responses and resumed; a corrupted
warehouse table; the LLM server down or hanging; a planted API key; tampered model weights."""

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline import models
from hcat_pipeline.campaign import recover_stale_runs
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline_tests.ops_servers import ROOT, openai_stub, write_campaign_fixture
from hcat_pipeline_tests.stubs import NIGHT, RUN, VERSION, load, run, stub_asset

# ---------------------------------------------------------------------------------------------------
# kill -9 mid-rag_responses, then resume


class _CountingRag(BaseHTTPRequestHandler):
    """A user's RAG service that counts every request per question. Its ``hold_at``-th request (counted over the
    server's life) is held unanswered until the test sets ``release``: the campaign process is then, for certain,
    inside a shard step waiting on that answer — the moment the drill kills it."""

    def log_message(self, *a):
        pass

    def do_POST(self):
        q = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}").get("query", "")
        with self.server.lock:
            self.server.calls[q] = self.server.calls.get(q, 0) + 1
            held = sum(self.server.calls.values()) == self.server.hold_at
        if held:
            self.server.holding.set()
            self.server.release.wait()
        data = json.dumps({"answer": f"answer to {q}"}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the held request's client was killed: nobody to answer
            pass


CAMPAIGN_SCRIPT = """
import os, socket, sys
import dagster as dg
from hcat_pipeline.assets.responses import rag_responses
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.partitions import campaign_run_key
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline_tests.stubs import chunk_embeddings_stub, chunks_stub, golden_set_stub
from hcat_pipeline_tests.test_ops_faults import ScriptLLM

instance = dg.DagsterInstance.get()
if not instance.has_dynamic_partition("golden_set_version", "v-test"):
    instance.add_dynamic_partitions("golden_set_version", ["v-test"])
url, ckpt, wh = sys.argv[1:4]
systems = [{"system_id": f"team_{i}", "http": {"url": url, "max_retries": 0, "max_concurrency": 1, "timeout_s": 3600}}
           for i in range(3)]
res = dg.materialize(
    [golden_set_stub, chunks_stub, chunk_embeddings_stub, rag_responses], selection=["rag_responses"],
    partition_key=campaign_run_key("v-test", "2026-11-20"), instance=instance, raise_on_error=False,
    resources={"io_manager": PolarsParquetIOManager(base_dir=wh), "embedding_model": EmbeddingModel(), "multilingual_encoder": MultilingualEncoder(), "llm": ScriptLLM()},
    run_config={"ops": {"rag_responses": {"config": {"checkpoint_dir": ckpt, "import_dir": ckpt + "/imports",
                                                     "campaign": {"systems": systems}}}}},
    tags={"hcat/pid": str(os.getpid()), "hcat/host": socket.gethostname()},
)
print("SUCCESS" if res.success else "FAILED")
"""


class ScriptLLM(LLM):
    """Never called by http systems; keeps the llm resource cheap in the drill's subprocess."""

    def fingerprint(self) -> str:
        return "local/none@sha256:0"


def _pool_claims(instance: dg.DagsterInstance) -> int:
    return sum(instance.event_log_storage.get_concurrency_info(k).active_slot_count for k in instance.event_log_storage.get_concurrency_keys())


@pytest.mark.slow
def test_kill_9_mid_responses_then_resume(tmp_path, monkeypatch):
    home, wh, ckpt = tmp_path / "home", tmp_path / "wh", tmp_path / "ckpt"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / "dagster.yaml").read_text())  # the project's instance: pools default_limit 1
    write_campaign_fixture(wh)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _CountingRag)
    # 3 systems × 3 cases, one shard step per system; the 5th request is team_1's second case: the first shard step
    # has ended (its 3 answers journaled), the second holds the llm pool slot and has journaled 1 answer
    srv.daemon_threads, srv.lock, srv.calls, srv.hold_at = True, threading.Lock(), {}, 5
    srv.holding, srv.release = threading.Event(), threading.Event()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    script = tmp_path / "campaign_proc.py"
    script.write_text(CAMPAIGN_SCRIPT)
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT)}
    args = [sys.executable, str(script), f"http://127.0.0.1:{srv.server_address[1]}/ask", str(ckpt), str(wh)]
    journal = ckpt / VERSION / NIGHT / "responses.jsonl"
    try:
        log = tmp_path / "campaign_proc.log"  # a file, not a pipe: Dagster's event log must never block the process
        with open(log, "wb") as out:
            proc = subprocess.Popen(args, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 900  # a stall guard only: the kill waits on the held request, not on a clock
        while not srv.holding.wait(0.2):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
        os.kill(proc.pid, signal.SIGKILL)  # mid-step: waiting on its 5th answer, 4 checkpointed, 9 to give
        proc.wait()
        srv.release.set()
        done_before = {(r["system_id"], r["case_id"]) for r in map(json.loads, journal.read_text().splitlines())}
        calls_before = sum(srv.calls.values())
        assert calls_before == 5 and len(done_before) == 4, (srv.calls, done_before)  # every answer but the held one

        monkeypatch.setenv("DAGSTER_HOME", str(home))
        with dg.DagsterInstance.get() as instance:
            (stuck,) = instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED]))
            assert _pool_claims(instance) == 1  # the dead run still holds the llm pool slot
            assert recover_stale_runs(instance) == [stuck.run_id]
            assert _pool_claims(instance) == 0 and instance.get_run_by_id(stuck.run_id).status == dg.DagsterRunStatus.FAILURE

        # resume: the same partition again, a new process
        out = subprocess.run(args, env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)  # a stall guard only
        assert out.stdout.strip().endswith("SUCCESS"), (out.stdout + out.stderr)[-3000:]
        table = load(tmp_path, "rag_responses")
        assert table.height == 9 and table["error"].null_count() == 9  # no lost response
        keys = [(r["system_id"], r["case_id"]) for r in map(json.loads, journal.read_text().splitlines())]
        assert len(keys) == len(set(keys)) == 9  # each case × system answered exactly once across both processes
        # no finished call asked again: the new process asked exactly the unfinished ones; before the kill at most
        # one call was in flight (asked, its answer not yet checkpointed)
        assert sum(srv.calls.values()) - calls_before == 9 - len(done_before), srv.calls
        assert calls_before - len(done_before) == 1  # the held one
        with dg.DagsterInstance.get() as instance:
            assert _pool_claims(instance) == 0  # the resumed run released its slot too
    finally:
        srv.release.set()
        srv.shutdown()
        srv.server_close()


# ---------------------------------------------------------------------------------------------------
# a corrupted warehouse table


def chunks_table_frame() -> pl.DataFrame:
    return pl.DataFrame({"chunk_id": ["a", "b"], "text": ["one", "two"]})


chunks_table = stub_asset("chunks", chunks_table_frame)


@dg.asset
def chunk_lengths(chunks: pl.DataFrame) -> pl.DataFrame:
    return chunks.select("chunk_id", pl.col("text").str.len_chars().alias("n"))


def test_corrupted_table_names_file_and_asset_and_rematerializing_repairs_it(tmp_path):
    io = {"io_manager": PolarsParquetIOManager(base_dir=str(tmp_path))}
    assert dg.materialize([chunks_table, chunk_lengths], resources=io).success
    path = tmp_path / "chunks.parquet"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # a torn copy (disk full, bad sync)
    res = dg.materialize([chunks_table, chunk_lengths], selection=["chunk_lengths"], resources=io, raise_on_error=False)
    assert not res.success
    msg = _failure_text(res)  # Dagster's "error while loading input" wrapping our error as its cause
    assert str(path) in msg and "re-materialize chunks" in msg and "unreadable" in msg
    assert dg.materialize([chunks_table, chunk_lengths], selection=["chunks"], resources=io).success
    assert dg.materialize([chunks_table, chunk_lengths], selection=["chunk_lengths"], resources=io).success
    assert pl.read_parquet(tmp_path / "chunk_lengths.parquet")["n"].to_list() == [3, 3]


# ---------------------------------------------------------------------------------------------------
# the LLM server down or hanging; a planted API key

PLANTED = "sk-planted-FAULTS-abcdef0123456789"
ONE_SYSTEM = {"systems": [{"system_id": "bm25", "retriever": "bm25"}]}


def _failure_text(res) -> str:
    (failure,) = [e for e in res.all_events if e.is_step_failure]
    err, parts = failure.event_specific_data.error, []
    while err is not None:
        parts.append(err.message)
        err = err.cause
    return "\n".join(parts)


def _everything_stored(res, tmp_path: Path) -> str:
    """The run record (config, tags), every event with its metadata, and every file the run wrote."""
    texts = [str(res.dagster_run), str(res.dagster_run.run_config), str(res.dagster_run.tags)]
    texts += [str(e) for e in res.all_events]
    texts += [str(e.event_specific_data) for e in res.all_events]
    for p in tmp_path.rglob("*"):
        if p.is_file():
            texts.append(p.read_bytes().decode("latin-1"))
    return "\n".join(texts)


@pytest.mark.slow
def test_llm_server_down_fails_in_bounded_time_naming_provider_after_op_retries(tmp_path, embedding_model, monkeypatch, capfd):
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    with openai_stub(mode="down") as stub:
        llm = LLM(provider="openai", model="stub-model", base_url=stub.base_url, timeout_s=30.0, transient_retries=1, backoff_s=0.05)
        res = run(tmp_path, embedding_model, llm, raise_on_error=False,
                  config={**ONE_SYSTEM, "provider_retries": 1, "provider_retry_delay_s": 0.5})  # fmt: skip
    assert not res.success  # bounded: the exact number of calls below, each answered 503 at once
    text = _failure_text(res)
    assert "openai" in text and "HTTP 503" in text and "bm25 (100%, 3 failed" in text
    # the shard's step was retried once (exponential backoff), each attempt asking every case twice (resource retry);
    # then the merge step fails the asset over the failure budget
    steps = [(e.step_key, e.event_type_value) for e in res.all_events
             if e.event_type_value in ("STEP_UP_FOR_RETRY", "STEP_FAILURE") and e.step_key.startswith("rag_responses.")]  # fmt: skip
    assert steps == [("rag_responses.answer_shard[bm25_0_0]", "STEP_UP_FOR_RETRY"), ("rag_responses.merge_responses", "STEP_FAILURE")]
    assert stub.calls == 3 * 2 * 2
    assert stub.auth == {f"Bearer {PLANTED}"}  # the key reached the provider …
    captured = capfd.readouterr()
    assert PLANTED not in _everything_stored(res, tmp_path) + captured.out + captured.err  # … and nothing else


@pytest.mark.slow
def test_llm_server_hanging_times_out_and_fails_the_run(tmp_path, embedding_model, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", PLANTED)
    with openai_stub(mode="hang", hang_s=600.0) as stub:  # daemon threads: nobody waits for the hung replies
        llm = LLM(provider="openai", model="stub-model", base_url=stub.base_url, timeout_s=1.0, transient_retries=1, backoff_s=0.05)
        t0 = time.perf_counter()
        res = run(tmp_path, embedding_model, llm, raise_on_error=False, config={**ONE_SYSTEM, "provider_retries": 0})
        took = time.perf_counter() - t0
    assert not res.success
    assert took < 590  # 3 cases × 2 attempts × 1 s timeout, never one of the server's 600 s hangs, never forever
    text = _failure_text(res)
    assert "openai" in text and "Timeout" in text and "transient" in text
    assert stub.calls == 6
    assert PLANTED not in _everything_stored(res, tmp_path)


@pytest.mark.slow
def test_transient_outage_then_recovery_is_absorbed_by_the_op_retry(tmp_path, embedding_model):
    with openai_stub(fail_first=3) as stub:  # the provider is down for the first 3 calls, then back
        llm = LLM(provider="openai", model="stub-model", base_url=stub.base_url, api_key_env="HCAT_TEST_NO_KEY",
                  timeout_s=30.0, transient_retries=0, backoff_s=0.05)  # fmt: skip
        res = run(tmp_path, embedding_model, llm, config={**ONE_SYSTEM, "provider_retries": 2, "provider_retry_delay_s": 0.5})
    assert res.success
    out = load(tmp_path, "rag_responses", RUN)
    assert out.height == 3 and out["error"].null_count() == 3 and stub.calls == 6


# ---------------------------------------------------------------------------------------------------
# model weights against their pinned SHA-256


def test_tampered_model_copy_is_refused_and_verification_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("HCAT_MODEL_RECORDS_DIR", str(tmp_path / "records"))
    hashed = []
    real_hash = models._hash_file
    monkeypatch.setattr(models, "_hash_file", lambda p: hashed.append(Path(p)) or real_hash(p))
    name = "all-MiniLM-L6-v2 int8 ONNX"
    copy = tmp_path / "model.onnx"
    copy.write_bytes(Path(models.minilm_onnx_path()).read_bytes())
    hashed.clear()
    assert models.verify_sha256(copy, name, "fix") == copy and hashed == [copy]
    assert models.verify_sha256(copy, name, "fix") == copy and hashed == [copy]  # same (path, size, mtime): no re-hash
    monkeypatch.setattr(models, "_VERIFIED", {})
    assert models.verify_sha256(copy, name, "fix") == copy and hashed == [copy]  # a new process: the on-disk record
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte, same size
    copy.write_bytes(bytes(data))
    with pytest.raises(models.ModelIntegrityError) as e:
        models.verify_sha256(copy, name, "Reinstall it.")
    assert str(copy) in str(e.value) and models.PINNED_SHA256[name] in str(e.value) and "Reinstall it." in str(e.value)
    assert len(hashed) == 2
