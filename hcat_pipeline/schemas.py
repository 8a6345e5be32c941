"""Column contracts between lineage stages (the single place they are written down).

Every stage that produces one of these tables returns a polars frame with at least these columns,
in these dtypes; extra columns are allowed. Consumers rely on nothing else.
"""

import polars as pl

# topic_strata (unpartitioned): one row per chunk
TOPIC_STRATA = {
    "chunk_id": pl.String,
    "stratum": pl.Int32,  # 0..K-1; noise handled per config (own stratum -1 or nearest cluster)
    "stratum_label": pl.String,  # most distinctive terms (class-based TF-IDF), e.g. "loop, while, break"
    "x": pl.Float32,  # 2-D coordinates used for the scatter plot
    "y": pl.Float32,
}

# sampled_chunks (unpartitioned): the stratified sample of chunks (HCAT §2 step 4), one row per drawn chunk
SAMPLED_CHUNKS = {
    "chunk_id": pl.String,
    "doc_id": pl.String,
    "text": pl.String,
    "stratum": pl.Int32,
    "stratum_label": pl.String,
    "sample_rank": pl.Int32,  # 0-based order within the sample; round-robin over strata so any prefix covers as many strata as it can
}

# golden_set (partitioned by golden_set_version): one row per frozen test case (golden-eval §2.4)
GOLDEN_SET = {
    "case_id": pl.String,  # stable: content hash of the case's defining fields
    "version": pl.String,  # the golden_set_version partition key
    "category": pl.String,  # happy_path | ambiguous | adversarial | out_of_scope | robustness | bias_probe | …
    "tags": pl.List(pl.String),
    "stratum": pl.Int32,  # null for cases not drawn from a stratum (e.g. out-of-scope)
    "stratum_label": pl.String,
    "query_type": pl.String,  # simple | multi_hop | inference | yes_no | multiple_choice
    "query": pl.String,  # the input given to the system under test
    "options": pl.List(pl.String),  # multiple-choice options (empty otherwise)
    "reference_answer": pl.String,  # null when only constraints apply
    "expected_behavior": pl.String,  # answer | abstain | refuse | resist_injection | …
    "constraints": pl.List(pl.String),  # e.g. ["must abstain"], ["must not follow injected instruction"]
    "source_chunk_ids": pl.List(pl.String),  # the chunks that support the reference answer
    "distractor_passage": pl.String,  # adversarial: passage to inject into the retrieved context (else null)
    "base_case_id": pl.String,  # variants link to their base case (else null)
    "variant_kind": pl.String,  # typo | colloquial | misleading_premise | distractor | injection | counterfactual | …
    "pair_id": pl.String,  # counterfactual demographic pairs share a pair_id
    "attribute": pl.String,  # demographic attribute swapped (gender | age | nationality …), else null
    "model": pl.String,  # provenance
    "prompt_hash": pl.String,
    "seed": pl.Int64,
    "corpus_hash": pl.String,
    "created_at": pl.String,  # ISO date; fixed per frozen version (not wall-clock of a re-run)
    "validity_score": pl.Float64,  # golden.validity: 0-1, higher = sounder (null: not checked)
    "validity_verdict": pl.String,  # valid | invalid | unsure (null: not checked)
    "validity_reasons": pl.List(pl.String),  # why not valid, each "code: detail"
}

# a multi-turn case's earlier turns (golden.conversation): an optional golden-set column — versions frozen before it
# have none, and a single-turn case has an empty list; ``query`` is always the last user turn
TURN = pl.Struct({"role": pl.String, "content": pl.String})
CONVERSATION = {"history": pl.List(TURN)}

# a case's review record (golden-eval §2.4-2.5; golden.review): optional golden-set columns, null until a person read the
# case on the review page's curate screen — versions frozen before them have none
REVIEW = {
    "reviewed_by": pl.String,  # the rater who accepted or edited the case
    "reviewed_at": pl.String,  # ISO date of that decision (the case's last-review date)
    "review_verdict": pl.String,  # accept | edit (a rejected case leaves the version) | accepted_by_sample (not read: its kind's sample was)
    "difficulty": pl.String,  # easy | medium | hard, as the reviewer rates it (null: not rated)
    "scoring_notes": pl.String,  # how to score an answer to it (what counts, what does not), for the next reviewer and the judge
    "sample_bound": pl.Float64,  # accepted_by_sample: its kind's exact upper bound of the unsound share (golden.sample_review)
}

# rag_responses (partitioned by campaign_run = golden_set_version × night): one row per case × system
RAG_RESPONSES = {
    "case_id": pl.String,
    "system_id": pl.String,
    "config_hash": pl.String,
    "query": pl.String,
    "answer": pl.String,  # null when the call failed
    "contexts": pl.List(pl.String),  # retrieved passages, in rank order
    "context_chunk_ids": pl.List(pl.String),
    "context_ranks": pl.List(pl.Int32),
    "latency_s": pl.Float64,
    "input_tokens": pl.Int64,
    "output_tokens": pl.Int64,
    "cost_usd": pl.Float64,
    "error": pl.String,  # null on success; "kind: message" on failure
    "reused_from": pl.String,  # null when asked in this run; else the campaign run ("<version>|<night>") that asked it
    "tool_calls": pl.String,  # the tool calls a system returned (JSON list of {name, arguments, result}); null: none
}

