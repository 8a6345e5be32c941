"""Jobs. Generation (golden set) is on demand; the nightly evaluation is ``campaign_run_job``."""

import dagster as dg

from hcat_pipeline.partitions import campaign_run, golden_set_version, production_day

ingest_job = dg.define_asset_job(
    "ingest_job", selection=dg.AssetSelection.groups("corpus", "embeddings"), description="corpus → chunks → embeddings"
)

test_generation_job = dg.define_asset_job(
    "test_generation_job",
    selection=dg.AssetSelection.assets("golden_candidates").upstream().required_multi_asset_neighbors(),
    description="HCAT §2, on demand (or when the corpus changes): corpus → strata → sampled chunks → generated / "
    "selected queries → robustness cases → golden_candidates; golden_candidates_sensor then freezes a new version.",
)

golden_set_job = dg.define_asset_job(
    "golden_set_job",
    selection=dg.AssetSelection.assets("golden_set"),
    partitions_def=golden_set_version,
    description="Freeze (first time) or verify one golden-set version.",
)

campaign_run_job = dg.define_asset_job(
    "campaign_run_job",
    # + the label store and the scored reference sets, so calibrated_scores has calibrators on a fresh machine
    selection=dg.AssetSelection.assets("rag_responses").downstream() | dg.AssetSelection.assets("human_labels", "reference_label_scores"),
    partitions_def=campaign_run,
    description="One campaign run (golden-set version × night): the campaign's systems answer the version's cases "
    "(resuming this night's checkpoint; http / API systems asked again), then everything downstream — retrieval "
    "metrics, behaviour checks, metric tables, bias report, gates, weakness report and the HTML campaign report "
    "(data/reports/<version>/<night>/report.html). The systems come from the campaign file.",
)

responses_job = dg.define_asset_job(
    "responses_job",
    selection=dg.AssetSelection.groups("responses"),
    partitions_def=campaign_run,
    description="Only the systems' answers and retrieval metrics of one campaign run.",
)

exam_job = dg.define_asset_job(
    "exam_job",
    selection=dg.AssetSelection.groups("exam"),
    description="Exam paper, on demand: exam_candidates → exam (frozen under data/exams/<version>/) → exam_responses "
    "(every campaign system × ICL 0/1/2, checkpointed) → irt_model → exam_report, exam_topics; exam_chunking (the campaign "
    "file's two exam_chunkings compared).",
)

labels_job = dg.define_asset_job(
    "labels_job",
    selection=dg.AssetSelection.assets("human_labels", "calibrators", "metric_validity"),
    description="New or changed label file in data/labels/ (label_file_sensor): import it into the label store and refit the "
    "calibrators (campaign labels take over a dimension once sufficient); the next campaign run's calibrated_scores use them.",
)

violation_job = dg.define_asset_job(
    "violation_job",
    selection=dg.AssetSelection.assets("violation_campaign").required_multi_asset_neighbors(),
    description="Violation-match deck: a new or changed checker version's predictions (or ground truth) in data/violations/ "
    "(violation_file_sensor) → match every checker version against the ground truth: match score, P / R / F1 with CIs.",
)

monitoring_job = dg.define_asset_job(
    "monitoring_job",
    selection=dg.AssetSelection.groups("monitoring"),
    partitions_def=production_day,
    description="Production monitoring, one day of the service's logs (golden-eval §7): ingest (rejected rows named) → "
    "stratified sample scored with the nights' metrics, masked → anomalies (acute, per stratum, drift, input drift) as asset "
    "checks → the day's report, review queue and the history page. production_log_sensor requests it when a day's file appears.",
)

judge_validation_job = dg.define_asset_job(
    "judge_validation_job",
    selection=dg.AssetSelection.assets("judge_validation"),
    description="The LLM judge against held-out and campaign human labels (κ per dimension): on demand, and when "
    "judge_recheck_sensor finds enough new labels or a week passed since the last validation (golden-eval §5.6).",
)

JOBS = [ingest_job, test_generation_job, golden_set_job, campaign_run_job, responses_job, exam_job, labels_job, violation_job, monitoring_job,
        judge_validation_job]
