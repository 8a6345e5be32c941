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


def test_step_frames_go_to_parquet_and_come_back_as_scans_and_a_lazy_asset_is_streamed(warehouse):
    # a graph asset whose steps hand frames to each other: each shard's frame is a Parquet file beside its pickle, the
    # merge gets scans (nothing read yet) and returns a LazyFrame the IO manager streams to the asset's file
    seen = {}

    @dg.op(out=dg.DynamicOut(dict))
    def plan():
        for i in range(3):
            yield dg.DynamicOutput({"i": i, "rows": pl.DataFrame({"i": [i] * 2, "x": [i * 10, i * 10 + 1]})}, mapping_key=f"s{i}")

    @dg.op
    def work(part: dict) -> dict:
        seen.setdefault("work", []).append(type(part["rows"]))
        return {"i": part["i"], "frame": part["rows"].with_columns(y=pl.col("x") * 2)}

    @dg.op
    def merge(parts: list) -> pl.LazyFrame:
        seen["merge"] = [type(p["frame"]) for p in parts]
        return pl.concat([p["frame"] for p in sorted(parts, key=lambda p: p["i"])])

    @dg.graph_asset
    def merged() -> pl.DataFrame:
        return merge(plan().map(work).collect())

    @dg.asset
    def reader(merged: pl.LazyFrame) -> pl.DataFrame:
        seen["reader"] = type(merged)
        return merged.select("y").collect()

    res = dg.materialize([merged, reader], resources={"io_manager": PolarsParquetIOManager(base_dir=str(warehouse))})
    assert res.success
    assert seen["work"] == [pl.LazyFrame] * 3 and seen["merge"] == [pl.LazyFrame] * 3 and seen["reader"] is pl.LazyFrame
    assert pl.read_parquet(warehouse / "merged.parquet").to_dicts() == [{"i": i, "x": x, "y": 2 * x} for i in range(3) for x in (i * 10, i * 10 + 1)]
    assert pl.read_parquet(warehouse / "reader.parquet")["y"].to_list() == [0, 2, 20, 22, 40, 42]
    assert res.asset_materializations_for_node("merged")[0].metadata["rows"].value == 6
    step_frames = sorted(p.name for p in (warehouse / "_steps").rglob("*.parquet"))
    assert len(step_frames) == 6 and all(n.endswith((".rows.parquet", ".frame.parquet")) for n in step_frames)


def test_a_scan_of_an_unreadable_table_fails_at_once_with_the_asset_named(warehouse):
    @dg.asset
    def broken() -> pl.DataFrame:
        return pl.DataFrame({"a": [1]})

    @dg.asset
    def lazy_reader(broken: pl.LazyFrame) -> pl.DataFrame:
        return broken.collect()

    io = PolarsParquetIOManager(base_dir=str(warehouse))
    assert dg.materialize([broken], resources={"io_manager": io}).success
    (warehouse / "broken.parquet").write_bytes(b"not parquet at all")
    res = dg.materialize([broken, lazy_reader], selection=[lazy_reader], resources={"io_manager": io}, raise_on_error=False)
    assert not res.success
    err, msgs = res.get_step_failure_events()[0].event_specific_data.error, []
    while err is not None:
        msgs.append(err.message)
        err = err.cause
    message = " ".join(msgs)
    assert "broken.parquet" in message and "unreadable" in message and "re-materialize broken" in message