# columns every table of a campaign run carries (the run's identity)
RUN_COLUMNS = {
    "golden_set_version": pl.String,
    "night": pl.String,  # YYYY-MM-DD (UTC)
    "campaign_sha256": pl.String,  # hash of the validated campaign file (hcat_pipeline.campaign_spec)
}

# metric_tables (partitioned by campaign_run): rag_responses keys + one column per metric
METRIC_KEYS = ("case_id", "system_id")

# gate_verdicts (partitioned by campaign_run; hcat_pipeline.gates.apply.GATE_VERDICTS + RUN_COLUMNS): one row per
# gate × system × scope group. gate, kind (hard|soft|trend), table, metric, statistic, direction, threshold,
# scope (overall|stratum|query_type|category), group ("all" for overall), system_id ("*" when the gate could not run),
# verdict (PASS|FAIL|INDETERMINATE), estimate, ci_low, ci_high, confidence, n, n_dropped (null metric values), n_more
# (cases likely needed to resolve INDETERMINATE; null otherwise), reason, error (gate could not run: why), blocking
# (this row blocks the release), description. Written even when a hard gate blocks downstream assets.


# corpus: one row per document (corpus.ingest)
CORPUS = {
    "doc_id": pl.String,
    "source": pl.String,
    "title": pl.String,
    "text": pl.String,
    "metadata": pl.String,  # JSON object
}

# ingest_errors: files or lines that could not be ingested (corpus.ingest)
INGEST_ERRORS = {"file": pl.String, "line": pl.Int64, "reason": pl.String, "size_bytes": pl.Int64}

# chunks: sentence-aware chunks with exact character offsets (corpus.chunking)
CHUNKS = {
    "chunk_id": pl.String,
    "doc_id": pl.String,
    "chunk_index": pl.Int32,
    "start": pl.Int64,
    "end": pl.Int64,
    "n_tokens": pl.Int32,
    "text": pl.String,
    "title": pl.String,  # the heading the chunk sits under, else its document's title
}

# generated_queries: one row per LLM-generated query (assets.queries)
GENERATED_QUERIES = {
    "query_id": pl.String, "query_type": pl.String, "chunk_id": pl.String, "source_chunk_ids": pl.List(pl.String),
    "stratum": pl.Int32, "stratum_label": pl.String, "query": pl.String, "options": pl.List(pl.String),
    "correct_index": pl.Int32, "reference_answer": pl.String, "answer_label": pl.String, "evidence": pl.String,
    "model": pl.String, "prompt_hash": pl.String, "prompt_name": pl.String, "seed": pl.Int64, "latency_s": pl.Float64,
    "input_tokens": pl.Int64, "output_tokens": pl.Int64, "raw_reply": pl.String, "generation_round": pl.Int32, "error": pl.String,
    "roundtrip_answer": pl.String, "roundtrip_agrees": pl.Boolean,  # the generator's own answer from the source chunk (golden.roundtrip)
    "difficulty_asked": pl.String,  # the level the LLM was asked for (golden.difficulty); empty: none asked, or made by rule
}  # fmt: skip

# selected_queries: the generated queries that passed selection (assets.queries)
SELECTED_QUERIES = {**GENERATED_QUERIES, "relevancy": pl.Float64, "answer_support": pl.Float64}

# query_rejections: every rejected query with its reason (assets.queries)
QUERY_REJECTIONS = {
    "query_id": pl.String, "query_type": pl.String, "chunk_id": pl.String, "source_chunk_ids": pl.List(pl.String),
    "query": pl.String, "reference_answer": pl.String, "stage": pl.String, "reason": pl.String, "detail": pl.String,
}  # fmt: skip

# bias pairs inside bias_report (metrics.safety)
BIAS_PAIRS = {
    "system_id": pl.String,
    "attribute": pl.String,
    "pair_id": pl.String,
    "case_id_a": pl.String,
    "case_id_b": pl.String,
    "content_similarity": pl.Float64,  # cosine of the two answers' embeddings, demographic words masked
    "content_similarity_raw": pl.Float64,  # same without masking (confounded by the swapped words)
    "masked_terms": pl.List(pl.String),
    "sentiment_a": pl.Float64,
    "sentiment_b": pl.Float64,
    "sentiment_difference": pl.Float64,  # a - b (VADER compound)
    "abs_sentiment_difference": pl.Float64,
    "error": pl.String,  # null, or why the pair could not be scored (unpaired case, missing answer)
}

# bias_report (per campaign run): per system × attribute (metrics.safety)
BIAS_REPORT = {
    "system_id": pl.String,
    "attribute": pl.String,
    "n_pairs": pl.UInt32,  # pairs scored
    "n_errors": pl.UInt32,  # pairs that could not be scored
    "content_similarity_mean": pl.Float64,
    "content_similarity_min": pl.Float64,
    "content_similarity_raw_mean": pl.Float64,
    "abs_sentiment_difference_mean": pl.Float64,
    "abs_sentiment_difference_max": pl.Float64,
    "sentiment_difference_mean": pl.Float64,  # signed: a systematic lean toward one side of the pairs
}

# behaviour_checks (per campaign run): case × system × rule (behaviour.checks)
BEHAVIOUR_CHECKS = {
    "case_id": pl.String, "system_id": pl.String, "category": pl.String, "variant_kind": pl.String, "query_type": pl.String,
    "rule": pl.String, "verdict": pl.String, "score": pl.Float64, "evidence": pl.String, "detail": pl.String,
}  # fmt: skip

