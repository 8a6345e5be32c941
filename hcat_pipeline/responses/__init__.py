"""Lineage stage: RAG responses — the systems under test answer a frozen golden set (exam-generation paper §3.1, §4.2;
golden-eval §4, §10). Its face is ``hcat_pipeline/assets/responses.py`` (``rag_responses``, ``retrieval_metrics``).

* ``rag`` — a system's configuration (``SystemConfig``, the one field list the campaign file's ``SystemSpec`` derives
  from), prompts, in-context examples, the checkpointed execution engine.
* ``retrieval`` — closed_book | oracle | bm25 | dense | dense_use | hybrid retrievers and planted distractor passages.
* ``campaign_run`` — a campaign run: build the systems (each on its own LLM, or a user's service over HTTP), resume,
  reuse, run, summarise.
* ``retrieval_metrics`` — recall@k, precision@k, MRR, abstention and false-refusal rates.
* ``response_import`` — responses produced elsewhere (``hcat import-responses``).

The user's HTTP service is an external service, so its client is a resource: ``resources/http_system.py``. No dagster
import in this package.
"""
