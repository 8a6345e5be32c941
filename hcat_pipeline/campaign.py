"""A campaign end to end, as real Dagster runs in the project's instance (DAGSTER_HOME).

1. Which golden-set version: ``--version``, else the campaign file's ``golden_set_version``, else
   the latest frozen one. Only when none is frozen yet (a fresh machine) or ``regenerate`` is asked
   is the golden set generated: ``test_generation_job`` (corpus → … → golden_candidates), the
   version is named after the candidates' content (``gs-<sha256[:12]>``), and ``golden_set_job``
   freezes it. Otherwise ``golden_set_job`` only verifies the frozen version.
2. ``campaign_run_job`` for the partition (version, tonight): the campaign's systems answer (a
   re-run of the same night resumes; http / API systems are asked again each night), then
   retrieval metrics, behaviour checks, metric tables and the bias report.

The scheduled path does the same inside Dagster: ``nightly_campaign_schedule`` requests step 2 for
the latest frozen version; ``golden_candidates_sensor`` / ``new_version_campaign_sensor`` cover a
newly generated version.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import dagster as dg
import polars as pl

from hcat_pipeline.partitions import FIRST_NIGHT, campaign_run_key, golden_set_version, tonight


def version_for_candidates(candidates: pl.DataFrame) -> str:
    from hcat_pipeline.core.golden import table_sha256

    return f"gs-{table_sha256(candidates)[:12]}"  # the same hash golden_candidates records (candidates_sha256)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover_stale_runs(instance: dg.DagsterInstance) -> list[str]:
    """Runs a killed campaign process left STARTED still hold their pool slots (pool "llm"), which
    would block every later campaign forever. Mark such runs failed and free their slots. Only runs
    this runner launched (tag hcat/pid on this host) whose process is gone are touched."""
    host = socket.gethostname()
    stale = []
    for run in instance.get_runs(dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.STARTING])):
        pid, run_host = run.tags.get("hcat/pid"), run.tags.get("hcat/host")
        if pid is None or run_host != host or _pid_alive(int(pid)):
            continue
        instance.report_run_failed(run, "campaign process ended without finishing the run (killed?)")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        stale.append(run.run_id)
    return stale


def _report(result) -> bool:
    for event in result.all_events:
        if event.is_step_failure:
            print(f"step failed: {event.step_key}: {event.event_specific_data.error.message.strip()}")
    return result.success


def corpus_change(version: str, golden_dir) -> str | None:
    """Why the corpus today differs from the one ``version`` was generated from, or None (unchanged, or a
    curated / imported version, which is never regenerated). Same sources as the corpus asset's defaults."""
    from hcat_pipeline.core.golden import corpus_hash, load_version
    from hcat_pipeline.core.ingest import ingest
    from hcat_pipeline.paths import CORPUS_DIR

    frame, manifest = load_version(version, golden_dir)
    recorded = set(frame["corpus_hash"].drop_nulls().to_list())
    if manifest.get("source") != "generated" or not recorded:
        return None
    docs, _, _ = ingest(True, CORPUS_DIR)
    now = corpus_hash(docs["doc_id"].to_list())
    return None if now in recorded else f"the corpus changed since {version} was generated (corpus hash {min(recorded)} → {now})"


def check_night(night: str) -> str:
    """A night key YYYY-MM-DD that is not in the future (UTC); ValueError otherwise."""
    import datetime as dt

    try:
        day = dt.date.fromisoformat(night)
    except ValueError:
        raise ValueError(f"night {night!r} is not a date YYYY-MM-DD") from None
    if night > tonight():
        raise ValueError(f"night {night} is in the future (today, UTC, is {tonight()})")
    if day < dt.date.fromisoformat(FIRST_NIGHT):
        raise ValueError(f"night {night} is before the first night partition ({FIRST_NIGHT})")
    return night


def _ensure_partition(instance: dg.DagsterInstance, version: str) -> None:
    if not instance.has_dynamic_partition(golden_set_version.name, version):
        instance.add_dynamic_partitions(golden_set_version.name, [version])


def run_campaign(
    instance: dg.DagsterInstance | None = None,
    version: str | None = None,
    campaign_file: str | Path | None = None,
    max_cases: int | None = None,
    night: str | None = None,
    regenerate: bool = False,
    candidates_path: Path | None = None,
) -> tuple[bool, str | None]:
    """Run one campaign run (generating a golden set first when none is frozen); returns (success, version)."""
    from hcat_pipeline.campaign_spec import campaign_run_config, load_campaign
    from hcat_pipeline.core.golden import latest_version
    from hcat_pipeline.definitions import defs
    from hcat_pipeline.paths import GOLDEN_SETS_DIR, WAREHOUSE_DIR

    spec = load_campaign(campaign_file)  # a bad file stops here, before any run
    night = check_night(night or tonight())
    if max_cases is not None:
        spec = spec.model_copy(update={"max_cases": max_cases})
    instance = instance or dg.DagsterInstance.get()
    for run_id in recover_stale_runs(instance):
        print(f"recovered stale run {run_id} (its process is gone): marked failed, pool slots freed")
    tags = {"hcat/pid": str(os.getpid()), "hcat/host": socket.gethostname(), "campaign": spec.name}
    golden_dir = os.environ.get("HCAT_GOLDEN_SETS_DIR") or GOLDEN_SETS_DIR
    version = version or (None if spec.golden_set_version == "latest" else spec.golden_set_version)
    if version is None and not regenerate:
        version = latest_version(golden_dir)
        why = corpus_change(version, golden_dir) if version else None
        if why:
            print(f"{why}: generating a new golden set")
            version = None
    if version is None:
        print("generating the golden set (test_generation_job) …")
        gen = defs.resolve_job_def("test_generation_job").execute_in_process(instance=instance, raise_on_error=False, tags=tags)
        if not _report(gen):
            return False, None
        version = version_for_candidates(pl.read_parquet(Path(candidates_path or WAREHOUSE_DIR / "golden_candidates.parquet")))
    _ensure_partition(instance, version)
    print(f"golden-set version: {version}")
    frozen = defs.resolve_job_def("golden_set_job").execute_in_process(instance=instance, partition_key=version,
                                                                       raise_on_error=False, tags=tags)  # fmt: skip
    if not _report(frozen):
        return False, version
    print(f"campaign run: {version} × night {night} ({len(spec.systems)} systems, max_cases={spec.max_cases or 'all'})")
    result = defs.resolve_job_def("campaign_run_job").execute_in_process(
        instance=instance, partition_key=campaign_run_key(version, night), raise_on_error=False,
        run_config=campaign_run_config(spec), tags={**tags, "golden_set_version": version, "night": night},
    )
    return _report(result), version
