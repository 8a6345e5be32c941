"""Systems under test (exam-generation paper §3.1/§4.2) and the harness that runs them
(golden-eval §4: configuration, execution, result capture, state).

* ``SystemConfig`` — a named RAG pipeline: retriever × LLM × in-context examples (ICL@0/1/2) ×
  prompt template; ``config_hash`` covers everything that changes an answer (incl. the prompt
  file's hash and the LLM id).
* ``select_icl_examples`` — seeded, drawn from *other* answerable cases of the same golden set
  (never the case itself nor its variants).
* ``render_prompt`` — fills a versioned template from ``hcat_pipeline/prompts/``.
* ``CheckpointStore`` — append-only JSONL, one line per completed response keyed by
  (case_id, system_id, config_hash), flushed + fsynced as each one completes: a crash or Ctrl-C
  loses at most the calls in flight, and a re-run never repeats a finished case × system.
* ``run_responses`` — the execution engine over (system, case) pairs with a concurrency limit.

No dagster here: the generator is any object with ``.generate(prompt, max_tokens=, temperature=,
seed=)`` returning an object with ``text latency_s input_tokens output_tokens cost_usd``.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path

import polars as pl

from hcat_pipeline.common import prompts
from hcat_pipeline.common.ids import json_hash
from hcat_pipeline.common.locks import file_lock
from hcat_pipeline.common.prompts import PROMPTS_DIR
from hcat_pipeline.responses.retrieval import Passage, Retriever, RetrieverName, inject_distractor
from hcat_pipeline.schemas import RAG_RESPONSES

# ---------------------------------------------------------------- configuration


def _f(default, description: str, **bounds):
    """A field with the constraints and description the campaign schema shows (``metadata``: pydantic ``Field`` kwargs)."""
    return field(default=default, metadata={"description": description, **bounds})


#: expected behaviours whose verdict (declined or not, canary obeyed or not) shows in an answer's first sentence
DECLINE_BEHAVIOURS = frozenset({"refuse", "resist_injection", "abstain"})


@dataclass(frozen=True)
class SystemConfig:
    """A named system under test: retriever × LLM × ICL × prompt (+ generation parameters). The one field list:
    the campaign file's ``SystemSpec`` is derived from it (``campaign_spec``), with these defaults and bounds."""

    system_id: str = field(metadata={"min_length": 1})
    retriever: RetrieverName = "bm25"
    top_k: int = _f(3, "passages retrieved", ge=1, le=20)
    icl_examples: int = _f(0, "in-context examples from other cases of the golden set (ICL@0/1/2)", ge=0, le=2)
    prompt: str = _f("rag_v1", "hcat_pipeline/prompts/<prompt>.txt")
    max_tokens: int = _f(96, "answer length limit", ge=1)
    attack_max_tokens: int = _f(48, "answer length limit where the expected behaviour is to decline (harmful and personal-data "
                                "requests, injections, out-of-scope questions): the verdict is in the first sentence", ge=1)
    temperature: float = _f(0.0, "sampling temperature (0: greedy, reusable answers)", ge=0.0, le=2.0)
    seed: int = 0
    inject_distractors: bool = _f(True, "plant a distractor case's contradicting passage in its context")
    extra: dict = field(default_factory=dict)  # anything else that identifies the system (not in the campaign file)

    def as_dict(self) -> dict:
        return asdict(self)


def config_hash(parts: dict) -> str:
    """Stable 16-hex hash of a configuration (canonical JSON)."""
    return json_hash(parts, n=16)


def system_config_hash(cfg: SystemConfig, llm_id: str, prompt_sha: str) -> str:
    return config_hash({**cfg.as_dict(), "llm": llm_id, "prompt_sha": prompt_sha})


def load_prompt(name: str, prompts_dir: Path = PROMPTS_DIR) -> tuple[str, str]:
    """(template text, sha256[:12] of the file) for ``prompts/<name>.txt`` (``common.prompts`` loads it)."""
    template = prompts.load_prompt(name, prompts_dir)
    return template.text, template.sha(12)


# ---------------------------------------------------------------- in-context examples + prompt


