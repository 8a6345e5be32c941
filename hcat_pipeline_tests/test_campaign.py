"""The campaign runner: version naming, and recovery of runs a killed campaign left holding pool slots."""

import socket
import subprocess
import sys

import dagster as dg
import polars as pl

from hcat_pipeline.campaign import recover_stale_runs, version_for_candidates

DagsterRunStatus = dg.DagsterRunStatus


def test_version_is_a_content_hash():
    a = pl.DataFrame({"case_id": ["c1", "c2"], "query": ["q1", "q2"]})
    assert version_for_candidates(a) == version_for_candidates(a.clone())
    assert version_for_candidates(a) != version_for_candidates(a.with_columns(pl.lit("x").alias("query")))
    assert version_for_candidates(a).startswith("gs-") and len(version_for_candidates(a)) == 15


def _started_run(instance, job_name, tags):
    @dg.op
    def noop():
        return None

    @dg.job(name=job_name)
    def job():
        noop()

    run = instance.create_run_for_job(job, tags=tags)
    instance.handle_new_event(
        dg.EventLogEntry(error_info=None, level="debug", user_message="", run_id=run.run_id, timestamp=0.0,
                         dagster_event=dg.DagsterEvent(event_type_value="PIPELINE_START", job_name=job_name))  # fmt: skip
    )
    return run


def test_stale_run_of_a_dead_process_is_failed_and_frees_its_pool_slot(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    with dg.instance_for_test(temp_dir=str(tmp_path)) as instance:
        instance.event_log_storage.set_concurrency_slots("llm", 1)
        host = socket.gethostname()
        stale = _started_run(instance, "stale_job", {"hcat/pid": str(dead.pid), "hcat/host": host})
        alive = _started_run(instance, "live_job", {"hcat/pid": str(__import__("os").getpid()), "hcat/host": host})
        foreign = _started_run(instance, "foreign_job", {})
        instance.event_log_storage.claim_concurrency_slot("llm", stale.run_id, "step")
        assert instance.event_log_storage.get_concurrency_info("llm").active_slot_count == 1

        assert recover_stale_runs(instance) == [stale.run_id]
        assert instance.get_run_by_id(stale.run_id).status == DagsterRunStatus.FAILURE
        assert instance.get_run_by_id(alive.run_id).status == DagsterRunStatus.STARTED
        assert instance.get_run_by_id(foreign.run_id).status == DagsterRunStatus.STARTED
        assert instance.event_log_storage.get_concurrency_info("llm").active_slot_count == 0


def test_corpus_change_since_a_generated_version_is_detected(tmp_path):
    from hcat_pipeline.campaign import corpus_change
    from hcat_pipeline.corpus.ingest import ingest
    from hcat_pipeline.golden.cases import cases_frame, corpus_hash, freeze_version, new_case
    from hcat_pipeline.paths import CORPUS_DIR

    docs, _, _ = ingest(True, CORPUS_DIR)
    today = corpus_hash(docs["doc_id"].to_list())

    def freeze(version, chash, source):
        frame = cases_frame([new_case(category="happy_path", query_type="simple", query=f"What is {version}?",
                                      reference_answer="x", expected_behavior="answer", corpus_hash=chash)])  # fmt: skip
        freeze_version(frame, version, tmp_path, source=source)

    freeze("same", today, "generated")
    freeze("old", "0123456789abcdef", "generated")
    freeze("curated", "0123456789abcdef", "import")
    assert corpus_change("same", tmp_path) is None
    assert "corpus changed since old" in corpus_change("old", tmp_path)
    assert corpus_change("curated", tmp_path) is None  # a curated version is never regenerated
