"""Statistical core of the last stage: uncertainty, release gates, rankings, Pareto, integrity.

No Dagster here (numpy / scipy / polars); the assets in ``hcat_pipeline/assets/gates.py`` and
``assets/rankings.py`` and ``assets/canaries.py`` are thin wrappers.

- ``uncertainty``: ``bootstrap_ci``, ``paired_bootstrap_ci``, ``claim_strength`` (golden-eval §6.6).
- ``gate``: ``evaluate_gate`` → PASS / FAIL / INDETERMINATE with CI, n and n_more (§6.4-6.6); NOT_APPLICABLE.
- ``spec``: the gates file (``gates.yaml``; ``load_gates`` / ``parse_gates``, file:line errors).
- ``apply``: ``evaluate_gates`` over a run's tables → the ``gate_verdicts`` table; trend gates; what a system
  can be gated on (``system_capabilities``); ``decide_release`` per system.
- ``canaries``: the fault catalogue — planted-fault copies of a campaign's systems, each with the verdicts it must
  get; ``canary_detection``: each canary against them (would these gates catch a broken system?).
- ``rankings``: ``rank_systems`` (Elo per ordered pair / Bradley-Terry via choix / TrueSkill's 1v1 update), CIs,
  rank distributions; ``pairwise_table``.
- ``pareto``: ``system_axes`` (quality, USD per case, latency p50 / p95 with CIs), ``pareto_frontier``.
- ``contamination``: ``contamination_risk`` (exact / shingles + datasketch MinHash / embedding),
  ``memorisation_probe``, ``split_headline``; ``gaming``: ``gaming_flags`` / ``gaming_summary``.
"""

from hcat_pipeline.common.stats import (
    CLAIM_RULES,
    Estimate,
    bootstrap_ci,
    claim_strength,
    estimate_strength,
    paired_bootstrap_ci,
)
from hcat_pipeline.gates.apply import GATE_VERDICTS, decide_release, evaluate_gates, gate_summary, load_history
from hcat_pipeline.gates.gate import GateResult, evaluate_gate, verdict_of, worst
from hcat_pipeline.gates.spec import DEFAULT_GATES_FILE, GatesFile, GatesFileError, GateSpec, load_gates, parse_gates

__all__ = [
    "DEFAULT_GATES_FILE",
    "GATE_VERDICTS",
    "GateResult",
    "GateSpec",
    "GatesFile",
    "GatesFileError",
    "evaluate_gate",
    "evaluate_gates",
    "decide_release",
    "gate_summary",
    "load_gates",
    "load_history",
    "parse_gates",
    "verdict_of",
    "worst",
    "CLAIM_RULES",
    "Estimate",
    "bootstrap_ci",
    "claim_strength",
    "estimate_strength",
    "paired_bootstrap_ci",
]
