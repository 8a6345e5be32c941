"""Sensors: re-run what changed (new frozen golden-set versions, new corpus files, …)."""

import os
from pathlib import Path

import dagster as dg

from hcat_pipeline.partitions import golden_set_version, tonight


def build_golden_set_sensor(golden_dir: str | None = None, job_name: str = "golden_set_job", name: str = "golden_set_version_sensor"):
    """A sensor that notices a new frozen version (``<golden_dir>/<version>/manifest.json``, frozen by a
    run, the CLI or dropped in by hand), verifies it, adds the ``golden_set_version`` partition and
    requests ``job_name`` for it. A version whose files do not match its manifest is skipped and logged.
    ``golden_dir`` defaults to ``HCAT_GOLDEN_SETS_DIR`` / data/golden_sets at evaluation time."""

    @dg.sensor(name=name, job_name=job_name, minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
               description="New frozen golden-set version → add the partition and run golden_set_job for it.")  # fmt: skip
    def _sensor(context: dg.SensorEvaluationContext):
        from hcat_pipeline.golden.cases import GoldenSetError, list_versions, verify_version
        from hcat_pipeline.paths import GOLDEN_SETS_DIR

        root = Path(golden_dir or os.environ.get("HCAT_GOLDEN_SETS_DIR") or GOLDEN_SETS_DIR)
        known = set(context.instance.get_dynamic_partitions(golden_set_version.name))
        new, runs = [], []
        for version in list_versions(root):
            if version in known:
                continue
            try:
                manifest = verify_version(version, root)
            except GoldenSetError as e:
                context.log.warning(f"golden-set version {version!r} skipped: {e}")
                continue
            new.append(version)
            runs.append(dg.RunRequest(run_key=f"golden_set:{version}:{manifest['content_sha256'][:16]}", partition_key=version,
                                      tags={"golden_set_version": version, "golden_set_source": str(manifest.get("source", ""))}))  # fmt: skip
        if not new:
            return dg.SkipReason(f"no new frozen golden-set version in {root}")
        context.log.info(f"new golden-set version(s): {new}")
        return dg.SensorResult(run_requests=runs, dynamic_partitions_requests=[golden_set_version.build_add_request(new)])

    return _sensor


golden_set_version_sensor = build_golden_set_sensor()


def _latest_metadata(instance: dg.DagsterInstance, key: str, field: str, observed: bool) -> str | None:
    """``field`` of the latest observation (``observed``) or materialization of ``key``; None when there is none."""
    fetch = instance.fetch_observations if observed else instance.fetch_materializations
    records = fetch(dg.AssetKey(key), limit=1).records
    event = records[0].asset_observation if observed and records else records[0].asset_materialization if records else None
    value = event.metadata.get(field) if event is not None else None
    return None if value is None else str(value.value)


@dg.sensor(name="corpus_change_sensor", job_name="test_generation_job", minimum_interval_seconds=30,
           default_status=dg.DefaultSensorStatus.RUNNING,
           description="The corpus_files observation differs from the corpus the golden set was last generated from → "
           "test_generation_job with the campaign file's corpus and generation settings (golden_candidates_sensor then "
           "freezes the new version, new_version_campaign_sensor runs it).")  # fmt: skip
def corpus_change_sensor(context: dg.SensorEvaluationContext):
    """A changed corpus (a new, edited or removed document: ``corpus_files``' content hash, observed on
    ``HCAT_SOURCE_OBSERVE_CRON``) → regenerate the golden set *as the campaign file configures it*. Declarative
    automation cannot pass run config, so generation is sensor-driven rather than ``eager`` (automation.py).
    Stateless: compares the latest observation with the ``corpus_sha256`` the last ``corpus`` materialization
    recorded; the run key (the corpus hash) makes a request at most once per corpus content."""
    from hcat_pipeline.campaign_spec import CampaignFileError, generation_run_config, load_campaign

    observed = _latest_metadata(context.instance, "corpus_files", "sha256", observed=True)
    if observed is None:
        return dg.SkipReason("corpus_files has not been observed yet")
    built = _latest_metadata(context.instance, "corpus", "corpus_sha256", observed=False)
    if observed == built:
        return dg.SkipReason(f"the corpus ({observed[:12]}) is the one the golden set was last generated from")
    try:
        spec = load_campaign()
    except CampaignFileError as e:
        raise dg.Failure(f"corpus changed ({observed[:12]}) but the campaign file cannot be read: {e}") from e
    context.log.info(f"corpus changed: {built and built[:12]} → {observed[:12]}; generating a golden set")
    return dg.RunRequest(run_key=f"generation:{observed[:16]}", run_config=generation_run_config(spec),
                         tags={"corpus_sha256": observed[:16], "campaign": spec.name})  # fmt: skip


