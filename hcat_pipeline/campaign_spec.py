"""The campaign file: which systems a campaign evaluates, on how many cases, with which options.

One schema, two uses: ``CampaignSpec`` is a ``dg.Config`` — the run config of ``rag_responses``
(UI launchpad, schedule, sensors) — and the schema ``campaign.yaml`` is validated against
(``load_campaign``). There is no second field list. Modes are ``Literal[...]``, unknown keys are
refused, so a typo stops a campaign before any run starts; errors name the file, line and reason.

``campaign_sha256`` hashes the *validated* campaign (canonical JSON, defaults filled in), so the
same campaign gives the same hash whether it came from a file, with comments or without, or inline
from the launchpad. It is recorded on every row of a campaign run.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Literal, Optional

from pydantic import Field, ValidationError, field_validator, model_validator

from hcat_pipeline.campaign_monitoring import MonitoringSpec
from hcat_pipeline.campaign_systems import ChunkingSpec, LLMSpec, Strict, SweepSpec, SystemSpec, sweep_systems
from hcat_pipeline.common.canary_ids import CANARY_PREFIX
from hcat_pipeline.common.yaml_errors import load_yaml_mapping, validation_problems
from hcat_pipeline.configs import config_from, to_core
from hcat_pipeline.corpus.chunking import Chunking
from hcat_pipeline.corpus.sampling import SAMPLE_SIZE, AllocationMode, SamplingParams
from hcat_pipeline.gates.canaries import FAULTS, CanaryPlan
from hcat_pipeline.golden.categories import CATEGORY_COUNTS
from hcat_pipeline.golden.composition import HAPPY_PATH_SHARE, TARGET_SIZE, CompositionTarget, happy_path_target
from hcat_pipeline.golden.difficulty import difficulty_shares
from hcat_pipeline.golden.generation import QUERY_TYPES
from hcat_pipeline.golden.grounded import DEFAULT_TYPES, MAX_REQUESTS_PER_STRATUM
from hcat_pipeline.golden.paraphrase import PER_CASE as PARAPHRASES_PER_CASE
from hcat_pipeline.golden.query_mix import DEFAULT_SHARES, type_shares
from hcat_pipeline.golden.review import GatesRead
from hcat_pipeline.golden.robustness import ATTRIBUTES, MAX_BIAS_SHARE, VARIANT_COUNTS
from hcat_pipeline.golden.sample_review import DEFAULT_CONFIDENCE, DEFAULT_TOLERANCE
from hcat_pipeline.judge.harm import HarmSurveyParams
from hcat_pipeline.paths import CORPUS_DIR, PROJECT_ROOT

DEFAULT_CAMPAIGN_FILE = Path(os.environ.get("HCAT_CAMPAIGN_FILE", PROJECT_ROOT / "campaign.yaml"))

class CorpusSpec(Strict):
    """Which documents the campaign evaluates (the ``corpus`` asset's config is derived from this class)."""

    paths: list[str] = Field(
        default_factory=list,
        description="folders, files or globs of your documents (.txt .md .html .jsonl .pdf); relative to the campaign file",
    )
    include_embedded: Optional[bool] = Field(
        default=None, description="the embedded Python language reference; default (null): on only when no paths are given"
    )
    max_file_bytes: int = Field(default=20_000_000, ge=1)

    def embedded(self) -> bool:
        return self.include_embedded if self.include_embedded is not None else not self.paths


SIZED = ("; empty: sized for the gates reading it at the level in force — the campaign's certify_below, else each gate's "
         "own (gates.spec.suite_plan: the probes a PASS needs plus 10 %)")


class RobustnessSpec(Strict):
    """Robustness and safety variants per golden set (HCAT §6.1, §4; golden-eval §2.2, §11.2)."""

    typo: int = Field(default=VARIANT_COUNTS["typo"], ge=0)
    colloquial: int = Field(default=VARIANT_COUNTS["colloquial"], ge=0)
    paraphrase: int = Field(default=VARIANT_COUNTS["paraphrase"], ge=0, description="happy-path cases worded paraphrases_per_case more "
                            "ways (golden-eval §3.2.3 ROBUSTNESS: the per-case variance is in the weakness report)")
    paraphrases_per_case: int = Field(default=PARAPHRASES_PER_CASE, ge=1, description="N rewordings per paraphrased case")
    misleading_premise: int = Field(default=VARIANT_COUNTS["misleading_premise"], ge=0)
    distractor: Optional[int] = Field(default=None, ge=0, description="planted contradicting passages" + SIZED)
    injection: Optional[int] = Field(default=None, ge=0, description="prompt injections, direct and indirect" + SIZED)
    ood: Optional[int] = Field(default=None, ge=0, description="out-of-scope questions (expected: abstain)" + SIZED)
    ambiguous: int = Field(default=CATEGORY_COUNTS["ambiguous"], ge=0, description="unnamed referent (expected: clarify)")
    edge_case: int = Field(default=CATEGORY_COUNTS["edge_case"], ge=0, description="unusual input formats (expected: answer)")
    partially_answerable: int = Field(default=CATEGORY_COUNTS["partially_answerable"], ge=0, description="golden-eval §10.4")
    jailbreak: Optional[int] = Field(default=None, ge=0, description="known jailbreaks × harmful requests (expected: refuse)" + SIZED)
    pii_elicitation: Optional[int] = Field(default=None, ge=0, description="requests for personal data (expected: refuse)" + SIZED)
    boundary_probe: Optional[int] = Field(default=None, ge=0, description="benign questions worded near a harm category "
                                          "(expected: answer; false refusals)" + SIZED)
    follow_up: int = Field(default=CATEGORY_COUNTS["follow_up"], ge=0, description="2-turn: the referent named in an earlier turn")
    correction: int = Field(default=CATEGORY_COUNTS["correction"], ge=0, description="2-turn: the user corrects a wrong earlier answer")
    long_history: int = Field(default=CATEGORY_COUNTS["long_history"], ge=0, description="4-turn: three earlier exchanges, then the question")
    format_constraint: Optional[int] = Field(default=None, ge=0, description="a question with a format to keep: JSON schema, "
                                             "list, word limit, disclaimer, language" + SIZED)
    yes_no: Optional[int] = Field(default=None, ge=0, description="rule-made yes/no questions per reference answer (Yes / No), "
                                  "each from a source sentence (golden.yes_no.yes_no_suite): a system answering 'Yes' to everything "
                                  "FAILs the per-answer correctness gate" + SIZED)
    instruction_hierarchy: Optional[int] = Field(default=None, ge=0, description="a system turn's rule and the user's contrary "
                                                 "request: the rule must win (golden-eval §3.2.2)" + SIZED)
    sensitive_topic: Optional[int] = Field(default=None, ge=0, description="medical, legal, financial-advice, political and "
                                           "religious questions (golden-eval §11.2; expected: a caveat, a referral or neutrality, "
                                           "never refused outright)" + SIZED)
    exfiltration: Optional[int] = Field(default=None, ge=0, description="a system turn with a planted secret and an attack asking "
                                        "for it: direct, role play, 'repeat the text above', translation, encoding (golden-eval "
                                        "§11.1; expected: nothing of the system turn revealed)" + SIZED)


class GenerationSpec(Strict):
    """How the golden set is generated (test_generation_job's run config is derived from this: ``generation_run_config``)."""

    mode: Literal["grounded", "free"] = Field(default="grounded", description="grounded: the reference is a source sentence")
    sample_size: int = Field(default=SAMPLE_SIZE, ge=1, description="chunks drawn over the topic strata")
    allocation: AllocationMode = Field(default=SamplingParams.allocation, description="HCAT §2 step 4: proportional (a stratum's share of "
                                       "the corpus), equal, or weighted (proportional × weights)")
    weights: dict[str, float] = Field(default_factory=dict, description="allocation: weighted — weight per stratum label or id (others 1)")
    min_per_stratum: int = Field(default=SamplingParams.min_per_stratum, ge=0, description="chunks every stratum gets at least")
    target_size: int = Field(default=TARGET_SIZE, ge=1, description="cases the frozen version should hold (golden-eval §2.3: 200-500)")
    happy_path_share: float = Field(default=HAPPY_PATH_SHARE, ge=0.0, le=0.95,
                                    description="share of happy-path cases in the version (golden-eval §2.2: 0.5-0.6)")
    cases_per_stratum: Optional[int] = Field(default=None, ge=1, description="happy-path cases each stratum should end with; absent: "
                                             "enough for happy_path_share of the version beside the other categories, spread over the strata")
    max_requests_per_stratum: int = Field(default=MAX_REQUESTS_PER_STRATUM, ge=1,
                                          description="LLM requests per stratum at most (raised to 4 per case asked when the share sets the count)")
    query_types: list[str] = Field(default_factory=lambda: list(DEFAULT_TYPES), min_length=1, description=f"of {list(QUERY_TYPES)}")
    type_shares: dict[str, float] = Field(default_factory=dict, description="grounded: share of each of query_types (HCAT §2 step 5.3), "
                                          f"normalised; empty: {DEFAULT_SHARES}")
    difficulty_shares: dict[str, float] = Field(default_factory=dict, description="grounded: the difficulty mix the LLM is asked for, "
                                                "e.g. {easy: 0.5, hard: 0.5} (HCAT §2 step 5.3; golden.difficulty); the report compares it with "
                                                "what the night measured. Empty: no difficulty asked")
    robustness: RobustnessSpec = Field(default_factory=RobustnessSpec)
    bias_attributes: list[str] = Field(default_factory=lambda: list(ATTRIBUTES), description=f"HCAT §4 attributes probed, of {list(ATTRIBUTES)}")
    pairs_per_attribute: Optional[int] = Field(default=None, ge=0, description="counterfactual pairs per attribute; empty: the "
                                               "bias gate's plan at the level in force spread over the attributes")
    max_bias_share: float = Field(default=MAX_BIAS_SHARE, ge=0.0, le=0.5, description="counterfactual pairs are at most this share of the cases")
    seed: int = 0
    llm: Optional[LLMSpec] = Field(default=None, description="the LLM that writes the questions and rewrites; absent: the packaged "
                                   "Qwen2.5-Coder-1.5B-Instruct (the llm resource when it is not installed)")

    # Dagster config has no list of Literal: the members are checked here (the message names the allowed values)
    @field_validator("query_types")
    @classmethod
    def _types(cls, v: list[str]) -> list[str]:
        return _members(v, QUERY_TYPES, "query type")

    @model_validator(mode="after")
    def _shares(self):
        type_shares(self.query_types, self.type_shares)  # raises naming the type or share at fault
        difficulty_shares(self.difficulty_shares)  # raises naming the level at fault
        return self

    @field_validator("bias_attributes")
    @classmethod
    def _attributes(cls, v: list[str]) -> list[str]:
        return _members(v, ATTRIBUTES, "attribute")


def _members(values: list[str], allowed: tuple[str, ...], what: str) -> list[str]:
    bad = [v for v in values if v not in allowed]
    if bad:
        raise ValueError(f"unknown {what}(s) {bad}; expected some of {list(allowed)}")
    return list(dict.fromkeys(values))


class JudgeSpec(Strict):
    """The LLM judge of a campaign run (``llm_judge_scores``; golden-eval §5.4-5.6)."""

    llm: Optional[LLMSpec] = Field(default=None, description="the judge LLM; absent: the llm resource")
    enabled: Literal["auto", "on", "off"] = Field(default="auto", description="auto: only when the estimated time fits time_budget_s")
    time_budget_s: float = Field(default=900.0, gt=0)
    ensemble: list[LLMSpec] = Field(default_factory=list, description="more judges scoring the answers the judge scored (ensemble "
                                    "judging, golden-eval §5.5: judge_ensemble): their agreement per dimension is reported, a "
                                    "disagreement raises the item in the review queue, and their mean score is used where it "
                                    "beat each judge on held-out human labels (judge_validation with the same ensemble)")
    dimensions: Optional[list[str]] = Field(default=None, min_length=1, description="the judge's dimensions (judge.scoring.DIMENSIONS: "
                                            "e.g. global_coherence, contradiction_detection, cross_lingual_accuracy — concept chapter "
                                            "§14.4); absent: the judge's defaults")

    @field_validator("dimensions")
    @classmethod
    def _dimensions(cls, v: list[str] | None) -> list[str] | None:
        from hcat_pipeline.judge.scoring import DIMENSIONS

        return None if v is None else _members(v, tuple(DIMENSIONS), "judge dimension")


# the harm judge per answer (golden-eval §3.2.6, judge.harm; asset harm_judgements): the core's tiers + which LLM
HarmJudgeSpec = config_from(HarmSurveyParams, "HarmJudgeSpec", base=Strict,
                            llm=(Optional[LLMSpec], Field(default=None, description="the harm judge LLM; absent: the llm resource")))


class CanarySpec(Strict):
    """Planted-fault copies of one system of the campaign (``gates.canaries``): each fault applied to its answers,
    deterministically and offline, with no extra LLM call. Canaries are never ranked or released."""

    of: str = Field(min_length=1, description="the system_id whose answers the faults are planted in")
    faults: list[str] = Field(default_factory=lambda: list(FAULTS), min_length=1, description=f"of {list(FAULTS)}")

    @field_validator("faults")
    @classmethod
    def _faults(cls, v: list[str]) -> list[str]:
        return _members(v, FAULTS, "canary fault")


class IntendedUseSpec(Strict):
    """The system's intended use, stated before it is validated (HCAT §1.2; golden-eval §9.2; issue 67 item 1): what it is for,
    who uses it, what it may and may not be used for, and the decision this evaluation supports. In the night's plan."""

    purpose: str = Field(default="", description="what the system is for, in a sentence")
    users: str = Field(default="", description="who uses it (e.g. branch staff answering customers' questions)")
    in_scope: list[str] = Field(default_factory=list, description="the uses it is validated for")
    out_of_scope: list[str] = Field(default_factory=list, description="the uses it is not validated for")
    decision: str = Field(default="", description="the decision this evaluation supports (e.g. release to the pilot branches)")

    def missing(self) -> list[str]:
        """The fields left empty."""
        return [k for k, v in self.model_dump().items() if not v]


class CampaignSpec(Strict):
    """A campaign: corpus, generation, systems, case budget and options (the schema of campaign.yaml)."""

    name: str = "default"
    intended_use: IntendedUseSpec = Field(default_factory=IntendedUseSpec, description="what the system is for, stated before "
                                          "it is validated; a night without it says so")
    signoff_roles: list[str] = Field(default_factory=lambda: ["validator"], min_length=1, description="the roles whose sign-off a "
                                     "night's release needs (hcat sign / the review page's /release), e.g. [validator, risk officer]")
    trace_allowed_hosts: list[str] = Field(default_factory=list, description="hosts your systems' tool calls may reach; a call to "
                                           "any other URL is flagged as outbound network access (golden-eval §7.5)")
    trace_allowed_tools: list[str] = Field(default_factory=list, description="tools of your task that are shells or interpreters "
                                           "by name (not flagged as shell calls)")
    review_tolerance: float = Field(default=DEFAULT_TOLERANCE, gt=0, lt=1, description="review by sample (the curate page): a "
                                    "kind of case is accepted by its sample when the exact upper bound of its unsound share is "
                                    "within this (else it is reviewed case by case)")
    review_confidence: float = Field(default=DEFAULT_CONFIDENCE, ge=0.5, lt=1, description="… at this confidence")
    corpus: CorpusSpec = Field(default_factory=CorpusSpec)
    generation: GenerationSpec = Field(default_factory=GenerationSpec)
    golden_set_version: str = Field(default="latest", description="'latest' = the most recently frozen version")
    max_cases: int = Field(default=0, ge=0, description="cases per system, spread over strata and categories; 0 = all")
    case_seed: int = 0
    max_failure_rate: float = Field(default=0.2, ge=0.0, le=1.0, description="a system failing more cases fails the run")
    certify_below: Optional[float] = Field(
        default=None, gt=0, lt=1, description="the failure rate every zero-tolerance gate certifies on this campaign (a PASS "
        "needs no failure and an exact 95 % upper bound below it: 29 probes for 0.10, 59 for 0.05); the night takes that many "
        "probes per gate first; empty: each gate's own certify_below (gates.yaml)")
    gates_read: GatesRead = Field(
        default="all", description="all: the release gates read every case of the golden-set version; reviewed: only the "
        "cases a person accepted or edited on the review page (golden-eval §2.5) — the report's first screen says which and how many")
    shipped_review: str = Field(
        default="", description="a folder of reviews shipped with the campaign (<version>.decisions.jsonl, written by `hcat "
        "ship-review VERSION`), relative to this file: a generated version with one is curated by it before the night (gates_read: "
        "reviewed then reads the reviewed cases); one without is said in capitals on the first screen (review.shipped)")
    retry_failed: bool = Field(default=True, description="re-ask checkpointed failures when a run resumes")
    provider_retries: int = Field(
        default=2, ge=0, description="a step failed only by transient provider errors (connection, timeout, 429, 5xx) is "
        "retried this many times, resuming its checkpoint (op retry with exponential backoff)"
    )
    provider_retry_delay_s: float = Field(default=30.0, ge=0.0, description="wait before the first such retry; doubled each time")
    reuse: Literal["deterministic_local", "never"] = Field(
        default="deterministic_local",
        description="deterministic_local: a local system at temperature 0 whose whole configuration (model file hash, "
        "prompt hash, parameters, retriever index hash) is unchanged reuses its earlier answer, recorded as reused; "
        "http and API systems are always asked again. never: every system is asked every night.",
    )
    include_imports: bool = Field(default=True, description="add responses imported with `hcat import-responses`")
    llm: Optional[LLMSpec] = Field(default=None, description="the campaign's default LLM (systems without their own); absent: the llm resource")
    judge: JudgeSpec = Field(default_factory=lambda: JudgeSpec())
    harm_judge: HarmJudgeSpec = Field(default_factory=lambda: HarmJudgeSpec(), description="the AILuminate harm category of "
                                      "answers (golden-eval §3.2.6): every answer the rules flag and a seeded sample of the rest, "
                                      "the rate per category over all answers with its interval; off by default (docs/judge.md)")
    metrics: list[str] = Field(default_factory=list, description="opt-in metrics computed on every night beside the defaults "
                               "(metrics.registry: cross_lingual_similarity, hierarchical_consistency — with the cross-section contradictions —, "
                               "long_document_faithfulness — concept chapter §14.2-14.5); stored in metric_tables and reported")
    systems: list[SystemSpec] = Field(default_factory=list, description="the systems under test (at least one, here or from sweeps)")
    sweeps: list[SweepSpec] = Field(default_factory=list, description="configuration sweeps (golden-eval §4.3): systems built as the "
                                    "product of retriever × prompt × ICL × top_k × LLM, added to systems")
    device: Literal["resource", "auto", "cpu", "cuda"] = Field(
        default="resource", description="where the embedding and NLI encoders run on this campaign's nights: auto | cpu | "
        "cuda; resource: the resources' own (HCAT_DEVICE, default cpu). An execution detail: not part of campaign_sha256")
    canaries: list[CanarySpec] = Field(
        default_factory=list, description="planted-fault copies of systems of this campaign: each must get the verdicts its "
        "fault declares (canary_detection); a missed one fails that asset's check — the evaluator is broken")

    monitoring: Optional[MonitoringSpec] = Field(
        default=None, description="production monitoring (golden-eval §7): the service's traffic logs, ingested each day they "
        "appear, a stratified sample scored like the nights, anomalies tested; absent: no monitoring")

    exam_chunkings: list[ChunkingSpec] = Field(
        default_factory=list, description="two chunkings of the corpus (name, max_tokens, overlap_tokens) the exam is taken "
        "over to compare them (exam paper App. B.1; asset exam_chunking); empty: no comparison")

    @field_validator("exam_chunkings")
    @classmethod
    def _two_chunkings(cls, v: list) -> list:
        if v and (len(v) != 2 or v[0].name == v[1].name):
            raise ValueError(f"exam_chunkings: two chunkings with different names, got {[c.name for c in v]}")
        for c in v:
            to_core(Chunking, c)  # the core's checks (a name, overlap below the size) as the file's errors
        return v

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, v: list[str]) -> list[str]:
        from hcat_pipeline.metrics.registry import opt_in_metrics, registered

        known = registered()
        if bad := [m for m in v if m not in known]:
            raise ValueError(f"unknown metric(s) {bad}; opt-in metrics: {opt_in_metrics()}")
        if default := [m for m in v if known[m].default]:
            raise ValueError(f"{default} already computed on every night (default metrics); opt-in metrics: {opt_in_metrics()}")
        return list(dict.fromkeys(v))

    @model_validator(mode="after")
    def _some_system(self) -> CampaignSpec:
        if not self.systems:
            raise ValueError("systems: at least one system under test (in systems or built by sweeps)")
        return self

    def canary_plans(self) -> list[CanaryPlan]:
        return [CanaryPlan(of=c.of, fault=f) for c in self.canaries for f in c.faults]


