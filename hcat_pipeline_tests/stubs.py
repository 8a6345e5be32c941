"""Stub upstream assets and helpers the asset tests share, declared once: a tiny golden set of three cases over four
chunks (one campaign run = ``VERSION`` × ``NIGHT``), ``run`` / ``load`` to materialize the responses stage on them,
and ``TablesIO``, an IO manager serving synthetic upstream tables."""

import dagster as dg
import polars as pl

from hcat_pipeline.assets.behaviour import behaviour_checks
from hcat_pipeline.assets.responses import rag_responses, retrieval_metrics
from hcat_pipeline.io import PolarsParquetIOManager
from hcat_pipeline.partitions import campaign_run_key, golden_set_version
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.resources.nli import NLIModel
from hcat_pipeline.resources.pii import PIIDetector
from hcat_pipeline.schemas import GOLDEN_SET


def stub_asset(name: str, table, partitions_def=None) -> dg.AssetsDefinition:
    """A stand-in upstream asset named ``name`` returning ``table`` (a frame, or a zero-argument function giving one):
    the one declaration of a stub every asset test uses for the tables upstream of the asset it tests."""

    @dg.asset(name=name, partitions_def=partitions_def)
    def _stub() -> pl.DataFrame:
        return table() if callable(table) else table

    return _stub


VERSION = "v-test"
NIGHT = "2026-11-20"
RUN = f"{VERSION}|{NIGHT}"  # the stored partition key (MultiPartitionKey string form)
CHUNKS = {
    "c_tuple": "Tuples are immutable sequences: once a tuple is created its items cannot be changed.",
    "c_loop": "The while statement repeats the execution of a suite as long as an expression is true.",
    "c_exc": "The raise statement raises an exception; a try statement with except clauses handles it.",
    "c_dict": "A dictionary maps hashable keys to values; looking up a missing key raises KeyError.",
}


def golden_frame() -> pl.DataFrame:
    rows = [
        dict(case_id="g1", category="happy_path", query="Can the items of a tuple be changed after it is created?",
             reference_answer="No, tuples are immutable.", expected_behavior="answer", source_chunk_ids=["c_tuple"]),
        dict(case_id="g2", category="adversarial", query="What happens when you look up a missing key in a dictionary?",
             reference_answer="A KeyError is raised.", expected_behavior="answer", source_chunk_ids=["c_dict"],
             distractor_passage="Looking up a missing dictionary key returns None silently."),
        dict(case_id="g3", category="out_of_scope", query="Who won the football world cup in 1998?",
             reference_answer=None, expected_behavior="abstain", source_chunk_ids=[]),
    ]
    full = []
    for r in rows:
        base = {c: None for c in GOLDEN_SET}
        base.update(version=VERSION, tags=[], options=[], constraints=[], seed=0, **r)
        full.append(base)
    return pl.DataFrame(full, schema=GOLDEN_SET)


def chunks_frame() -> pl.DataFrame:
    return pl.DataFrame({"chunk_id": list(CHUNKS), "doc_id": ["d"] * len(CHUNKS), "text": list(CHUNKS.values())})


golden_set_stub = stub_asset("golden_set", golden_frame, golden_set_version)
chunks_stub = stub_asset("chunks", chunks_frame)


@dg.asset(name="chunk_embeddings")
def chunk_embeddings_stub(embedding_model: EmbeddingModel) -> pl.DataFrame:
    v = embedding_model.embed(list(CHUNKS.values()))
    return pl.DataFrame({"chunk_id": list(CHUNKS), "embedding": pl.Series(v, dtype=pl.Array(pl.Float32, v.shape[1]))})


def run(tmp_path, embedding_model, llm, config=None, select=("golden_set", "chunks", "chunk_embeddings", "rag_responses"),
        raise_on_error=True, night=NIGHT):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("golden_set_version", [VERSION])
    campaign = {"systems": [{"system_id": "bm25", "retriever": "bm25"}, {"system_id": "dense", "retriever": "dense"},
                            {"system_id": "oracle", "retriever": "oracle"}, {"system_id": "hybrid", "retriever": "hybrid"},
                            {"system_id": "closed_book", "retriever": "closed_book", "prompt": "rag_closed_book_v1"}],
                **(config or {})}  # fmt: skip
    cfg = {"checkpoint_dir": str(tmp_path / "ckpt"), "import_dir": str(tmp_path / "imports"), "campaign": campaign}
    assets = [golden_set_stub, chunks_stub, chunk_embeddings_stub, rag_responses, retrieval_metrics, behaviour_checks]
    gs = dg.materialize([golden_set_stub], partition_key=VERSION, instance=instance,
                        resources={"io_manager": PolarsParquetIOManager(base_dir=str(tmp_path / "wh"))})
    assert gs.success
    select = [a for a in select if a != "golden_set"]
    return dg.materialize(
        assets, selection=list(select), partition_key=campaign_run_key(VERSION, night), instance=instance, raise_on_error=raise_on_error,
        resources={"io_manager": PolarsParquetIOManager(base_dir=str(tmp_path / "wh")), "embedding_model": embedding_model, "multilingual_encoder": MultilingualEncoder(cache_dir=embedding_model.cache_dir), "llm": llm,
                   "nli_model": NLIModel(), "pii_detector": PIIDetector()},
        run_config={"ops": {"rag_responses": {"config": cfg}}} if "rag_responses" in select else None,
    )


def load(tmp_path, name, key=RUN) -> pl.DataFrame:
    version, night = key.split("|")
    return pl.read_parquet(tmp_path / "wh" / name / version / f"{night}.parquet")


class TablesIO(dg.IOManager):
    """Serves synthetic upstream tables and keeps what the assets write."""

    def __init__(self, tables):
        self.tables, self.written = tables, {}

    def handle_output(self, context, obj):
        self.written[context.asset_key.to_user_string()] = obj

    def load_input(self, context):
        key = context.asset_key.to_user_string()
        table = self.written.get(key, self.tables.get(key))
        wants_scan = getattr(context.dagster_type, "typing_type", None) is pl.LazyFrame  # as the project's IO manager does
        return table.lazy() if wants_scan and isinstance(table, pl.DataFrame) else table

