"""Behaviour checks per case × system (golden-eval §2.4 expected behaviour): the rule per case category (``checks``), category readings (``categories``) and the evidence each verdict cites (``evidence``). Asset face: ``hcat_pipeline.assets.behaviour``.
"""
