"""The exam stage (exam-generation + IRT paper): candidate questions from the corpus (``generation``), the paper's filters (``filters``), answer spans (``spans``), the frozen exam (``freeze``), exam taking by every LLM × retriever × ICL taker (``taking``), IRT tables (``irt_tables``, over ``hcat_pipeline.irt``) and the exam report (``report``). Asset face: ``hcat_pipeline.assets.exam``.
"""