def select_icl_examples(case: dict, pool: Sequence[dict], n: int, seed: int = 0) -> list[dict]:
    """``n`` answerable cases from ``pool`` other than ``case`` (and not its variants / pair), seeded.

    Candidates need a reference answer and expected_behavior "answer"; selection depends only on
    (seed, case_id, pool), so re-runs and resumed runs see the same examples.
    """
    if n <= 0:
        return []
    me = case["case_id"]
    family = {me, case.get("base_case_id")} - {None}
    pair = case.get("pair_id")
    cands = [
        c for c in pool
        if c["case_id"] not in family
        and c.get("base_case_id") not in family
        and (pair is None or c.get("pair_id") != pair)
        and c.get("reference_answer")
        and (c.get("expected_behavior") or "answer") == "answer"
    ]
    cands.sort(key=lambda c: c["case_id"])
    rng = random.Random(f"{seed}:{me}:icl")
    return rng.sample(cands, min(n, len(cands)))


_SLOT = re.compile(r"\{\{(\w+)\}\}")


def _fill(template: str, values: dict[str, str]) -> str:
    return _SLOT.sub(lambda m: values.get(m.group(1), ""), template)


def _options_block(options: Sequence[str] | None) -> str:
    if not options:
        return ""
    letters = "ABCDEFGHIJ"
    return "Options:\n" + "\n".join(f"{letters[i]}. {o}" for i, o in enumerate(options)) + "\n"


def render_prompt(template: str, query: str, options: Sequence[str] | None, passages: Sequence[Passage],
                  examples: Sequence[dict] = ()) -> str:
    ex = ""
    if examples:
        blocks = []
        for i, e in enumerate(examples, start=1):
            blocks.append(f"Example {i}:\nQuestion: {e['query']}\n{_options_block(e.get('options'))}Answer: {e['reference_answer']}")
        ex = "\n" + "\n\n".join(blocks) + "\n"
    context = "\n\n".join(f"[{p.rank}] {p.text.strip()}" for p in passages) if passages else "(no passages retrieved)"
    return _fill(template, {"examples": ex, "context": context, "question": query.strip(), "options": _options_block(options)})


# ---------------------------------------------------------------- records + checkpoint store

RESPONSE_FIELDS = list(RAG_RESPONSES)


def empty_responses() -> pl.DataFrame:
    return pl.DataFrame(schema=RAG_RESPONSES)


def responses_frame(records: Iterable[dict]) -> pl.DataFrame:
    rows = [{k: r.get(k) for k in RESPONSE_FIELDS} for r in records]
    if not rows:
        return empty_responses()
    return pl.DataFrame(rows, schema=RAG_RESPONSES)


