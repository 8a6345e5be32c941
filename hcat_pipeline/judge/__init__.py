"""The LLM judge (golden-eval §5.5-5.6): rubric scoring (``scoring``), its validation against human labels (``data``, ``validation``, ``audit``) and plots (``plots``). Only rows with ``validated=True`` may decide a gate. Asset face: ``hcat_pipeline.assets.judge``.
"""