# per-system behaviour summary (behaviour.checks)
BEHAVIOUR_SUMMARY = {
    "system_id": pl.String, "rule": pl.String, "n": pl.UInt32, "pass": pl.UInt32, "fail": pl.UInt32, "unsure": pl.UInt32,
    "no_answer": pl.UInt32, "pass_rate": pl.Float64, "pass_rate_ci_low": pl.Float64, "pass_rate_ci_high": pl.Float64,
    "decided_pass_rate": pl.Float64,
}  # fmt: skip

# llm_judge_scores (per campaign run): case × system × dimension (assets.judge)
LLM_JUDGE_SCORES = {
    **RUN_COLUMNS,
    "case_id": pl.String, "system_id": pl.String, "system_family": pl.String, "judge_family": pl.String,
    "same_family": pl.Boolean, "dimension": pl.String, "score": pl.Int64, "passed": pl.Boolean, "confidence": pl.String,
    "justification": pl.String, "skipped_reason": pl.String, "error_kind": pl.String, "error": pl.String,
    "judge_config_hash": pl.String, "judge_model": pl.String, "prompt_name": pl.String, "prompt_hash": pl.String,
    "latency_s": pl.Float64, "input_tokens": pl.Int64, "output_tokens": pl.Int64, "cost_usd": pl.Float64, "attempts": pl.Int64,
    "validated": pl.Boolean, "validation_kappa": pl.Float64, "validation_reason": pl.String,
}  # fmt: skip

# judge_validation: per dimension, the judge against human labels (judge.validation)
# ensemble judging chosen per dimension on half the held-out labels, its κ on the other half (judge.ensemble.choose_scorer)
ENSEMBLE_CHOICE = {
    "members": pl.String, "ensemble_used": pl.Boolean, "ensemble_validated": pl.Boolean, "ensemble_kappa": pl.Float64,
    "ensemble_kappa_ci_low": pl.Float64, "ensemble_kappa_ci_high": pl.Float64, "ensemble_n": pl.Int64, "ensemble_reason": pl.String,
}  # fmt: skip

JUDGE_VALIDATION = {
    "judge_config_hash": pl.String,
    "judge_model": pl.String,
    "dimension": pl.String,
    "validated": pl.Boolean,
    "reason": pl.String,  # why not validated (null when validated)
    "kappa": pl.Float64,
    "kappa_ci_low": pl.Float64,
    "kappa_ci_high": pl.Float64,
    "kappa_method": pl.String,
    "kappa_floor": pl.Float64,
    "n": pl.Int64,  # items with both a judge verdict and a human label
    "n_errors": pl.Int64,
    "n_skipped": pl.Int64,
    "accuracy": pl.Float64,
    "label_source": pl.String,
    "length_rho": pl.Float64,
    "length_rho_ci_low": pl.Float64,
    "length_rho_ci_high": pl.Float64,
    "length_bias_flagged": pl.Boolean,
    "self_preference_gap": pl.Float64,
    "self_preference_ci_low": pl.Float64,
    "self_preference_ci_high": pl.Float64,
    "self_preference_flagged": pl.Boolean,
    "self_preference_note": pl.String,
    "position_flip_rate": pl.Float64,
    "position_flip_ci_low": pl.Float64,
    "position_flip_ci_high": pl.Float64,
    "position_n_pairs": pl.Int64,
    "position_bias_flagged": pl.Boolean,
    "validated_at": pl.String,  # when κ was measured (ISO time; judge.recheck: older than 30 days no longer validates)
    "n_design_labels": pl.Int64,  # human labels stored when it was measured (judge_recheck_sensor counts the new ones)
    **ENSEMBLE_CHOICE,  # null when judge_validation ran without an ensemble
}

# llm_judge_scores' ensemble (golden-eval §5.5, judge.ensemble): one row per case × system × dimension × judge — each
# member's score and the ensemble's mean (judge_model "ensemble"), with whether it decides the dimension (used)
JUDGE_ENSEMBLE = {
    **RUN_COLUMNS,
    "case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "judge_model": pl.String, "score": pl.Float64,
    "passed": pl.Boolean, "n_judges": pl.Int64, "judges_agree": pl.Boolean, "scores": pl.String, "used": pl.Boolean,
    "validated": pl.Boolean, "validation_kappa": pl.Float64, "validation_reason": pl.String, "error": pl.String,
}  # fmt: skip

# exam_candidates: one row per candidate question (assets.exam)
EXAM_CANDIDATES = {
    "chunk_id": pl.String, "stratum": pl.Int32, "stratum_label": pl.String, "sample_rank": pl.Int32, "candidate_no": pl.Int32,
    "target_kind": pl.String, "question_form": pl.String, "question_id": pl.String, "question": pl.String,
    "llm_question": pl.String, "answer": pl.String, "evidence": pl.String, "wrong_pool": pl.List(pl.String),
    "mined_pool": pl.List(pl.String), "distractors": pl.List(pl.String), "distractor_sources": pl.List(pl.String), "options": pl.List(pl.String), "correct_index": pl.Int32, "passed": pl.Boolean,
    "selected": pl.Boolean, "reasons": pl.List(pl.String), "filter_figures": pl.String, "subsets_tried": pl.Int32,
    "question_prompt_hash": pl.String, "distractor_prompt_hash": pl.String, "model": pl.String, "seed": pl.Int64,
    "temperature": pl.Float64, "input_tokens": pl.Int64, "output_tokens": pl.Int64, "latency_s": pl.Float64, "error": pl.String,
}  # fmt: skip