class CampaignFileError(ValueError):
    """A campaign file that cannot be used; the message says file, line and reason."""


# where the work runs, not what is evaluated: the same campaign on a GPU is the same campaign; and what only the on-demand
# exam or the production monitoring reads (the nights' tables do not depend on them)
EXECUTION_ONLY = {"device", "exam_chunkings", "monitoring"}
DEVICE_RESOURCES = ("embedding_model", "nli_model")


def campaign_sha256(spec: CampaignSpec) -> str:
    return hashlib.sha256(json.dumps(spec.model_dump(mode="json", exclude=EXECUTION_ONLY), sort_keys=True).encode()).hexdigest()


def _with_sweep_systems(data: dict) -> dict:
    """The sweeps' systems added to the file's ``systems`` (a re-read of an expanded campaign adds none twice)."""
    if not data.get("sweeps"):
        return data
    try:
        sweeps = [SweepSpec(**s) for s in data["sweeps"]]
    except (ValidationError, TypeError) as e:
        raise CampaignFileError(f"invalid campaign file: sweeps: {e}") from None
    systems = list(data.get("systems") or [])
    have = [s.get("system_id") if isinstance(s, dict) else None for s in systems]
    try:
        return {**data, "systems": systems + sweep_systems(sweeps, have)}
    except ValueError as e:
        raise CampaignFileError(f"invalid campaign file: {e}") from None


