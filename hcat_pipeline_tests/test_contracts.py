"""Table contracts (hcat_pipeline.contracts) and their asset checks: every stored table has one, visible as a blocking
``contract`` check on its asset; a broken table fails it (a failure of the run, not a release verdict)."""

import dagster as dg
import polars as pl
import pytest

from hcat_pipeline import schemas
from hcat_pipeline.assets.contracts import CONTRACT_CHECK, contract_checks
from hcat_pipeline.console import is_release_verdict
from hcat_pipeline.contracts import CONTRACTS, Contract, contract_problems
from hcat_pipeline.definitions import defs
from hcat_pipeline_tests.stubs import stub_asset

NO_TABLE = {"nli_head", "exam_report"}  # a JSON head file and a report in metadata: no table to check


def test_every_stored_table_has_a_contract_checked_by_a_blocking_asset_check():
    graph = defs.resolve_asset_graph()
    tables = {k.to_user_string() for k in graph.get_all_asset_keys() if graph.get(k).is_materializable} - NO_TABLE
    assert tables == set(CONTRACTS), (sorted(tables - set(CONTRACTS)), sorted(set(CONTRACTS) - tables))
    checks = {k.asset_key.to_user_string() for k in graph.asset_check_keys if k.name == CONTRACT_CHECK}
    assert checks == tables
    spec = next(s for c in defs.asset_checks for s in c.check_specs if s.asset_key == dg.AssetKey("rag_responses") and s.name == CONTRACT_CHECK)
    assert spec.blocking


CHUNKS = Contract({"chunk_id": pl.String, "text": pl.String, "n_tokens": pl.Int32}, ("chunk_id",), ("text",))


def test_contract_problems_name_each_way_a_table_breaks_its_contract():
    good = pl.DataFrame({"chunk_id": ["a", "b"], "text": ["x", "y"], "n_tokens": pl.Series([1, 2], dtype=pl.Int32), "extra": [0, 0]})
    assert contract_problems(good, CHUNKS) == []  # extra columns are allowed
    bad = pl.DataFrame({"chunk_id": ["a", "a", None], "text": ["x", None, "z"], "n_tokens": [1, 2, 3]})
    problems = contract_problems(bad, CHUNKS)
    assert "column 'n_tokens' is Int64, the contract says Int32" in problems
    assert any("share a key ('chunk_id',)" in p for p in problems)
    assert "1 null(s) in 'chunk_id', which is never null" in problems and "1 null(s) in 'text', which is never null" in problems
    assert contract_problems(bad.drop("text"), CHUNKS)[0] == "missing column 'text'"


@pytest.mark.parametrize("broken", [False, True])
def test_a_broken_table_fails_its_contract_check_and_stops_what_reads_it(tmp_path, broken):
    from hcat_pipeline.io import PolarsParquetIOManager

    ids = ["a", "a"] if broken else ["a", "b"]
    chunks_stub = stub_asset("chunks", pl.DataFrame({"chunk_id": ids, "doc_id": ["d", "d"], "chunk_index": [0, 1], "start": [0, 2],
                                                     "end": [1, 3], "n_tokens": [1, 1], "text": ["x", "y"], "title": [None, None]}, schema=schemas.CHUNKS))  # fmt: skip

    @dg.asset
    def reader(chunks: pl.DataFrame) -> pl.DataFrame:
        return chunks.select("chunk_id")

    checks = contract_checks([chunks_stub])
    result = dg.materialize([chunks_stub, reader, *checks], raise_on_error=False,
                            resources={"io_manager": PolarsParquetIOManager(base_dir=str(tmp_path))})  # fmt: skip
    (evaluation,) = result.get_asset_check_evaluations()
    assert evaluation.passed is not broken
    assert result.success is not broken
    materialized = {m.asset_key.to_user_string() for m in result.get_asset_materialization_events()}
    assert ("reader" in materialized) is not broken  # a blocking check: the reader never sees a broken table
    if broken:
        assert "row(s) share a key" in str(evaluation.metadata["problems"].value)
        failure = next(e for e in result.all_events if e.is_step_failure)
        assert failure.step_key == "chunks_contract"
        assert not is_release_verdict(failure.event_specific_data.error.message, failure.step_key)  # a broken stage, not a verdict