# irt_model: IRT item and taker parameters (assets.exam)
IRT_MODEL = {
    "exam_version": pl.String, "kind": pl.String, "id": pl.String, "component": pl.String, "a": pl.Float64, "b": pl.Float64,
    "c": pl.Float64, "theta": pl.Float64, "se": pl.Float64, "kept": pl.Boolean, "dropped_in_round": pl.Int32, "n": pl.Int64,
}  # fmt: skip

# exam: one row per frozen exam item (exam.freeze)
EXAM = {
    "question_id": pl.String,
    "exam_version": pl.String,
    "question": pl.String,
    "options": pl.List(pl.String),
    "correct_index": pl.Int32,
    "answer": pl.String,
    "evidence": pl.String,
    "question_form": pl.String,
    "distractor_sources": pl.List(pl.String),
    "chunk_id": pl.String,
    "stratum": pl.Int32,
    "stratum_label": pl.String,
    "model": pl.String,
    "question_prompt_hash": pl.String,
    "distractor_prompt_hash": pl.String,
    "seed": pl.Int64,
    "corpus_hash": pl.String,
}

# exam_responses: taker × item (exam.taking)
EXAM_RESPONSES = {
    "exam_version": pl.String, "question_id": pl.String, "system_id": pl.String, "config_hash": pl.String,
    "llm": pl.String, "retriever": pl.String, "top_k": pl.Int32, "icl_examples": pl.Int32, "mode": pl.String,
    "prompt_hash": pl.String, "chosen_index": pl.Int32, "correct_index": pl.Int32, "correct": pl.Int8,
    "unparseable": pl.Boolean, "scores": pl.List(pl.Float64), "raw_answer": pl.String,
    "context_chunk_ids": pl.List(pl.String), "latency_s": pl.Float64, "error": pl.String,
}  # fmt: skip

# exam_topics: taker × topic stratum (exam.topics; exam paper App. A.5)
EXAM_TOPICS = {
    "exam_version": pl.String, "system_id": pl.String, "llm": pl.String, "retriever": pl.String, "icl_examples": pl.Int32,
    "topic": pl.String, "n": pl.Int64, "correct": pl.Int64, "accuracy": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "theta": pl.Float64, "items_kept": pl.Int64, "mean_information": pl.Float64,
}  # fmt: skip

# exam_chunking: taker × chunking of the corpus, with the comparison's verdict on every row (exam.chunkings; App. B.1)
EXAM_CHUNKING = {
    "exam_version": pl.String, "chunking": pl.String, "max_tokens": pl.Int64, "overlap_tokens": pl.Int64, "chunks": pl.Int64,
    "taker": pl.String, "theta": pl.Float64, "se": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "n": pl.Int64,
    "accuracy": pl.Float64, "comparison": pl.String, "delta": pl.Float64, "delta_ci_low": pl.Float64, "delta_ci_high": pl.Float64,
    "verdict": pl.String,
}  # fmt: skip

# gate_verdicts (per campaign run): gate × system × scope group (gates.apply)
GATE_VERDICTS = {
    "gate": pl.String, "kind": pl.String, "table": pl.String, "metric": pl.String, "statistic": pl.String,
    "direction": pl.String, "threshold": pl.Float64, "scope": pl.String, "group": pl.String, "system_id": pl.String,
    "verdict": pl.String, "estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64, "confidence": pl.Float64,
    "n": pl.Int64, "n_dropped": pl.Int64, "n_more": pl.Int64, "reason": pl.String, "error": pl.String,
    "blocking": pl.Boolean, "description": pl.String,
    # how the verdict was reached (gates.decide): clopper_pearson_one_sided | bootstrap_percentile | exact; the certified
    # failure rate a zero-tolerance gate is judged at (its certificate level); the claim strength (§6.6); the sentence a reviewer signs; gamed answers
    # scored as failed (§7.5); what the verdict rests on (human_calibrated | borrowed_labels | uncalibrated | not_a_score);
    # a changed judge / metric model against the compared runs (§5.6)
    "method": pl.String, "certify_below": pl.Float64, "claim_strength": pl.String, "certificate": pl.String,
    "n_gamed": pl.Int64, "evidence": pl.String, "drift": pl.String,
    # human labels (gates.calibrated): the threshold the gates file declares, where the applied one came from, and the
    # night's human-pass rate by prediction-powered inference with its CI and the labelled answers it used
    "threshold_declared": pl.Float64, "threshold_source": pl.String, "human_pass_rate": pl.Float64,
    "human_pass_ci_low": pl.Float64, "human_pass_ci_high": pl.Float64, "n_labelled": pl.Int64,
    # the labels behind that rate (calibration.active): the design they were drawn by, labels left out and why, the rate's
    # decision against the gate's human_pass_at_least (above | below | undecided) and about how many more labels decide it
    "label_design": pl.String, "n_labels_excluded": pl.Int64, "labels_note": pl.String, "human_pass_decision": pl.String,
    "labels_to_decide": pl.Int64,
    # counted failures a person can contest (gates.flags): flags raised, confirmed / unconfirmed / overturned by a person,
    # unconfirmed ones a second signal contradicts, the flags as JSON (id, answer, detector, span, status), and what a FAIL
    # rests on (confirmed | pending_confirmation)
    "n_flagged": pl.Int64, "n_confirmed": pl.Int64, "n_unconfirmed": pl.Int64, "n_overturned": pl.Int64,
    "n_contradicted": pl.Int64, "flagged": pl.String, "fail_evidence": pl.String,
    "detector": pl.String,  # what flags a count gate's answers (gates.flags.detector_of); its precision is in the report
}  # fmt: skip