def parse_campaign(text: str, source: str = "<campaign>") -> CampaignSpec:
    """Validate campaign YAML text; raise ``CampaignFileError`` listing every problem with its line."""
    data, root = load_yaml_mapping(text, source, CampaignFileError, "a campaign file is a mapping (name, systems, max_cases, …)")
    try:
        return CampaignSpec(**_with_sweep_systems(data))
    except ValidationError as e:
        problems = validation_problems(e, root, source)
        raise CampaignFileError("invalid campaign file:\n  " + "\n  ".join(problems)) from None
    except TypeError as e:  # e.g. a non-string key
        raise CampaignFileError(f"{source}: {e}") from None


def load_campaign(path: str | Path | None = None) -> CampaignSpec:
    """The validated campaign file; corpus paths relative to the file are made absolute."""
    path = Path(path or DEFAULT_CAMPAIGN_FILE)
    if not path.exists():
        raise CampaignFileError(f"campaign file {path} not found (set HCAT_CAMPAIGN_FILE or pass --config)")
    spec = _absolute_paths(parse_campaign(path.read_text(encoding="utf-8"), str(path)), path.resolve().parent)
    ids = [s.system_id for s in spec.systems]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise CampaignFileError(f"{path}: systems: duplicate system_id {dup}")
    reserved = [i for i in ids if i.startswith(CANARY_PREFIX)]
    if reserved:
        raise CampaignFileError(f"{path}: systems: system_id {reserved} begins with {CANARY_PREFIX!r}, which names canaries")
    orphans = sorted({c.of for c in spec.canaries} - set(ids))
    if orphans:
        raise CampaignFileError(f"{path}: canaries: 'of' names {orphans}, not a system of this campaign (systems: {ids})")
    return spec


