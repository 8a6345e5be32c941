"""The exam's takers (exam paper §4, Table 3): every campaign system on its own LLM at each ICL level, over an index —
shared by ``exam_responses`` (the stored chunks) and ``exam_chunking`` (each chunking's). (No
`from __future__ import annotations`: an asset-package module.)"""

import dagster as dg
import polars as pl

from hcat_pipeline.assets._llms import system_llms
from hcat_pipeline.campaign_spec import CampaignFileError, load_campaign
from hcat_pipeline.exam.taking import ExamTaker, TakerSpec
from hcat_pipeline.resources.embedding import EmbeddingModel
from hcat_pipeline.resources.llm import LLM
from hcat_pipeline.resources.multilingual import MultilingualEncoder
from hcat_pipeline.responses.campaign_run import index_fingerprint
from hcat_pipeline.responses.rerank import llm_relevance
from hcat_pipeline.responses.retrieval import build_retriever


def exam_takers(config, llm: LLM, embedding_model: EmbeddingModel, multilingual: MultilingualEncoder,
                exam: pl.DataFrame, index: pl.DataFrame):
    """LLM × retriever × ICL (exam paper §4, Table 3): every campaign system on its own LLM at each ICL level."""
    try:
        spec = load_campaign(config.campaign_file)
    except CampaignFileError as e:
        raise dg.Failure(str(e)) from None
    systems = [s for s in spec.systems if s.http is None]
    llms = system_llms(spec, llm)
    all_loglik = all(llms[s.system_id].client.supports_logprobs for s in systems)
    mode = config.mode if config.mode != "auto" else ("loglik" if all_loglik else "letter")
    if mode == "loglik" and not all_loglik:
        raise dg.Failure(f"exam_responses: mode loglik needs local models; the systems' LLMs are "
                         f"{sorted({i.llm_id for i in llms.values()})}")  # fmt: skip
    ids, texts, matrix = index["chunk_id"].to_list(), index["text"].to_list(), index["embedding"].to_numpy()
    ihash = index_fingerprint(ids, texts, embedding_model.model_id)
    second, use_hash = None, None
    if any(s.retriever == "dense_use" for s in systems):  # the second dense encoder (exam paper §4.2): USE-M3
        vectors, use_embed, use_model = multilingual.dense_index(texts)
        second, use_hash = (vectors, use_embed), index_fingerprint(ids, texts, use_model)
    pool = [{**r, "case_id": r["question_id"], "reference_answer": r["answer"], "expected_behavior": "answer"} for r in exam.to_dicts()]
    cache, takers = {}, []
    skipped = [s.system_id for s in spec.systems if s.http is not None]
    for s in systems:
        info = llms[s.system_id]
        rerank = llm_relevance(info.client) if s.retriever == "hybrid_rerank" else None
        retriever = build_retriever(s.retriever, ids, texts, matrix, embedding_model.embed, cache, second, rerank)
        for icl in config.icl_levels:
            ts = TakerSpec(f"{s.system_id}@icl{icl}", s.retriever, s.top_k, int(icl), config.seed)
            takers.append(ExamTaker(ts, retriever, info.client, info.llm_id, info.fingerprint, mode, pool,
                                    use_hash if s.retriever == "dense_use" else f"{ihash}+{rerank.prompt_hash}" if rerank else ihash))
    return takers, skipped, mode