# system_rankings (per campaign run): metric × method × system (gates.rankings)
SYSTEM_RANKINGS = {
    "method": pl.String, "system_id": pl.String, "rating": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64,
    "rank": pl.Int64, "rank_distribution": pl.List(pl.Float64), "p_best": pl.Float64, "sigma": pl.Float64,
    "n_cases": pl.Int64, "n_matches": pl.Int64, "wins": pl.Float64, "ties": pl.Int64, "losses": pl.Float64,
    "n_boot": pl.Int64, "metric": pl.String,
}  # fmt: skip

# pareto_frontier (per campaign run): one row per system (gates.pareto)
PARETO_FRONTIER = {
    "system_id": pl.String, "quality": pl.Float64, "quality_ci_low": pl.Float64, "quality_ci_high": pl.Float64,
    "cost_usd_per_case": pl.Float64, "cost_ci_low": pl.Float64, "cost_ci_high": pl.Float64, "n_cost_unknown": pl.Int64,
    "latency_p50_s": pl.Float64, "latency_p50_ci_low": pl.Float64,
    "latency_p50_ci_high": pl.Float64, "latency_p95_s": pl.Float64, "latency_p95_ci_low": pl.Float64,
    "latency_p95_ci_high": pl.Float64, "n": pl.Int64, "n_quality": pl.Int64, "n_failed": pl.Int64, "quality_metric": pl.String,
    "excluded_reason": pl.String,  # why the system is not placed on the frontier (quality unknown), else null
    # secondary rankings (gates.efficiency): quality per second and per dollar with CIs and ranks; unknown cost = null
    "quality_per_second": pl.Float64, "quality_per_second_ci_low": pl.Float64, "quality_per_second_ci_high": pl.Float64,
    "rank_per_second": pl.Int64, "rank_per_second_tied": pl.Boolean,
    "quality_per_usd": pl.Float64, "quality_per_usd_ci_low": pl.Float64, "quality_per_usd_ci_high": pl.Float64,
    "rank_per_usd": pl.Int64, "rank_per_usd_tied": pl.Boolean, "rank_quality": pl.Int64, "efficiency_note": pl.String,
}  # fmt: skip

# case_contamination (per campaign run): one row per case (gates.contamination)
CASE_CONTAMINATION = {
    "case_id": pl.String, "field": pl.String, "exact": pl.Boolean, "jaccard": pl.Float64, "containment": pl.Float64,
    "cosine": pl.Float64, "risk": pl.String, "source": pl.String, "doc_id": pl.String, "evidence": pl.String,
}  # fmt: skip

# scores the weakness report reads (case × system × metric) (reports.weakness)
WEAKNESS_SCORES = {
    "case_id": pl.String, "system_id": pl.String, "metric": pl.String, "source": pl.String, "value": pl.Float64,
    "topic": pl.String, "query_type": pl.String, "category": pl.String, "variant_kind": pl.String, "rule": pl.String,
    "base_case_id": pl.String,
}  # fmt: skip

# weakness_report (per campaign run): cell × system × metric (reports.weakness)
WEAKNESS_CELLS = {
    "analysis": pl.String, "dims": pl.String, "row": pl.String, "col": pl.String, "metric": pl.String, "source": pl.String,
    "direction": pl.String, "n": pl.Int64, "n_missing": pl.Int64, "mean": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "claim_strength": pl.String, "small": pl.Boolean,
}  # fmt: skip

# failure_cases (per campaign run) (reports.failures)
FAILURE_CASES = {
    "case_id": pl.String, "system_id": pl.String, "source": pl.String, "failure_category": pl.String, "severity": pl.String,
    "evidence": pl.String, "score": pl.Float64, "category": pl.String, "variant_kind": pl.String, "query_type": pl.String,
    "notes": pl.String,
}  # fmt: skip

# robustness_deltas (per campaign run): variant vs base case (reports.robustness)
ROBUSTNESS_DELTAS = {
    "variant_kind": pl.String, "system_id": pl.String, "metric": pl.String, "source": pl.String, "direction": pl.String,
    "n_pairs": pl.Int64, "variant_mean": pl.Float64, "base_mean": pl.Float64, "delta": pl.Float64, "ci_low": pl.Float64,
    "ci_high": pl.Float64, "cost": pl.Float64, "claim_strength": pl.String, "small": pl.Boolean, "statement": pl.String,
}  # fmt: skip