def _absolute_paths(spec: CampaignSpec, base: Path) -> CampaignSpec:
    """Corpus paths, GGUF model paths and log paths relative to the campaign file, made absolute."""

    def absolute(p: str) -> str:
        return p if not p or Path(p).expanduser().is_absolute() else str(base / p)

    def llm(s: LLMSpec | None) -> LLMSpec | None:
        return s.model_copy(update={"model_path": absolute(s.model_path)}) if s is not None else None

    return spec.model_copy(update={
        "corpus": spec.corpus.model_copy(update={"paths": [absolute(p) for p in spec.corpus.paths]}),
        "llm": llm(spec.llm), "generation": spec.generation.model_copy(update={"llm": llm(spec.generation.llm)}),
        "judge": spec.judge.model_copy(update={"llm": llm(spec.judge.llm), "ensemble": [llm(m) for m in spec.judge.ensemble]}),
        "harm_judge": spec.harm_judge.model_copy(update={"llm": llm(spec.harm_judge.llm)}),
        "systems": [s.model_copy(update={"llm": llm(s.llm)}) for s in spec.systems],
        "monitoring": spec.monitoring and spec.monitoring.model_copy(update={"paths": [absolute(p) for p in spec.monitoring.paths]}),
        "shipped_review": absolute(spec.shipped_review),
    })  # fmt: skip


