"""Jobs: the nightly campaign materializes the whole lineage."""

import dagster as dg

ingest_job = dg.define_asset_job(
    "ingest_job", selection=dg.AssetSelection.groups("corpus", "embeddings"), description="corpus → chunks → embeddings"
)

nightly_campaign = dg.define_asset_job(
    "nightly_campaign",
    # nli_head (retraining the NLI head on the corpus) is on demand, not nightly: the shipped head is used
    selection=dg.AssetSelection.all() - dg.AssetSelection.assets("golden_set").downstream() - dg.AssetSelection.assets("nli_head"),
    description="Every unpartitioned stage (corpus → … → golden_candidates); golden_candidates_sensor then freezes "
    "the version and runs golden_set_job for it.",
)

from hcat_pipeline.partitions import golden_set_version  # noqa: E402

test_generation_job = dg.define_asset_job(
    "test_generation_job",
    selection=dg.AssetSelection.assets("golden_candidates").upstream().required_multi_asset_neighbors(),
    description="HCAT §2: corpus → strata → sampled chunks → generated / selected queries → robustness cases → golden_candidates.",
)

golden_set_job = dg.define_asset_job(
    "golden_set_job",
    selection=dg.AssetSelection.assets("golden_set").downstream(),
    partitions_def=golden_set_version,
    description="One golden-set version: load (or freeze) it and run everything downstream (responses, metrics …).",
)

responses_job = dg.define_asset_job(
    "responses_job",
    selection=dg.AssetSelection.groups("responses"),
    partitions_def=golden_set_version,
    description="Systems under test on a frozen golden-set version: rag_responses (resumes from its checkpoints) → "
    "retrieval_metrics. Systems and size come from the rag_responses run config.",
)
