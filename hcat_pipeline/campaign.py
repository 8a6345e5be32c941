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

import logging
import os
import socket
import time
from pathlib import Path
from typing import NamedTuple

import dagster as dg
import polars as pl

from hcat_pipeline.console import GATE_CHECK_FAILURE, is_release_verdict
from hcat_pipeline.partitions import FIRST_NIGHT, campaign_run_key, golden_set_version, tonight
from hcat_pipeline.release.plan import NightPlan


def version_for_candidates(candidates: pl.DataFrame) -> str:
    from hcat_pipeline.golden.cases import table_sha256

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


def claim_instance(instance: dg.DagsterInstance) -> dict[str, str]:
    """What every command that runs jobs in the instance does first: recover the runs a killed earlier attempt left
    STARTED (``recover_stale_runs``), apply this deployment's LLM pool limit, and return the tags that let a later
    attempt recover this one's runs (``hcat/pid``, ``hcat/host``)."""
    from hcat_pipeline.resources.sets import apply_pool_limits

    for run_id in recover_stale_runs(instance):
        print(f"recovered stale run {run_id} (its process is gone): marked failed, pool slots freed")
    apply_pool_limits(instance)  # the LLM pool of this deployment's provider: HCAT_LLM_POOL_LIMITS or the default
    return {"hcat/pid": str(os.getpid()), "hcat/host": socket.gethostname()}


def _report(result, quiet: bool = False) -> bool:
    for event in result.all_events:
        if event.is_step_failure and not quiet:
            print(f"step failed: {event.step_key}: {event.event_specific_data.error.message.strip()}")
    return result.success




class CampaignOutcome(NamedTuple):
    ok: bool  # the campaign completed (a release blocked by its gates still counts as completed)
    version: str | None
    release_blocked: bool = False


def release_blocked_only(result) -> bool:
    """True when the run's only failures are blocking release-gate checks: the campaign itself
    completed (every table stored, the gate verdicts included); the release is what failed."""
    failures = [e for e in result.all_events if e.is_step_failure]
    return bool(failures) and all(getattr(e.event_specific_data.error, "cls_name", None) == GATE_CHECK_FAILURE
                                  and is_release_verdict(e.event_specific_data.error.message, e.step_key) for e in failures)  # fmt: skip


class _ConsoleHandler(logging.Handler):
    """Feeds Dagster's log records (step key, event type, message) to the CampaignConsole."""

    def __init__(self, console):
        super().__init__(logging.DEBUG)
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        kind = getattr(event, "event_type_value", None)
        message = meta.get("orig_message") or record.getMessage()
        if kind == "STEP_FAILURE":
            error = getattr(getattr(event, "event_specific_data", None), "error", None)
            while getattr(error, "cause", None) is not None and "DagsterExecutionStepExecutionError" in (error.message or ""):
                error = error.cause  # the user's exception, not Dagster's wrapper
            message = (getattr(error, "message", None) or message).replace("dagster._core.definitions.events.Failure: ", "")
        try:
            self.console.handle(meta.get("step_key"), kind, str(message), record.levelno)
        except Exception:  # the console must never break a run
            self.handleError(record)