def campaign_run_config(spec: CampaignSpec, review_note: str = "") -> dict:
    """The run config that hands ``spec`` to a campaign run (rag_responses reads it); ``review_note``: what became of the
    shipped review (``review.shipped``), for the first screen."""
    ops = {"rag_responses": {"config": {"campaign": spec.model_dump(mode="json"), "campaign_file": ""}}}
    ops["verdict_stochasticity"] = {"config": {"campaign": spec.model_dump(mode="json"), "campaign_file": ""}}  # which systems to re-ask
    ops["llm_judge_scores"] = {"config": spec.judge.model_dump(mode="json", exclude_none=True)}
    ops["judge_ensemble"] = ops["llm_judge_scores"]  # the same judge block: the ensemble re-judges what the judge judged
    ops["harm_judgements"] = {"config": spec.harm_judge.model_dump(mode="json", exclude_none=True)}
    if spec.metrics:  # the opt-in metrics beside the defaults, on every night of this campaign
        ops["metric_tables"] = {"config": {"extra_metrics": list(spec.metrics)}}
    ops["grader_gaming"] = {"config": {"allowed_hosts": list(spec.trace_allowed_hosts), "allowed_tools": list(spec.trace_allowed_tools)}}
    ops["gate_verdicts"] = {"config": {"gates_read": spec.gates_read, **({"certify_below": spec.certify_below} if spec.certify_below is not None else {}),
                                       **({"review_note": review_note} if review_note else {})}}
    if spec.device == "resource":
        return {"ops": ops}
    # the encoders' resources configured for this run (resources_for() builds them with their defaults, so the run
    # config changes the device and nothing else)
    return {"ops": ops, "resources": {key: {"config": {"device": spec.device}} for key in DEVICE_RESOURCES}}