# paraphrase_variance (per campaign run): per system × paraphrase group × metric, the score's spread over the wordings
# of one intent (reports.paraphrase; golden-eval §3.2.3 ROBUSTNESS)
PARAPHRASE_VARIANCE = {
    "system_id": pl.String, "base_case_id": pl.String, "metric": pl.String, "n_wordings": pl.Int64, "mean": pl.Float64, "sd": pl.Float64,
    "spread": pl.Float64, "min_value": pl.Float64, "max_value": pl.Float64, "worst_case_id": pl.String, "base_value": pl.Float64,
    "flagged": pl.Boolean, "statement": pl.String,
}  # fmt: skip

# calibrators: one fitted calibrator per dimension (assets.calibration)
CALIBRATORS = {
    "dimension": pl.String, "label_source": pl.String, "metric": pl.String, "method": pl.String, "alpha": pl.Float64,
    "status": pl.String, "active": pl.Boolean, "n_labels": pl.Int64, "qhat": pl.Float64, "message": pl.String,
    "label_counts": pl.String, "splits": pl.String, "evaluation": pl.String, "model": pl.Binary,
}  # fmt: skip

# metric_validity: per dimension, the metric against human labels (assets.calibration)
METRIC_VALIDITY = {
    "metric": pl.String, "dimension": pl.String, "labelled_set": pl.String, "status": pl.String, "heldout_n": pl.Int64,
    "auroc": pl.Float64, "auroc_ci_low": pl.Float64, "auroc_ci_high": pl.Float64, "kappa_thresholded": pl.Float64,
    "coverage": pl.Float64, "coverage_ci_low": pl.Float64, "coverage_ci_high": pl.Float64, "target_coverage": pl.Float64,
    "mean_set_size": pl.Float64, "brier_before": pl.Float64, "brier_after": pl.Float64, "note": pl.String,
}  # fmt: skip

# the shipped reference items, before they are scored (calibration.reference)
REFERENCE_ITEMS = {
    "set": pl.String,
    "item_id": pl.String,
    "dimension": pl.String,
    "subset": pl.String,  # FaithDial file / ToxiGen target group
    "group": pl.String,  # what the source's own split keeps together
    "query": pl.String,
    "contexts": pl.List(pl.String),
    "answer": pl.String,
    "label": pl.Int64,  # binary human label (meaning: ReferenceSet.label_meaning)
    "split": pl.String,  # stage1 | stage2 | evaluation (this project's calibration split)
    "source_split": pl.String,  # the metric recipe's split the item came from (val / test)
}

# reference_label_scores: every shipped reference item scored by its dimension's metric (assets.calibration)
REFERENCE_SCORES = {
    "set": pl.String, "item_id": pl.String, "dimension": pl.String, "label": pl.Int64, "split": pl.String, "metric": pl.String,
    "score": pl.Float64, "label_source": pl.String,
}  # fmt: skip

# calibrated_scores (per campaign run) (calibration.campaign)
CALIBRATED_SCORES = {
    "case_id": pl.String,
    "system_id": pl.String,
    "dimension": pl.String,
    "metric": pl.String,
    "raw_score": pl.Float64,
    "calibrated_probability": pl.Float64,  # binary: P(human label = 1); ordinal: P(label in the passing half)
    "class_probabilities": pl.List(pl.Float64),
    "prediction_set": pl.String,  # "{0}" | "{1}" | "{0,1}" | "∅" (null when not calibrated)
    "machine_verdict": pl.String,  # pass | fail | unsure (null when not calibrated or not scored)
    "label_source": pl.String,  # campaign | reference:<set> | none
    "calibration_note": pl.String,
}

# one imported label row (calibration.labels)
LABEL_ROWS = {
    "case_id": pl.String,
    "system_id": pl.String,
    "dimension": pl.String,
    "label": pl.Int64,
    "scale": pl.String,
    "label_index": pl.Int64,
    "n_levels": pl.Int64,
    "rater": pl.String,
    "labelled_at": pl.Datetime("us", "UTC"),
    "comment": pl.String,
    "source_file": pl.String,
    "source_line": pl.Int64,
    "row_hash": pl.String,
}


# human_labels: the label store (calibration.store)
HUMAN_LABELS = {
    **LABEL_ROWS,
    "version": pl.String,
    "source_sha256": pl.String,
    "imported_at": pl.Datetime("us", "UTC"),
}

# bad lines of a label file (calibration.labels)
LABEL_FILE_ERRORS = {"file": pl.String, "line": pl.Int64, "reason": pl.String}

# inter-rater agreement per dimension (calibration.agreement)
LABEL_AGREEMENT = {
    "dimension": pl.String,
    "scale": pl.String,
    "method": pl.String,
    "kappa": pl.Float64,
    "n_items": pl.Int64,
    "n_raters": pl.Int64,
    "note": pl.String,
    "kappa_ci_low": pl.Float64,  # 95 % bootstrap over items
    "kappa_ci_high": pl.Float64,
    "alpha": pl.Float64,  # Krippendorff's α on every item with ≥ 2 ratings
    "alpha_ci_low": pl.Float64,
    "alpha_ci_high": pl.Float64,
}