class CheckpointStore:
    """Append-only JSONL of finished responses under ``directory`` (one file per golden-set version).

    The latest record of a key wins. A torn last line (crash mid-write) is ignored and counted in
    ``torn_lines``. Thread-safe appends. ``FIELDS``: the columns of a record (a subclass storing
    other records overrides it).
    """

    FIELDS: list[str] = RESPONSE_FIELDS

    def __init__(self, directory: str | Path):
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "responses.jsonl"
        self._lock_path = self.dir / ".responses.jsonl.lock"  # the shard steps of a night append from several processes
        self._lock = threading.Lock()
        self.torn_lines = 0
        self._records: dict[tuple[str, str, str], dict] = {}
        if self.path.exists():
            with self.path.open("r", encoding="utf-8") as f:
                for line in f:
                    if not line.strip():
                        continue
                    try:
                        r = json.loads(line)
                    except json.JSONDecodeError:
                        self.torn_lines += 1
                        continue
                    self._records[(r["case_id"], r["system_id"], r["config_hash"])] = r
            # a torn last line (crash mid-write) must not swallow the next appended record; under the lock, so a shard
            # step appending in another process is never cut mid-line
            with file_lock(self._lock_path), self.path.open("rb+") as f:
                f.seek(0, os.SEEK_END)
                if f.tell() > 0:
                    f.seek(-1, os.SEEK_END)
                    if f.read(1) != b"\n":
                        f.write(b"\n")

    @staticmethod
    def key(case_id: str, system_id: str, cfg_hash: str) -> tuple[str, str, str]:
        return (case_id, system_id, cfg_hash)

    def get(self, case_id: str, system_id: str, cfg_hash: str) -> dict | None:
        return self._records.get((case_id, system_id, cfg_hash))

    def put(self, record: dict) -> None:
        record = {k: record.get(k) for k in self.FIELDS}  # the same shape in memory as on disk
        line = json.dumps(record, ensure_ascii=False) + "\n"
        with self._lock, file_lock(self._lock_path):
            with self.path.open("a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            self._records[self.key(record["case_id"], record["system_id"], record["config_hash"])] = record

    def __len__(self) -> int:
        return len(self._records)


# ---------------------------------------------------------------- systems + execution


def error_text(exc: BaseException) -> str:
    kind = getattr(exc, "kind", None) or type(exc).__name__
    return f"{kind}: {exc}"


class RagPipeline:
    """A RAG system under test: retrieve (+ seeded distractor), render the prompt (+ ICL), generate."""

    def __init__(self, cfg: SystemConfig, retriever: Retriever, llm, llm_id: str, icl_pool: Sequence[dict] = (),
                 prompts_dir: Path = PROMPTS_DIR):
        self.cfg, self.retriever, self.llm = cfg, retriever, llm
        self.template, self.prompt_sha = load_prompt(cfg.prompt, prompts_dir)
        self.config_hash = system_config_hash(cfg, llm_id, self.prompt_sha)
        self.icl_pool = list(icl_pool)
        self._prefetched: dict[str, list[Passage]] = {}

    @property
    def system_id(self) -> str:
        return self.cfg.system_id

    def prefetch(self, cases: Sequence[dict]) -> None:
        """Retrieve for many cases at once (one batched query embedding for dense / hybrid)."""
        if not cases:
            return
        got = self.retriever.retrieve_batch([retrieval_query(c) for c in cases], self.cfg.top_k,
                                            [c.get("source_chunk_ids") or [] for c in cases])
        self._prefetched.update({c["case_id"]: p for c, p in zip(cases, got)})

    def passages(self, case: dict) -> list[Passage]:
        ps = self._prefetched.pop(case["case_id"], None)
        if ps is None:
            ps = self.retriever.retrieve(retrieval_query(case), self.cfg.top_k, case.get("source_chunk_ids") or [])
        if self.cfg.inject_distractors and self.cfg.retriever != "closed_book":
            ps = inject_distractor(ps, case.get("distractor_passage"), self.cfg.seed, case["case_id"])
        return ps

    def respond(self, case: dict) -> dict:
        ps = self.passages(case)
        examples = select_icl_examples(case, self.icl_pool, self.cfg.icl_examples, self.cfg.seed)
        prompt = render_prompt(self.template, case["query"], case.get("options"), ps, examples)
        rec = {
            "case_id": case["case_id"], "system_id": self.system_id, "config_hash": self.config_hash,
            "query": case["query"], "contexts": [p.text for p in ps], "context_chunk_ids": [p.chunk_id for p in ps],
            "context_ranks": [p.rank for p in ps], "answer": None, "latency_s": None, "input_tokens": None,
            "output_tokens": None, "cost_usd": None, "error": None,
        }
        t0 = time.perf_counter()
        try:
            limit = self.cfg.attack_max_tokens if case.get("expected_behavior") in DECLINE_BEHAVIOURS else self.cfg.max_tokens
            r = self.llm.generate(conversation_messages(case, prompt), max_tokens=min(limit, self.cfg.max_tokens),
                                  temperature=self.cfg.temperature, seed=self.cfg.seed)
        except Exception as e:  # LLMCallFailed after the resource's retries, or anything else: a value
            rec.update(error=error_text(e), latency_s=time.perf_counter() - t0)
            return rec
        rec.update(answer=r.text.strip(), latency_s=float(r.latency_s), input_tokens=int(r.input_tokens),
                   output_tokens=int(r.output_tokens), cost_usd=None if r.cost_usd is None else float(r.cost_usd))
        return rec


def retrieval_query(case: dict) -> str:
    """What a reference system retrieves for: the question, with a multi-turn case's earlier user turns before it (the
    referent of "that method" is in them)."""
    earlier = [t["content"] for t in case.get("history") or [] if t.get("role") == "user"]
    return " ".join([*earlier, case["query"]])


def conversation_messages(case: dict, prompt: str) -> str | list[dict]:
    """The LLM input: the prompt alone, or a multi-turn case's earlier turns as chat messages and then the prompt
    (passages + last question) as the last user message (golden-eval §2.2; scored on that last turn)."""
    history = [{"role": t["role"], "content": t["content"]} for t in case.get("history") or []]
    return [*history, {"role": "user", "content": prompt}] if history else prompt


@dataclass
class RunStats:
    resumed: int = 0  # finished earlier in this same run (its checkpoint): not asked again
    reused: int = 0  # taken from an earlier run by a reusable system (``reused_from`` set on the record)
    called: int = 0
    failed: int = 0
    seconds: float = 0.0
    per_system: dict = field(default_factory=dict)  # system_id -> {"called", "resumed", "reused", "failed", "call_seconds"}

    def _sys(self, sid: str) -> dict:
        return self.per_system.setdefault(sid, {"called": 0, "resumed": 0, "reused": 0, "failed": 0, "call_seconds": 0.0})


def run_responses(
    systems: Sequence,
    cases: Sequence[dict],
    store: CheckpointStore,
    concurrency: int = 1,
    retry_failed: bool = True,
    on_record: Callable[[dict], None] | None = None,
    reuse: Callable[[str, str, str], tuple[dict, str] | None] | None = None,
    reusable: Callable[[object], bool] = lambda s: False,
) -> tuple[list[dict], RunStats]:
    """Every system × every case, resuming from ``store``; returns (records in system/case order, stats).

    ``systems`` are objects with ``system_id``, ``config_hash`` and ``respond(case) -> record``
    (optionally ``prefetch(cases)``). Finished responses in the store are resumed without a call;
    stored failures are retried when ``retry_failed``. For systems where ``reusable(system)`` is
    true, ``reuse(case_id, system_id, config_hash)`` may return (an earlier run's successful record,
    that run's label): it is copied into this run's store with ``reused_from`` = the label, not asked
    again. Each completed response is checkpointed before the next one starts.
    KeyboardInterrupt / SystemExit propagate (checkpoints stay).
    """
    stats = RunStats()
    t0 = time.perf_counter()
    todo: list[tuple[object, dict]] = []
    for s in systems:
        pending = []
        can_reuse = reuse is not None and reusable(s)
        for c in cases:
            old = store.get(c["case_id"], s.system_id, s.config_hash)
            if old is not None and (old.get("error") is None or not retry_failed):
                stats.resumed += 1
                stats._sys(s.system_id)["resumed"] += 1
                continue
            earlier = reuse(c["case_id"], s.system_id, s.config_hash) if can_reuse else None
            if earlier is not None and earlier[0].get("error") is None:
                store.put({**earlier[0], "reused_from": earlier[0].get("reused_from") or earlier[1]})
                stats.reused += 1
                stats._sys(s.system_id)["reused"] += 1
            else:
                pending.append(c)
        if pending and hasattr(s, "prefetch"):
            s.prefetch(pending)
        todo.extend((s, c) for c in pending)

    def one(s, c) -> dict:
        t = time.perf_counter()
        rec = s.respond(c)
        rec["_call_s"] = time.perf_counter() - t
        return rec

    def done(rec: dict) -> None:
        call_s = rec.pop("_call_s", 0.0)
        store.put(rec)
        st = stats._sys(rec["system_id"])
        st["called"] += 1
        st["call_seconds"] += call_s
        stats.called += 1
        if rec.get("error") is not None:
            st["failed"] += 1
            stats.failed += 1
        if on_record:
            on_record(rec)

    if concurrency <= 1:
        for s, c in todo:
            done(one(s, c))
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            it = iter(todo)
            running = set()
            try:
                for s, c in it:
                    running.add(pool.submit(one, s, c))
                    if len(running) >= concurrency:
                        finished, running = wait(running, return_when=FIRST_COMPLETED)
                        for f in finished:
                            done(f.result())
                for f in list(running):
                    done(f.result())
                    running.discard(f)
            except BaseException:
                for f in running:
                    f.cancel()
                raise
    stats.seconds = time.perf_counter() - t0
    records = []
    for s in systems:
        for c in cases:
            r = store.get(c["case_id"], s.system_id, s.config_hash)
            if r is not None:
                records.append(r)
    return records, stats


def failure_rates(records: Sequence[dict]) -> dict[str, float]:
    """system_id -> share of its responses with an error."""
    tot: dict[str, int] = {}
    bad: dict[str, int] = {}
    for r in records:
        tot[r["system_id"]] = tot.get(r["system_id"], 0) + 1
        bad[r["system_id"]] = bad.get(r["system_id"], 0) + (r.get("error") is not None)
    return {s: bad[s] / tot[s] for s in tot}


def _floor_units(keys: list[str], units: dict[str, list[int]], info: dict[str, dict], floors: dict[str, int]) -> list[str]:
    """The units (seeded order) that give each rule of ``floors`` its rows, in the floors' order."""
    from hcat_pipeline.golden.case_rules import rule_for
    from hcat_pipeline.golden.yes_no import answer_key

    def fits(k: str, rule: str, group: str) -> bool:  # "rule@group": a scope with known groups (a yes/no case's answer)
        return rule_for(info[k]) == rule and (not group or (info[k].get("query_type") == "yes_no"
                                                             and answer_key(info[k].get("reference_answer")) == group))

    chosen: list[str] = []
    for floor, n in floors.items():
        rule, _, group = floor.partition("@")
        have = sum(len(units[c]) for c in chosen if fits(c, rule, group))
        for k in (k for k in keys if fits(k, rule, group) and k not in chosen):
            if have >= n:
                break
            chosen.append(k)
            have += len(units[k])
    return chosen


def select_cases(golden: pl.DataFrame, max_cases: int, seed: int = 0, floors: dict[str, int] | None = None) -> pl.DataFrame:
    """The night's cases: every case a release gate needs, then at most ``max_cases`` more (0 = all), chosen for
    coverage first, then spread (seeded):

    0. ``floors``: behaviour rule → cases (``behaviour.rule_for``) a release gate needs in scope (its ``min_n``, or the
       probes a zero-tolerance gate's certificate needs: ``gates.spec.rule_floors``), taken first and never cut by
       ``max_cases``, so no gate is INDETERMINATE by construction where the golden set holds enough such cases;
    1. one happy-path case per topic stratum, preferring query types not yet taken, then one for any
       query type still missing (every stratum and every type answered as soon as the budget allows) — within what
       the budget leaves after one slot per kind of step 2, so a small night still sees every kind;
    2. one case of every other kind (category × variant kind: typo, injection, out-of-scope, …; one
       counterfactual pair per demographic attribute);
    3. the rest round-robin over categories, and within a category over its strata.

    A counterfactual pair is one unit (both members or neither), so the bias checks get complete pairs, and so is a
    paraphrase group (the base case and its rewordings: the per-case variance needs all of them); a floor counts rows
    (a pair gives two).
    """
    if max_cases <= 0 or golden.height <= max_cases:
        return golden
    rows = golden.to_dicts()
    rng = random.Random(f"{seed}:select_cases")
    units: dict[str, list[int]] = {}  # a unit = one case, or both members of a pair
    for i, r in enumerate(rows):
        units.setdefault(r.get("pair_id") or (r.get("base_case_id") if r.get("variant_kind") == "paraphrase" else None) or r["case_id"], []).append(i)
    keys = sorted(units)
    rng.shuffle(keys)
    # a paraphrase group (its base case and the rewordings) is one unit of kind robustness / paraphrase
    info = {k: rows[max(units[k], key=lambda i: rows[i].get("variant_kind") == "paraphrase")] for k in keys}
    chosen = _floor_units(keys, units, info, floors or {})
    budget = sum(len(units[c]) for c in chosen) + max_cases  # max_cases more beyond what the gates need

    def take(k: str) -> None:
        if k not in chosen and sum(len(units[c]) for c in chosen) + len(units[k]) <= budget:
            chosen.append(k)

    def kind(k: str) -> tuple[str, str, str]:  # counterfactual pairs: one per attribute
        return str(info[k].get("category")), str(info[k].get("variant_kind")), str(info[k].get("attribute"))

    kind_picks = [next(k for k in keys if kind(k) == w) for w in sorted({kind(k) for k in keys} - {("happy_path", "None", "None")})]
    # a small budget keeps one slot per other kind: the strata get what is left (at least one), the rest in step 4
    strata_budget = len(chosen) + max(1, max_cases - sum(len(units[k]) for k in kind_picks))
    happy = [k for k in keys if info[k].get("category") == "happy_path"]
    types_seen: set = set()
    for stratum in sorted({str(info[k].get("stratum")) for k in happy}):
        if len(chosen) >= strata_budget:
            break
        mine = [k for k in happy if str(info[k].get("stratum")) == stratum]
        pick = next((k for k in mine if info[k].get("query_type") not in types_seen), mine[0])
        types_seen.add(info[pick].get("query_type"))
        take(pick)
    for qtype in sorted({str(info[k].get("query_type")) for k in happy}):  # a type no stratum pick brought in
        if len(chosen) < strata_budget and not any(str(info[c].get("query_type")) == qtype for c in chosen):
            take(next(k for k in happy if str(info[k].get("query_type")) == qtype))
    for k in kind_picks:
        take(k)
    by_cat: dict[str, dict[str, list[str]]] = {}
    for k in keys:
        by_cat.setdefault(str(info[k].get("category")), {}).setdefault(str(info[k].get("stratum")), []).append(k)
    queues = []
    for cat in sorted(by_cat):
        strata, q = by_cat[cat], []
        while any(strata.values()):
            q.extend(strata[st].pop(0) for st in sorted(strata) if strata[st])
        queues.append(q)
    while any(queues) and sum(len(units[c]) for c in chosen) < budget:
        for q in queues:
            if q:
                take(q.pop(0))
    return golden[sorted(i for k in chosen for i in units[k])]