def corpus_sources(corpus: CorpusSpec) -> dict:
    """ingest() keyword arguments for this corpus: the embedded reference and the drop folder only when no paths."""
    return {"include_embedded": corpus.embedded(), "drop_folder": None if corpus.paths else CORPUS_DIR,
            "max_file_bytes": corpus.max_file_bytes, "paths": list(corpus.paths)}  # fmt: skip


def generation_run_config(spec: CampaignSpec) -> dict:
    """test_generation_job's run config from the campaign file: corpus, sampling, generation and variants (the suites
    sized by ``suite_counts``)."""
    g, n = spec.generation, suite_counts(spec)
    corpus = {"paths": list(spec.corpus.paths), "include_embedded": spec.corpus.include_embedded, "max_file_bytes": spec.corpus.max_file_bytes}
    generator = {"llm": g.llm.model_dump(mode="json")} if g.llm is not None else {}
    return {"ops": {
        "corpus": {"config": corpus},
        "sampled_chunks": {"config": {"sample_size": g.sample_size, "allocation": g.allocation, "weights": dict(g.weights),
                                      "min_per_stratum": g.min_per_stratum, "seed": g.seed}},
        "generated_queries": {"config": {"mode": g.mode, **happy_path_budget(spec), "query_types": list(g.query_types),
                                         "type_shares": dict(g.type_shares),
                                         **({"difficulty_shares": dict(g.difficulty_shares)} if g.difficulty_shares else {}),
                                         "max_requests_per_stratum": g.max_requests_per_stratum, "seed": g.seed, **generator}},
        "robustness_cases": {"config": {"seed": g.seed, **{f"n_{k}": n[k] for k in VARIANT_COUNTS if k != "counterfactual_pairs"},
                                        "paraphrases_per_case": g.robustness.paraphrases_per_case,
                                        "n_counterfactual_pairs": n["pairs_per_attribute"], "max_bias_share": g.max_bias_share,
                                        "attributes": list(g.bias_attributes), "n_yes_no": n["yes_no"],
                                        "category_counts": {k: n[k] for k in CATEGORY_COUNTS}, "sized_for": level_in_force(spec),
                                        "planned": suite_plan_of(spec), **generator}},
        "golden_candidates": {"config": {"target_size": g.target_size, "happy_path_share": g.happy_path_share}},
    }}  # fmt: skip


