"""Jobs: the nightly campaign materializes the whole lineage."""

import dagster as dg

ingest_job = dg.define_asset_job(
    "ingest_job", selection=dg.AssetSelection.groups("corpus", "embeddings"), description="corpus → chunks → embeddings"
)

nightly_campaign = dg.define_asset_job(
    "nightly_campaign",
    selection=dg.AssetSelection.all(),
    description="The whole evaluation campaign on the configured corpus and models.",
)
