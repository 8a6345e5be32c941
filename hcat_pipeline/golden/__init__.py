"""The golden-set stage (HCAT §2 steps 5-6; golden-eval §2): what makes a test case, and whether it is sound.

Pure core, no Dagster import. Its asset modules are ``assets/queries.py`` (generation, selection, variants) and
``assets/golden_set.py`` (candidates, frozen versions and their checks).

- ``validity``: the checks every case must pass, with their numbers (``Validity``: score 0-1, verdict, reasons):
  self-contained question, reference supported by the cited source, the reference answers the question (round
  trip over the source's sentences), polarity, near-duplicates.
- ``variant_checks``: the checks of robustness and safety variants (misleading premise is a real claim made
  false and grammatical; counterfactual pairs differ only in the attribute; injections carry their canary).
- ``case_checks``: both over a batch (``validate_cases``, ``check_rows``, ``validity_rate``).
- ``grounded``: happy-path cases grounded by construction (``generation``: the free mode and the row contract);
  ``selection``: the step 5.4 checks; ``robustness``: variants (typos, rewrites, premises, distractors, injections,
  counterfactual pairs, out-of-scope); ``categories``: ambiguous, edge-case, partially answerable, jailbreak and
  PII-elicitation cases; ``claims``: what makes a source sentence a claim a reviewer signs, and questions by rule.
- ``cases``: the case contract (golden-eval §2.4), frozen versions and curated imports (``frozen``: content-addressed
  storage shared with the exam); ``case_rules``: the behaviour rule a case tests; ``coverage``: strata × types covered.
"""

from hcat_pipeline.golden.case_checks import validate_cases
from hcat_pipeline.golden.validity import VERDICTS, Validity, ValidityConfig

__all__ = ["VERDICTS", "Validity", "ValidityConfig", "validate_cases"]