def level_in_force(spec: CampaignSpec) -> float:
    """The failure rate the campaign's zero-tolerance gates certify: the file's certify_below, else the strictest level
    of the gates file (the suites are sized for that)."""
    from hcat_pipeline.gates.spec import load_gates, zero_tolerance

    own = [g.certify_below for g in load_gates().gates if zero_tolerance(g) and g.certify_below is not None]
    return spec.certify_below if spec.certify_below is not None else min(own, default=0.05)


def suite_plan_of(spec: CampaignSpec) -> dict[str, int]:
    """``gates.spec.suite_plan`` of the gates file at the campaign's level: suite → cases its gates need."""
    from hcat_pipeline.gates.spec import load_gates, suite_plan

    return suite_plan(load_gates(), spec.certify_below)


def suite_counts(spec: CampaignSpec) -> dict[str, int]:
    """Every robustness / category count of the generation: the campaign file's where it sets one, else the plan of the
    gates reading the suite (``suite_plan_of``), else the core's default; ``pairs_per_attribute`` the bias gate's pairs
    spread over the attributes; ``yes_no`` the rule-made yes/no cases per reference answer (``yes_no_yes`` / ``yes_no_no``)."""
    g, plan = spec.generation, suite_plan_of(spec)
    defaults = {**VARIANT_COUNTS, **CATEGORY_COUNTS}
    out = {k: v if (v := getattr(g.robustness, k)) is not None else plan.get(k, defaults.get(k, 0))
           for k in RobustnessSpec.model_fields if k != "paraphrases_per_case"}  # fmt: skip
    pairs = plan.get("counterfactual_pairs", VARIANT_COUNTS["counterfactual_pairs"] * len(ATTRIBUTES))
    out["pairs_per_attribute"] = g.pairs_per_attribute if g.pairs_per_attribute is not None else -(-pairs // max(1, len(g.bias_attributes)))
    out["yes_no"] = g.robustness.yes_no if g.robustness.yes_no is not None else max(plan.get("yes_no_yes", 0), plan.get("yes_no_no", 0))
    return out


def planned_other_cases(spec: CampaignSpec) -> int:
    """The cases the campaign file asks for beside the happy path: every variant and category count, two per
    counterfactual pair (before the bias share caps them)."""
    g, n = spec.generation, suite_counts(spec)
    variants = sum(n[k] for k in VARIANT_COUNTS if k not in ("counterfactual_pairs", "paraphrase"))
    variants += n["paraphrase"] * g.robustness.paraphrases_per_case
    return variants + sum(n[k] for k in CATEGORY_COUNTS) + 2 * n["pairs_per_attribute"] * len(g.bias_attributes)


def happy_path_budget(spec: CampaignSpec) -> dict:
    """generated_queries' happy-path budget: the campaign file's cases_per_stratum when it sets one, else the
    happy_path_target that gives happy_path_share of the version beside the other categories (golden-eval §2.2)."""
    g = spec.generation
    if g.cases_per_stratum is not None:
        return {"cases_per_stratum": g.cases_per_stratum}
    target = CompositionTarget(g.target_size, g.happy_path_share)
    return {"happy_path_target": happy_path_target(target, planned_other_cases(spec))}
