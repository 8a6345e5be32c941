"""Review by sample where a kind of case is sound, by case where it is not (issue 68 items 1-2), pure core.

A golden set holds kinds of case made by different means — the LLM's open questions per query type, rule-made attack
suites, robustness variants, counterfactual pairs, yes/no suites, out-of-scope and sensitive-topic cases — and they are
not equally sound. For each kind (``case_kind``) the reviewer judges a seeded random sample (``draw_sample``) of the
size a single-stage acceptance-sampling plan needs (``sample_size``: with at most ``acceptance`` unsound cases in the
sample, the exact one-sided upper bound of the kind's unsound share is at most ``tolerance`` at ``confidence`` — the
hypergeometric bound, the sample being drawn without replacement from the kind's own cases). The kind is **accepted by sample** when the sample's bound (``unsound_bound``) is within the tolerance;
otherwise it goes to **case-by-case** review. A sampled case a person edited or rejected counts as unsound (as
generated, it was not fit to read); the edits and rejections apply. The unsampled cases of an accepted kind are
stamped ``accepted_by_sample`` with the kind's bound (``sample_bound``) — never ``accept``: they were not reviewed.

Because the plan is fixed before any case is read (its size from the tolerance, the sample from the seed), the bound is
exact: a kind whose true unsound share exceeds the tolerance is accepted with probability at most 1 − ``confidence``.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Literal

import polars as pl
from scipy.stats import beta, hypergeom

KindState = Literal["sampling", "accepted_by_sample", "case_by_case", "reviewed_by_case"]
SAMPLE_VERDICT = "accepted_by_sample"  # the review_verdict of an unsampled case of a kind accepted by sample
UNSOUND_ACTIONS = ("edit", "reject")  # as generated, not fit to read
DEFAULT_TOLERANCE, DEFAULT_CONFIDENCE = 0.10, 0.95


# the robustness variants of a happy-path case (HCAT §6.1): made by one family of rules, judged as one kind
ROBUSTNESS_VARIANTS = frozenset({"typo", "colloquial", "paraphrase", "misleading_premise", "ambiguous", "edge_format", "edge_case",
                                 "partially_answerable", "follow_up", "correction", "long_history"})  # fmt: skip


def case_kind(row: dict) -> str:
    """The kind of case, by how it was made (issue 68's kinds): ``happy_path:<query type>``, ``robustness`` for the
    robustness variants, ``<suite>`` for each suite and pairing rule (``jailbreak``, ``injection``, ``counterfactual`` …),
    else the category (``out_of_scope`` …)."""
    if row.get("category") == "happy_path" and not row.get("variant_kind"):
        return f"happy_path:{row.get('query_type') or 'open'}"
    if row.get("variant_kind") in ROBUSTNESS_VARIANTS:
        return "robustness"
    if row.get("variant_kind"):
        return str(row["variant_kind"])
    return str(row.get("category") or "unknown")


def with_kinds(frame: pl.DataFrame) -> pl.DataFrame:
    """``frame`` with ``review_kind`` (kept when the frame already states it)."""
    if "review_kind" in frame.columns:
        return frame
    cols = [c for c in ("category", "variant_kind", "query_type") if c in frame.columns]
    kinds = [case_kind(r) for r in frame.select(cols).iter_rows(named=True)] if cols else ["unknown"] * frame.height
    return frame.with_columns(pl.Series("review_kind", kinds, dtype=pl.String))


def unsound_bound(k: int, n: int, confidence: float = DEFAULT_CONFIDENCE, population: int | None = None) -> float:
    """Exact one-sided upper bound of the unsound share after ``k`` unsound in ``n`` sampled cases: Clopper-Pearson, or
    — with ``population`` (the kind's size; the sample drawn without replacement) — the hypergeometric bound: the
    largest unsound count D whose chance of showing at most ``k`` in the sample is still ≥ 1 − confidence, over N."""
    if n <= 0:
        return 1.0
    if population is None:
        return 1.0 if k >= n else float(beta.ppf(confidence, k + 1, n - k))
    if n >= population:
        return k / population  # the whole kind was read: its share is known
    alpha = 1 - confidence
    upper = k
    for d in range(k, population - (n - k) + 1):
        if hypergeom.cdf(k, population, d, n) >= alpha:
            upper = d
        else:
            break
    return upper / population


@lru_cache(maxsize=4096)
def sample_size(tolerance: float, confidence: float = DEFAULT_CONFIDENCE, acceptance: int = 0, population: int | None = None) -> int:
    """The least n whose bound with ``acceptance`` unsound cases is within ``tolerance`` (0 unsound, 10 %, 95 %: 29 of
    an unbounded kind; fewer of a finite one, all of a small one)."""
    n = acceptance + 1
    cap = population if population is not None else 10**6
    while n < cap and unsound_bound(acceptance, n, confidence, population) > tolerance:
        n += 1
    return min(n, cap)


def draw_sample(case_ids: list[str], n: int, seed: int) -> list[str]:
    """A seeded random sample of ``n`` cases (ordered by a keyed hash of the id: the same seed gives the same sample
    whatever order the cases come in)."""
    key = lambda c: hashlib.sha256(f"{seed}:{c}".encode()).hexdigest()  # noqa: E731
    return sorted(sorted(set(case_ids), key=key)[:n])


@dataclass
class KindPlan:
    kind: str
    n_cases: int
    sample: list[str]  # the cases the reviewer judges first (all of them when the kind is no bigger than the plan)
    tolerance: float
    confidence: float
    acceptance: int
    seed: int

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class KindStatus:
    kind: str
    state: KindState
    n_cases: int
    n_sample: int
    n_decided: int  # sampled cases decided so far
    n_unsound: int  # edited or rejected among them
    bound: float | None  # the unsound share's exact upper bound, once the whole sample is decided
    to_review: list[str] = field(default_factory=list)  # what the reviewer reads next (the sample, then every case)
    rest_bound: float | None = None  # accepted: the bound on the share unsound among the unsampled cases (what is stamped)


def plan_kinds(frame: pl.DataFrame, tolerance: float = DEFAULT_TOLERANCE, confidence: float = DEFAULT_CONFIDENCE, acceptance: int = 0,
               seed: int = 0, exclude: set[str] | frozenset[str] = frozenset()) -> dict[str, KindPlan]:  # fmt: skip
    """Per kind of ``frame``'s cases: the seeded sample to judge (the plan is fixed before any case of it is read).
    ``exclude``: cases already decided or gone (the bases reviewed first, the variants that left with a rejected base):
    a kind is planned over the cases that remain."""
    out = {}
    remaining = with_kinds(frame).filter(~pl.col("case_id").is_in(sorted(exclude)))
    for kind, part in sorted(remaining.group_by("review_kind"), key=lambda kv: kv[0][0]):
        ids = part["case_id"].to_list()
        need = sample_size(tolerance, confidence, acceptance, population=len(ids))  # without replacement: the kind's own size
        out[kind[0]] = KindPlan(kind[0], len(ids), draw_sample(ids, need, seed), tolerance, confidence, acceptance, seed)
    return out


def bases_of(frame: pl.DataFrame) -> list[str]:
    """The cases other cases were derived from (``base_case_id``): reviewed case by case first — a base rejected takes its
    variants with it, so the variant kinds are sampled over what remains (their soundness no longer carries the bases')."""
    if "base_case_id" not in frame.columns:
        return []
    used = set(frame["base_case_id"].drop_nulls().to_list())
    return sorted(c for c in frame["case_id"].to_list() if c in used)


def with_base_gone(frame: pl.DataFrame, rejected: set[str]) -> set[str]:
    """The cases that leave with a rejected base (its variants, transitively) and the rejected themselves."""
    gone, changed = set(rejected), True
    pairs = frame.select("case_id", "base_case_id").drop_nulls("base_case_id").iter_rows() if "base_case_id" in frame.columns else []
    pairs = list(pairs)
    while changed:
        changed = False
        for c, b in pairs:
            if b in gone and c not in gone:
                gone.add(c)
                changed = True
    return gone


def kind_status(plan: KindPlan, case_ids: list[str], actions: dict[str, str]) -> KindStatus:
    """Where the kind stands given the latest action per case (accept / edit / reject): still sampling; accepted by
    sample; failed its sample (case by case: every case to review); or wholly reviewed (the sample was the kind)."""
    sampled = [c for c in plan.sample if c in actions]
    unsound = sum(actions[c] in UNSOUND_ACTIONS for c in sampled)
    if len(sampled) < len(plan.sample):
        return KindStatus(plan.kind, "sampling", plan.n_cases, len(plan.sample), len(sampled), unsound, None,
                          [c for c in plan.sample if c not in actions])  # fmt: skip
    bound = unsound_bound(unsound, len(plan.sample), plan.confidence, plan.n_cases)
    if len(plan.sample) >= plan.n_cases:
        return KindStatus(plan.kind, "reviewed_by_case", plan.n_cases, len(plan.sample), len(sampled), unsound, bound)
    if unsound <= plan.acceptance and bound <= plan.tolerance:
        # the sampled unsound cases were edited or rejected: every unsound case left is among the unsampled ones
        rest = max(0.0, round(bound * plan.n_cases) - unsound) / max(plan.n_cases - len(plan.sample), 1)
        return KindStatus(plan.kind, "accepted_by_sample", plan.n_cases, len(plan.sample), len(sampled), unsound, bound, rest_bound=rest)
    rest = [c for c in sorted(case_ids) if c not in actions]
    state: KindState = "case_by_case" if rest else "reviewed_by_case"
    return KindStatus(plan.kind, state, plan.n_cases, len(plan.sample), len(sampled), unsound, bound, rest)


def sample_stamps(frame: pl.DataFrame, plans: dict[str, KindPlan], actions: dict[str, str]) -> dict[str, float]:
    """case_id → the kind's bound, for every undecided case of a kind accepted by sample (what freezing stamps as
    ``accepted_by_sample``)."""
    kinds = with_kinds(frame)
    out = {}
    for kind, plan in plans.items():
        ids = kinds.filter(pl.col("review_kind") == kind)["case_id"].to_list()
        status = kind_status(plan, ids, actions)
        if status.state == "accepted_by_sample":
            out |= {c: status.rest_bound for c in ids if c not in actions}
    return out