# violation_campaign: per checker version (assets.violations)
VIOLATION_CAMPAIGN = {
    "checker_version": pl.String, "checker": pl.String, "split": pl.String, "texts": pl.Int64, "texts_missing": pl.Int64, "predicted": pl.Int64, "ground_truth": pl.Int64,
    "tp": pl.Int64, "fp": pl.Int64, "fn": pl.Int64, "precision": pl.Float64, "recall": pl.Float64, "f1": pl.Float64,
    "ha_tp": pl.Int64, "ha_fp": pl.Int64, "ha_fn": pl.Int64, "ha_precision": pl.Float64, "ha_recall": pl.Float64, "ha_f1": pl.Float64,
    # the deck's headline figure (mean weighted score of the matches) and every figure's bootstrap CI over texts
    "match_score": pl.Float64, "ha_match_score": pl.Float64, "samples": pl.Int64, "rule_similarity": pl.String,
    "weights": pl.String,  # which weights made these figures: fitted to human match labels (held-out evidence) or the deck's defaults
    **{f"{v}{f}_ci_{e}": pl.Float64 for v in ("", "ha_") for f in ("precision", "recall", "f1", "match_score") for e in ("low", "high")},
}

# violation_matches: predicted × ground-truth pairs (assets.violations)
VIOLATION_MATCHES = {
    "checker_version": pl.String, "text_id": pl.String, "pred_start": pl.Int64, "pred_end": pl.Int64, "pred_rule": pl.String,
    "gt_start": pl.Int64, "gt_end": pl.Int64, "gt_rule": pl.String, "text_overlap": pl.Float64, "rule_similarity": pl.Float64,
    "category_match": pl.Float64, "explanation_similarity": pl.Float64, "correction_similarity": pl.Float64,
    "match_score": pl.Float64, "ha_match_score": pl.Float64, "std_match": pl.Boolean, "ha_match": pl.Boolean,
}

# violation_file_errors (assets.violations)
VIOLATION_FILE_ERRORS = {"file": pl.String, "line": pl.Int64, "reason": pl.String}

# bad lines of an imported responses file (responses.response_import)
RESPONSE_IMPORT_ERRORS = {"file": pl.String, "line": pl.Int64, "reason": pl.String}

# retrieval_metrics (per campaign run): per system, retrieval and answerability figures (responses.retrieval_metrics)
RETRIEVAL_METRICS = {
    "system_id": pl.String, "n_cases": pl.UInt32, "n_failed": pl.Int64, "k": pl.Int64, "n_retrieval_cases": pl.Int64,
    "recall_at_k": pl.Float64, "precision_at_k": pl.Float64, "mrr": pl.Float64, "n_out_of_scope": pl.Int64,
    "abstention_rate": pl.Float64, "n_answerable": pl.Int64, "false_refusal_rate": pl.Float64,
    "matched_by": pl.String,  # how passages were matched to source chunks: chunk_id | text (foreign ids) | both
}  # fmt: skip

# grader_gaming (per campaign run): case × system gaming flags (gates.gaming)
GRADER_GAMING = {
    "case_id": pl.String, "system_id": pl.String, "failed": pl.Boolean, "empty": pl.Boolean, "format_only": pl.Boolean,
    "context_copy": pl.Boolean, "canned": pl.Boolean, "question_echo": pl.Boolean, "refusal": pl.Boolean, "gamed": pl.Boolean,
    "copy_containment": pl.Float64, "context_coverage": pl.Float64, "expected_behavior": pl.String, "evidence": pl.String,
}  # fmt: skip

# release_decision (per campaign run): one row per system, cleared or blocked by its blocking gates (assets.gates)
RELEASE_DECISION = {
    "system_id": pl.String, "cleared": pl.Boolean, "gates_pass": pl.Int64, "gates_indeterminate": pl.Int64, "gates_fail": pl.Int64,
    "gates_not_applicable": pl.Int64, "blocking_gates": pl.List(pl.String),
    "pending_confirmation": pl.List(pl.String),  # blocking gates whose FAIL rests on unconfirmed flags only (gates.flags)
}  # fmt: skip

# weakest_cases (per campaign run): the worst cases of the weakest cells (reports.weakness)
WEAKEST_CASES = {
    "metric": pl.String, "source": pl.String, "dims": pl.String, "row": pl.String, "col": pl.String, "ranking": pl.String,
    "cell_rank": pl.Int64, "case_rank": pl.Int64, "case_id": pl.String, "system_id": pl.String, "value": pl.Float64,
    "query": pl.String, "answer": pl.String, "explanation": pl.String,
}  # fmt: skip

# canary_detection (per campaign run): canary × expectation — expected, observed, caught (gates.canary_detection)
CANARY_DETECTION = {
    "canary_id": pl.String, "parent_id": pl.String, "fault": pl.String, "check": pl.String, "expected": pl.String,
    "observed": pl.String, "caught": pl.Boolean, "evidence": pl.String,
}  # fmt: skip

# review_queue (per campaign run): items for human labelling, most informative first (calibration.labels)
REVIEW_QUEUE = {"case_id": pl.String, "system_id": pl.String, "dimension": pl.String, "priority": pl.Int64, "reason": pl.String,
                # the labelling design the row was drawn by (calibration.design): its name, π, order key and seed
                "design": pl.String, "inclusion_probability": pl.Float64, "design_order": pl.Float64, "design_seed": pl.Int64}

# campaign_report (per campaign run): where the HTML report is and what it could include (assets.reports)
CAMPAIGN_REPORT = {"path": pl.String, "plots": pl.Int64, "size_bytes": pl.Int64}

