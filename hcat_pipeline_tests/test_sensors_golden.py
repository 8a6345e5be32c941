import json
import shutil

import dagster as dg
import polars as pl

from hcat_pipeline.corpus.content_hash import file_sha256
from hcat_pipeline.golden.cases import cases_frame, freeze_version, new_case
from hcat_pipeline.sensors import build_golden_set_sensor


def _frame():
    return cases_frame(
        [
            new_case(category="happy_path", query_type="simple", query="What does pass do?", reference_answer="Nothing.",
                     expected_behavior="answer", source_chunk_ids=["c1"]),
            new_case(category="out_of_scope", query="Capital of Mongolia?", expected_behavior="abstain", constraints=["must abstain"]),
        ]
    )  # fmt: skip


def test_sensor_adds_partition_for_hand_dropped_version(tmp_path):
    # a person curates a version elsewhere and drops the directory in by hand, manifest written by hand
    staging = tmp_path / "staging"
    freeze_version(_frame(), "curated-7", staging)
    golden = tmp_path / "golden_sets"
    golden.mkdir()
    vdir = golden / "curated-7"
    vdir.mkdir()
    shutil.copy(staging / "curated-7" / "golden_set.parquet", vdir / "golden_set.parquet")
    (vdir / "manifest.json").write_text(
        json.dumps({"version": "curated-7", "file": "golden_set.parquet", "content_sha256": file_sha256(vdir / "golden_set.parquet"), "source": "hand"})
    )
    # and a broken one: its file does not match the manifest
    bad = golden / "broken"
    bad.mkdir()
    pl.DataFrame({"x": [1]}).write_parquet(bad / "golden_set.parquet")
    (bad / "manifest.json").write_text(json.dumps({"file": "golden_set.parquet", "content_sha256": "0" * 64}))

    sensor = build_golden_set_sensor(str(golden))
    with dg.instance_for_test() as instance:
        with dg.build_sensor_context(instance=instance) as ctx:
            result = sensor(ctx)
        assert isinstance(result, dg.SensorResult)
        assert [r.partition_key for r in result.run_requests] == ["curated-7"]
        assert result.run_requests[0].run_key.startswith("golden_set:curated-7:")
        (add,) = result.dynamic_partitions_requests
        assert add.partition_keys == ["curated-7"] and add.partitions_def_name == "golden_set_version"
        # once the partition exists, nothing new is requested
        instance.add_dynamic_partitions("golden_set_version", ["curated-7"])
        with dg.build_sensor_context(instance=instance) as ctx:
            assert isinstance(sensor(ctx), dg.SkipReason)