@dg.asset_sensor(
    asset_key=dg.AssetKey("golden_candidates"),
    job_name="golden_set_job",
    name="golden_candidates_sensor",
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="New golden_candidates → golden-set version gs-<content hash> (new partition) → golden_set_job for it, "
    "which freezes the version. Unchanged candidates map to the same version: nothing new is run.",
)
def golden_candidates_sensor(context: dg.SensorEvaluationContext, asset_event: dg.EventLogEntry):
    meta = asset_event.asset_materialization.metadata if asset_event.asset_materialization else {}
    sha = meta.get("candidates_sha256")
    if sha is None:
        return dg.SkipReason("golden_candidates materialization carries no candidates_sha256")
    version = f"gs-{sha.value[:12]}"
    if context.instance.has_dynamic_partition(golden_set_version.name, version):
        return dg.SkipReason(f"golden-set version {version} already exists")
    return dg.SensorResult(
        run_requests=[dg.RunRequest(run_key=f"candidates:{version}", partition_key=version, tags={"golden_set_version": version})],
        dynamic_partitions_requests=[golden_set_version.build_add_request([version])],
    )


@dg.asset_sensor(
    asset_key=dg.AssetKey("golden_set"),
    job_name="campaign_run_job",
    name="new_version_campaign_sensor",
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="A golden-set version frozen for the first time → tonight's campaign run of it (systems from the "
    "campaign file), without waiting for the nightly schedule.",
)
def new_version_campaign_sensor(context: dg.SensorEvaluationContext, asset_event: dg.EventLogEntry):
    from hcat_pipeline.campaign_spec import campaign_run_config, load_campaign
    from hcat_pipeline.partitions import campaign_run_key

    mat = asset_event.asset_materialization
    meta = mat.metadata if mat else {}
    if not mat or not mat.partition or not getattr(meta.get("frozen_in_this_run"), "value", False):
        return dg.SkipReason("golden_set materialization did not freeze a new version")
    version, night = mat.partition, tonight()
    return dg.RunRequest(run_key=f"campaign:{version}|{night}", partition_key=campaign_run_key(version, night),
                         run_config=campaign_run_config(load_campaign()), tags={"golden_set_version": version, "night": night})


def build_label_file_sensor(labels_dir: str | None = None, name: str = "label_file_sensor", settle_s: float = 60.0):
    """New or changed label file (CSV / JSONL / Parquet) in ``labels_dir`` (default ``HCAT_LABELS_DIR`` /
    data/labels) → ``labels_job`` (import into the label store, refit the calibrators). The cursor holds
    each file's SHA-256; an exported review queue nobody has filled in yet requests nothing. The review
    page's files (``review-page_<rater>.jsonl``, a line per label) count once they have been quiet for
    ``settle_s``: a labelling session asks for one refit when the reviewer pauses, not one per tick."""

    @dg.sensor(name=name, job_name="labels_job", minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
               description="New or changed label file in data/labels/ → labels_job (import + recalibrate).")  # fmt: skip
    def _sensor(context: dg.SensorEvaluationContext):
        import hashlib
        import json
        import time

        from hcat_pipeline.assets.labels import LABELS_DIR, label_files
        from hcat_pipeline.calibration.labels import read_label_file
        from hcat_pipeline.review.labelling import PAGE_FILE_PREFIX

        root = Path(labels_dir or os.environ.get("HCAT_LABELS_DIR") or LABELS_DIR)
        seen = json.loads(context.cursor) if context.cursor else {}
        now, changed = {}, []
        for path in label_files(root):
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            now[path.name] = sha
            if seen.get(path.name) == sha:
                continue
            if path.name.startswith(PAGE_FILE_PREFIX) and time.time() - path.stat().st_mtime < settle_s:
                now[path.name] = seen.get(path.name, "")  # still being labelled: looked at again next tick
                continue
            good, errors, pending = read_label_file(path, return_pending=True)
            if pending and not good.height and not errors.height:
                continue  # a blank review queue: nothing to import yet
            changed.append(f"{path.name}:{sha[:12]}")
        context.update_cursor(json.dumps(now, sort_keys=True))
        if not changed:
            return dg.SkipReason(f"no new or changed label file in {root}")
        key = hashlib.sha256("|".join(sorted(changed)).encode()).hexdigest()[:16]
        return dg.RunRequest(run_key=f"labels:{key}", tags={"label_files": ",".join(sorted(changed))[:200]})

    return _sensor