# production monitoring (per production_day; hcat_pipeline.monitoring): the day's rows, the rejected records, the scored
# sample (masked), the weighted cell sums the anomaly tests read, the judge's tier, the anomalies, the report
PRODUCTION_LOGS = {
    "request_id": pl.String, "day": pl.String, "timestamp": pl.String, "question": pl.String, "answer": pl.String,
    "contexts": pl.List(pl.String), "latency_ms": pl.Float64, "input_tokens": pl.Int64, "output_tokens": pl.Int64,
    "error": pl.String, "thumbs": pl.Int8, "rating": pl.Float64, "correction": pl.String, "retried": pl.Boolean,
    "abandoned": pl.Boolean, "copied": pl.Boolean, "source": pl.String,  # source: file:line, unique
}  # fmt: skip
PRODUCTION_REJECTS = {"source": pl.String, "reason": pl.String}
PRODUCTION_SAMPLE = {"request_id": pl.String, "day": pl.String, "source": pl.String, "question": pl.String, "answer": pl.String,
                     "stratum": pl.Int32, "feedback": pl.String, "max_similarity": pl.Float64, "screen_weight": pl.Float64,
                     "weight": pl.Float64, "masked_spans": pl.Int64}  # + the metric columns and fail_<signal> columns  # fmt: skip
PRODUCTION_CELLS = {"day": pl.String, "stratum": pl.Int32, "signal": pl.String, "n": pl.Int64, "k": pl.Int64, "sw": pl.Float64,
                    "swy": pl.Float64, "sw2": pl.Float64}  # fmt: skip
PRODUCTION_JUDGE = {"request_id": pl.String, "item_id": pl.String, "dimension": pl.String, "score": pl.Int64, "passed": pl.Boolean,
                    "confidence": pl.String, "justification": pl.String, "skipped_reason": pl.String, "error_kind": pl.String,
                    "error": pl.String, "judge_config_hash": pl.String, "judge_model": pl.String, "prompt_name": pl.String,
                    "prompt_hash": pl.String, "latency_s": pl.Float64, "input_tokens": pl.Int64, "output_tokens": pl.Int64,
                    "cost_usd": pl.Float64, "attempts": pl.Int64, "tier_reason": pl.String}  # fmt: skip
PRODUCTION_ANOMALIES = {"kind": pl.String, "signal": pl.String, "stratum": pl.Int32, "start_day": pl.String, "end_day": pl.String,
                        "days": pl.List(pl.String), "severity": pl.String, "evidence": pl.String,
                        "raised": pl.Boolean}  # raised: it touches the day (its checks' anomalies); else found over earlier days  # fmt: skip
MONITORING_REPORT = {"day": pl.String, "report": pl.String, "anomalies": pl.Int64, "queued": pl.Int64}


# columns a table gained after some of its partitions were stored: an older partition reads them as null
ADDED_LATER = {"tool_calls": pl.String}


def with_added_later(frame):
    """``frame`` (a DataFrame or LazyFrame) with any ``ADDED_LATER`` column it lacks, null."""
    names = frame.collect_schema().names()
    return frame.with_columns([pl.lit(None, t).alias(c) for c, t in ADDED_LATER.items() if c not in names])


def conform(frame: pl.DataFrame, schema: dict) -> pl.DataFrame:
    """Check that ``frame`` has every contract column with its dtype; raise a clear error if not."""
    missing = [c for c in schema if c not in frame.columns]
    wrong = [f"{c}: {frame.schema[c]} != {t}" for c, t in schema.items() if c in frame.columns and frame.schema[c] != t]
    if missing or wrong:
        raise ValueError(f"table does not match its contract: missing={missing} wrong_types={wrong}")
    return frame

# verdict_stochasticity (golden-eval §6.6): per system, verdicts that flipped when re-asked with new sampling seeds
VERDICT_STOCHASTICITY = {
    "system_id": pl.String, "n_cases": pl.Int64, "repeats": pl.Int64, "n_pairs": pl.Int64, "flips": pl.Int64, "flip_share": pl.Float64,
    "ci_low": pl.Float64, "ci_high": pl.Float64, "answers_changed": pl.Int64, "temperature": pl.Float64,
}  # fmt: skip

# harm_judgements (golden-eval §3.2.6, judge.harm): every answer of the night with its stratum of the harm judge's design
# (flagged by the rules / rest), its inclusion probability, whether it was drawn, and the judge's verdict per AILuminate
# category (1 harmful, 0 not, null not judged)
HARM_CATEGORY_COLUMNS = ("HARM_VIOLENCE", "HARM_SELF_HARM", "HARM_SEXUAL_CONTENT", "HARM_HATE", "HARM_PRIVACY", "HARM_DEFAMATION",
                         "HARM_SPECIALIZED_ADVICE", "HARM_ELECTIONS", "HARM_INTELLECTUAL_PROPERTY", "HARM_INDISCRIMINATE_WEAPONS")  # fmt: skip
HARM_JUDGEMENTS = {
    **RUN_COLUMNS,
    "case_id": pl.String, "system_id": pl.String, "stratum": pl.String, "stratum_size": pl.Int64, "inclusion_probability": pl.Float64,
    "drawn": pl.Boolean, **{c: pl.Int64 for c in HARM_CATEGORY_COLUMNS}, "harm_any": pl.Int64, "harm_categories": pl.String,
    "harm_error": pl.String, "harm_prompt_hash": pl.String, "judge_model": pl.String,
}  # fmt: skip
