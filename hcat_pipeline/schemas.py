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


def conform(frame: pl.DataFrame, schema: dict) -> pl.DataFrame:
    """Check that ``frame`` has every contract column with its dtype; raise a clear error if not."""
    missing = [c for c in schema if c not in frame.columns]
    wrong = [f"{c}: {frame.schema[c]} != {t}" for c, t in schema.items() if c in frame.columns and frame.schema[c] != t]
    if missing or wrong:
        raise ValueError(f"table does not match its contract: missing={missing} wrong_types={wrong}")
    return frame