label_file_sensor = build_label_file_sensor()


def build_violation_file_sensor(folder: str | None = None, name: str = "violation_file_sensor"):
    """A new or changed ``*.jsonl`` in ``folder`` (default ``HCAT_VIOLATIONS_DIR`` / data/violations: the ground truth
    and one file per checker version) → ``violation_job`` on that folder. The cursor holds each file's SHA-256; a
    folder without ``ground_truth.jsonl`` requests nothing (and says so)."""

    @dg.sensor(name=name, job_name="violation_job", minimum_interval_seconds=30, default_status=dg.DefaultSensorStatus.RUNNING,
               description="New or changed checker-version predictions in data/violations/ → violation_job (re-run the matching).")  # fmt: skip
    def _sensor(context: dg.SensorEvaluationContext):
        import hashlib
        import json

        from hcat_pipeline.metrics.violation_files import GROUND_TRUTH_FILE
        from hcat_pipeline.paths import DATA_DIR

        root = Path(folder or os.environ.get("HCAT_VIOLATIONS_DIR") or DATA_DIR / "violations")
        if not (root / GROUND_TRUTH_FILE).is_file():
            return dg.SkipReason(f"no {GROUND_TRUTH_FILE} in {root}: nothing to match against")
        seen = json.loads(context.cursor) if context.cursor else {}
        now = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.glob("*.jsonl"))}
        changed = sorted(f"{n}:{sha[:12]}" for n, sha in now.items() if seen.get(n) != sha)
        context.update_cursor(json.dumps(now, sort_keys=True))
        if not changed:
            return dg.SkipReason(f"no new or changed violation file in {root}")
        key = hashlib.sha256("|".join(changed).encode()).hexdigest()[:16]
        return dg.RunRequest(run_key=f"violations:{key}", run_config={"ops": {"violation_campaign": {"config": {"folder": str(root)}}}},
                             tags={"violation_files": ",".join(changed)[:200]})  # fmt: skip

    return _sensor


violation_file_sensor = build_violation_file_sensor()

