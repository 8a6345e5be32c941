import dagster as dg
import polars as pl
import pytest

from hcat_pipeline.io import PolarsParquetIOManager, write_parquet_atomic
from hcat_pipeline.partitions import golden_set_version


@dg.asset(partitions_def=golden_set_version)
def per_version(context) -> pl.DataFrame:
    return pl.DataFrame({"v": [context.partition_key], "x": [len(context.partition_key)]})


@dg.asset(ins={"per_version": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def all_as_dict(per_version: dict) -> pl.DataFrame:
    return pl.DataFrame({"keys": sorted(per_version)})


@dg.asset(ins={"per_version": dg.AssetIn(partition_mapping=dg.AllPartitionMapping())})
def all_as_frame(per_version: pl.DataFrame) -> pl.DataFrame:
    return per_version.sort("partition")


def test_partitions_roundtrip_single_dict_and_concat(warehouse):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", ["v1", "v2"])
    io = PolarsParquetIOManager(base_dir=str(warehouse))
    for v in ("v1", "v2"):
        assert dg.materialize([per_version], partition_key=v, instance=instance, resources={"io_manager": io}).success
    assert (warehouse / "per_version" / "v1.parquet").exists()
    res = dg.materialize([per_version, all_as_dict, all_as_frame], selection=[all_as_dict, all_as_frame], instance=instance, resources={"io_manager": io})
    assert res.success
    assert pl.read_parquet(warehouse / "all_as_dict.parquet")["keys"].to_list() == ["v1", "v2"]
    frame = pl.read_parquet(warehouse / "all_as_frame.parquet")
    assert frame["partition"].to_list() == ["v1", "v2"] and frame["v"].to_list() == ["v1", "v2"]


def test_failed_write_leaves_previous_table_intact(tmp_path, monkeypatch):
    path = tmp_path / "t.parquet"
    write_parquet_atomic(pl.DataFrame({"a": [1, 2]}), path)

    def boom(self, file, **kw):
        with open(file, "wb") as f:
            f.write(b"half")
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", boom)
    with pytest.raises(OSError):
        write_parquet_atomic(pl.DataFrame({"a": [9]}), path)
    monkeypatch.undo()
    assert pl.read_parquet(path)["a"].to_list() == [1, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["t.parquet"], "no temp file left behind"


def test_missing_upstream_gives_clear_error(warehouse):
    @dg.asset
    def up() -> pl.DataFrame:
        return pl.DataFrame({"a": [1]})

    @dg.asset
    def down(up: pl.DataFrame) -> pl.DataFrame:
        return up

    res = dg.materialize([up, down], selection=[down], resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse))}, raise_on_error=False)
    assert not res.success
    err, msgs = res.get_step_failure_events()[0].event_specific_data.error, []
    while err is not None:
        msgs.append(err.message)
        err = err.cause
    assert "no stored table" in " ".join(msgs) and "materialize it first" in " ".join(msgs)