def console_loggers(console, log_path: Path) -> dict:
    """Logger definitions replacing Dagster's DEBUG console: the CampaignConsole, and every record to ``log_path``."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    file_handler = logging.FileHandler(log_path, encoding="utf-8")
    file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    console_handler = _ConsoleHandler(console)

    def _make(name, handler):
        @dg.logger(description=f"hcat campaign: {name}")
        def _logger(_init_context):
            lg = logging.Logger(f"hcat_{name}", level=logging.DEBUG)
            lg.addHandler(handler)
            return lg

        return _logger

    return {"hcat_console": _make("console", console_handler), "hcat_file": _make("file", file_handler)}


def job_by_name(name: str) -> dg.JobDefinition:
    """The project's job ``name``: what a worker rebuilds a run's job from (``build_reconstructable_job``)."""
    from hcat_pipeline.definitions import defs

    return defs.resolve_job_def(name)


def _execute_on_workers(job_name: str, run_config: dict | None, instance: dg.DagsterInstance, partition_key=None, tags=None):
    """The distributed / k8s profiles: the job with its own executor (dagster-celery, one Kubernetes Job per step), so
    every step runs on the workers and this process coordinates the run and waits for it (Dagster's own log, no
    campaign console: the steps' records are in the instance's event log)."""
    job = dg.build_reconstructable_job("hcat_pipeline.campaign", "job_by_name", reconstructable_args=(job_name,))
    tags = dict(tags or {})
    if partition_key is not None:
        tags.update(job_by_name(job_name).partitions_def.get_tags_for_partition_key(partition_key))
    with dg.execute_job(job, instance=instance, run_config=run_config, tags=tags, raise_on_error=False) as result:
        return result


def _execute(job_name: str, loggers: dict | None, run_config: dict | None = None, **kwargs):
    from hcat_pipeline.resources.sets import WORKER_PROFILES, deployment

    if deployment() in WORKER_PROFILES:
        return _execute_on_workers(job_name, run_config, **kwargs)
    job = job_by_name(job_name)
    if loggers:
        job = job.with_logger_defs(loggers)
        run_config = {**(run_config or {}), "loggers": {name: {} for name in loggers}}
    return job.execute_in_process(run_config=run_config, raise_on_error=False, **kwargs)


def run_summary_inputs(result, version: str, night: str) -> dict:
    """Headline means (metric_tables metadata), gate rows (gate_verdicts table) and the report path
    (campaign_report metadata) of a finished campaign run; missing pieces are None."""
    from hcat_pipeline.common.canary_ids import is_canary
    from hcat_pipeline.io import safe_path_part
    from hcat_pipeline.paths import WAREHOUSE_DIR

    out: dict = {"means": None, "gates": None, "report_path": None, "canaries": None, "rubric": None}
    for event in result.get_asset_materialization_events():
        mat = event.event_specific_data.materialization
        name, meta = mat.asset_key.to_user_string(), mat.metadata
        if name == "metric_tables" and "means" in meta:
            out["means"] = {s: v for s, v in meta["means"].value.items() if not is_canary(s)}
        elif name == "canary_detection":
            path = WAREHOUSE_DIR / "canary_detection" / safe_path_part(version) / f"{safe_path_part(night)}.parquet"
            out["canaries"] = pl.read_parquet(path).to_dicts() if path.exists() else None
        elif name == "campaign_report" and "report_path" in meta:
            out["report_path"] = str(meta["report_path"].value)
            out["rubric"] = list(meta["rubric_lines"].value) if "rubric_lines" in meta else None
        elif name == "gate_verdicts":
            path = WAREHOUSE_DIR / "gate_verdicts" / safe_path_part(version) / f"{safe_path_part(night)}.parquet"
            if path.exists():
                table = pl.read_parquet(path)
                cols = [c for c in ("gate", "kind", "system_id", "verdict", "blocking", "certify_below", "evidence", "cases_read", "n_flagged",
                                    "n_confirmed", "n_unconfirmed", "n_overturned", "fail_evidence") if c in table.columns]
                rows = table.select(cols).to_dicts()
                out["gates"] = [r for r in rows if not is_canary(r["system_id"])]
    return out


def corpus_change(version: str, golden_dir, corpus=None) -> str | None:
    """Why the corpus today differs from the one ``version`` was generated from, or None (unchanged, or a
    curated / imported version, which is never regenerated). ``corpus``: the campaign file's ``CorpusSpec``
    (default: the default campaign file's), read the way the corpus asset reads it."""
    from hcat_pipeline.campaign_spec import CorpusSpec, corpus_sources
    from hcat_pipeline.corpus.ingest import ingest
    from hcat_pipeline.golden.cases import corpus_hash, load_version

    frame, manifest = load_version(version, golden_dir)
    recorded = set(frame["corpus_hash"].drop_nulls().to_list())
    if manifest.get("source") != "generated" or not recorded:
        return None
    docs, _, _ = ingest(**corpus_sources(corpus or CorpusSpec()))
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


def _shipped_review(spec, version: str, golden_dir, instance, loggers, tags) -> tuple[str | None, str]:
    """(the version tonight reads, the first screen's note): a generated version curated by the campaign's shipped
    review (``review.shipped``), frozen and materialised; unchanged when the campaign ships none or the version is
    already curated / imported. (None, note) when freezing the curated version failed."""
    from hcat_pipeline.golden.cases import read_manifest
    from hcat_pipeline.paths import CURATION_DIR
    from hcat_pipeline.review.shipped import apply_shipped_review

    if not spec.shipped_review or read_manifest(version, golden_dir).get("source") != "generated":
        return version, ""
    shipped = apply_shipped_review(spec.shipped_review, version, golden_dir, CURATION_DIR / "shipped")
    print(shipped.note)
    if not shipped.matched:
        return version, shipped.note
    _ensure_partition(instance, shipped.version)
    print(f"golden-set version: {shipped.version} (curated from {version})")
    curated = _execute("golden_set_job", loggers, instance=instance, partition_key=shipped.version, tags=tags)
    return (shipped.version if _report(curated, quiet=loggers is not None) else None), shipped.note


def night_plan(spec, version: str, night: str, golden_dir) -> NightPlan:
    """The night's plan (``release.plan``) from the campaign file, the frozen version and the gates file in force."""
    from hcat_pipeline.common.ids import canonical_json, sha256_hex
    from hcat_pipeline.corpus.content_hash import file_sha256
    from hcat_pipeline.gates.spec import DEFAULT_GATES_FILE, load_gates
    from hcat_pipeline.golden.cases import read_manifest
    from hcat_pipeline.metrics.score_cache import code_fingerprint
    from hcat_pipeline.release.night import folder_sha256

    digest = lambda v: sha256_hex(canonical_json(v, compact=True))  # noqa: E731
    gates = {g.name: g.model_dump(mode="json", exclude={"description"}) for g in load_gates(DEFAULT_GATES_FILE).gates}
    judge = spec.judge.model_dump(mode="json")
    return NightPlan(
        campaign=spec.name, night=night, golden_set_version=version,
        golden_set_sha256=str(read_manifest(version, golden_dir).get("content_sha256", "")),
        shipped_review=folder_sha256(spec.shipped_review, "*.decisions.jsonl") if spec.shipped_review else "",
        systems={s.system_id: digest(s.model_dump(mode="json")) for s in spec.systems}, gates_sha256=file_sha256(DEFAULT_GATES_FILE),
        gates=gates, certify_below=spec.certify_below if spec.certify_below is not None else -1.0, gates_read=spec.gates_read,
        judge={"config_sha256": digest(judge), "enabled": judge.get("enabled")}, metric_code=code_fingerprint(), seed=spec.case_seed,
        intended_use=spec.intended_use.model_dump(mode="json"), signoff_roles=list(spec.signoff_roles),
    )  # fmt: skip


def _lock_plan(spec, version: str, night: str, golden_dir, gate_config: dict) -> None:
    """The plan written and printed before any system answers, with the settings the night's gates run with
    (``gate_config``: the run config's gate_verdicts block) beside it, so ``hcat verify`` can re-derive the verdicts."""
    import dataclasses

    from hcat_pipeline.corpus.content_hash import file_sha256
    from hcat_pipeline.gates.night import GateSettings
    from hcat_pipeline.paths import DATA_DIR
    from hcat_pipeline.release.night import lock_plan, release_dir
    from hcat_pipeline.release.rederive import write_settings

    directory = release_dir(DATA_DIR, version, night)
    settings_path = write_settings(GateSettings.from_dict(gate_config), directory)
    if missing := spec.intended_use.missing():
        print(f"INTENDED USE NOT DECLARED: the campaign file's intended_use lacks {', '.join(missing)} — a reviewer cannot tell "
              "what this evaluation is fit for (hcat init writes the fields)")  # fmt: skip
    plan = dataclasses.replace(night_plan(spec, version, night, golden_dir), gate_settings_sha256=file_sha256(settings_path))
    digest, moved = lock_plan(plan, directory)
    print(f"plan locked before the night: sha256 {digest} ({directory / 'plan.json'})")
    for m in moved:
        print(f"THE BAR MOVED since this night's earlier plan: {m['field']} from {m['from']} to {m['to']} (plan of {m['when']})")


def _seal_bundle(version: str, night: str, golden_dir) -> None:
    from hcat_pipeline.gates.spec import DEFAULT_GATES_FILE
    from hcat_pipeline.paths import DATA_DIR, LABELS_DIR, REPORTS_DIR, WAREHOUSE_DIR
    from hcat_pipeline.release.night import evidence_files, release_dir, seal_bundle
    from hcat_pipeline.reports.signoffs import refresh_night_report

    files = evidence_files(DATA_DIR, WAREHOUSE_DIR, golden_dir, LABELS_DIR, version, night, DEFAULT_GATES_FILE)
    bundle = seal_bundle(files, DATA_DIR, release_dir(DATA_DIR, version, night), WAREHOUSE_DIR, LABELS_DIR)
    refresh_night_report(DATA_DIR, REPORTS_DIR, version, night)  # the report's sign-off block names the sealed bundle
    print(f"evidence bundle: root sha256 {bundle['root']} ({len(bundle['files'])} files; hcat verify {night} checks it, "
          f"hcat sign {night} signs it)")


def run_campaign(
    instance: dg.DagsterInstance | None = None,
    version: str | None = None,
    campaign_file: str | Path | None = None,
    max_cases: int | None = None,
    night: str | None = None,
    regenerate: bool = False,
    candidates_path: Path | None = None,
    console=None,
    log_path: Path | None = None,
    generate_only: bool = False,
) -> CampaignOutcome:
    """Run one campaign run (generating a golden set first when none is frozen); returns a ``CampaignOutcome``.

    With a ``console`` (``hcat_pipeline.console.CampaignConsole``) Dagster's DEBUG console log is replaced by
    one line per stage, progress bars on LLM stages and a closing summary; every record still goes to the
    instance and to ``log_path`` (default ``data/logs/campaign-<night>.log``)."""
    from hcat_pipeline.campaign_spec import campaign_run_config, generation_run_config, load_campaign
    from hcat_pipeline.golden.cases import latest_version
    from hcat_pipeline.paths import DATA_DIR, GOLDEN_SETS_DIR, WAREHOUSE_DIR

    spec = load_campaign(campaign_file)  # a bad file stops here, before any run
    night = check_night(night or tonight())
    t0 = time.perf_counter()
    log_path = Path(log_path or DATA_DIR / "logs" / f"campaign-{night}.log")
    loggers = console_loggers(console, log_path) if console is not None else None
    if console is not None:
        console.say(f"full log: {log_path}")
    if max_cases is not None:
        spec = spec.model_copy(update={"max_cases": max_cases})
    instance = instance or dg.DagsterInstance.get()
    tags = {**claim_instance(instance), "campaign": spec.name}
    golden_dir = os.environ.get("HCAT_GOLDEN_SETS_DIR") or GOLDEN_SETS_DIR
    version = version or (None if spec.golden_set_version == "latest" else spec.golden_set_version)
    if version is None and not regenerate:
        version = latest_version(golden_dir)
        why = corpus_change(version, golden_dir, spec.corpus) if version else None
        if why:
            print(f"{why}: generating a new golden set")
            version = None
    if version is None:
        print("generating the golden set (test_generation_job) …")
        gen = _execute("test_generation_job", loggers, run_config=generation_run_config(spec), instance=instance, tags=tags)
        if not _report(gen, quiet=loggers is not None):
            return CampaignOutcome(False, None)
        version = version_for_candidates(pl.read_parquet(Path(candidates_path or WAREHOUSE_DIR / "golden_candidates.parquet")))
    _ensure_partition(instance, version)
    print(f"golden-set version: {version}")
    frozen = _execute("golden_set_job", loggers, instance=instance, partition_key=version, tags=tags)
    if not _report(frozen, quiet=loggers is not None):
        return CampaignOutcome(False, version)
    version, review_note = _shipped_review(spec, version, golden_dir, instance, loggers, tags)
    if version is None:
        return CampaignOutcome(False, None)
    if generate_only:
        print(f"golden-set version {version} frozen; no night run (--generate-only): review it (hcat review, /curate/case), then run the night")
        return CampaignOutcome(True, version)
    print(f"campaign run: {version} × night {night} ({len(spec.systems)} systems, max_cases={spec.max_cases or 'all'})")
    run_config = campaign_run_config(spec, review_note)
    _lock_plan(spec, version, night, golden_dir, run_config["ops"]["gate_verdicts"]["config"])  # before any system answers: the bar first
    result = _execute("campaign_run_job", loggers, run_config=run_config, instance=instance,
                      partition_key=campaign_run_key(version, night), tags={**tags, "golden_set_version": version, "night": night})  # fmt: skip
    ok = _report(result, quiet=loggers is not None)
    blocked = not ok and release_blocked_only(result)
    ok = ok or blocked  # a blocked release is a verdict of a completed campaign, not a failed campaign
    if blocked:
        print("release gates: BLOCKED (blocking hard gates failed or INDETERMINATE; see gate_verdicts and the report)")
    if ok:
        _seal_bundle(version, night, golden_dir)
    if console is not None:
        from hcat_pipeline.console import format_summary

        console.say(format_summary(version=version, night=night, systems=[s.system_id for s in spec.systems], ok=ok, console=console,
                                   log_path=str(log_path), seconds=time.perf_counter() - t0,
                                   **run_summary_inputs(result, version, night)))  # fmt: skip
    return CampaignOutcome(ok, version, blocked)