def build_production_log_sensor(campaign_file: str | None = None, name: str = "production_log_sensor"):
    """A day's log file of the monitored service appearing or changing (the campaign file's ``monitoring: paths``, the day in
    the file's name) → ``monitoring_job`` for that ``production_day`` partition, with the section as run config. The cursor
    holds each file's size and modification time; days are requested oldest first (the anomaly tests read earlier days)."""

    @dg.sensor(name=name, job_name="monitoring_job", minimum_interval_seconds=60, default_status=dg.DefaultSensorStatus.RUNNING,
               description="A new or changed day of the monitored service's logs → monitoring_job for that day (ingest, sample, "
               "score, anomalies, report).")  # fmt: skip
    def _sensor(context: dg.SensorEvaluationContext):
        import hashlib
        import json

        from hcat_pipeline.campaign_monitoring import monitoring_run_config
        from hcat_pipeline.campaign_spec import CampaignFileError, load_campaign
        from hcat_pipeline.monitoring.logs import days_in
        from hcat_pipeline.partitions import FIRST_NIGHT

        try:
            spec = load_campaign(campaign_file).monitoring
        except CampaignFileError as e:
            return dg.SkipReason(f"the campaign file cannot be read: {e}")
        if spec is None:
            return dg.SkipReason("the campaign file has no monitoring: section")
        seen = json.loads(context.cursor) if context.cursor else {}
        now, runs = {}, []
        found = days_in(spec.paths, spec.fields.day_pattern, spec.fields)
        try:  # a database's days run once each (a table is not watched for changes the way a file is)
            sql_days = spec.sql_source().days() if spec.sql is not None else []
        except ValueError as e:
            context.log.warning(f"monitoring sql: {e}")
            sql_days = []
        for day in sql_days:
            found.setdefault(day, [])
        for day, files in sorted(found.items()):
            stamp = "|".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files) or f"sql:{day}"
            now[day] = hashlib.sha256(stamp.encode()).hexdigest()[:16]
            if seen.get(day) == now[day]:
                continue
            if day < FIRST_NIGHT or day > tonight():
                context.log.warning(f"log day {day} is outside the production_day partitions ({FIRST_NIGHT} … today): skipped")
                continue
            runs.append(dg.RunRequest(run_key=f"monitor:{day}:{now[day]}", partition_key=day, run_config=monitoring_run_config(spec),
                                      tags={"service": spec.service, "production_day": day}))  # fmt: skip
        context.update_cursor(json.dumps(now, sort_keys=True))
        return runs or dg.SkipReason(f"no new or changed day of {spec.service}'s logs")

    return _sensor


production_log_sensor = build_production_log_sensor()

def build_judge_recheck_sensor(warehouse: str | None = None, campaign_file: str | None = None, name: str = "judge_recheck_sensor"):
    """``judge_validation_job`` again once enough new human labels have arrived since the judge was last validated, or a
    week has passed (``judge.recheck.recheck_due``): a judge's ``validated`` never goes stale silently. Skips while the
    campaign's judge is off; the run key is the last validation's time, so one re-check is asked per validation."""

    @dg.sensor(name=name, job_name="judge_validation_job", minimum_interval_seconds=300, default_status=dg.DefaultSensorStatus.RUNNING,
               description="Re-validate the LLM judge against people when enough new labels arrived or a week passed (§5.6).")  # fmt: skip
    def _sensor(context: dg.SensorEvaluationContext):
        import datetime as dt

        import polars as pl

        from hcat_pipeline.campaign_spec import CampaignFileError, load_campaign
        from hcat_pipeline.judge.recheck import recheck_due
        from hcat_pipeline.paths import WAREHOUSE_DIR

        try:
            enabled = load_campaign(campaign_file).judge.enabled
        except (CampaignFileError, OSError) as e:
            return dg.SkipReason(f"the campaign file cannot be read: {e}")
        if enabled == "off":
            return dg.SkipReason("the campaign's judge is off: nothing to re-check")
        wh = Path(warehouse or WAREHOUSE_DIR)
        table = wh / "judge_validation.parquet"
        v = pl.read_parquet(table) if table.is_file() else None
        last = v["validated_at"].drop_nulls().max() if v is not None and "validated_at" in v.columns else None
        then = int(v["n_design_labels"].drop_nulls().max() or 0) if v is not None and "n_design_labels" in v.columns else 0
        labels = wh / "human_labels.parquet"
        now_n = pl.scan_parquet(labels).select(pl.len()).collect().item() if labels.is_file() else 0
        why = recheck_due(last, then, now_n, dt.datetime.now(dt.UTC))
        if why is None:
            return dg.SkipReason(f"judge validated {str(last)[:10]} on {then} label(s); {now_n} now: not due")
        return dg.RunRequest(run_key=f"judge-recheck:{last or 'never'}:{now_n // 20}", tags={"why": why[:200]})

    return _sensor


judge_recheck_sensor = build_judge_recheck_sensor()

SENSORS = [corpus_change_sensor, golden_set_version_sensor, golden_candidates_sensor, new_version_campaign_sensor, label_file_sensor,
           violation_file_sensor, production_log_sensor, judge_recheck_sensor]
