"""Grounded happy-path generation: the reference is a source sentence, polarity from the source, budget per stratum."""

from types import SimpleNamespace

from hcat_pipeline.golden.grounded import build_request, generate_grounded, reference_sentences

SAVINGS = (
    "The Easy Saver account is a variable-rate savings account for customers aged 16 or over. "
    "Interest is calculated daily on the cleared balance and paid monthly on the first business day of the month.\n"
    "| rate | 1.5 | (4)(5) |\n"
    "It is not possible to make cash withdrawals from the Easy Saver account at any branch. "
    "You can make up to three withdrawals in each calendar year without losing interest."
)


class _LLM:
    """Writes a question naming the statement or sentence it was given; records the user messages."""

    def __init__(self, answer=lambda question, passage: "Yes, as the passage says."):
        self.seen, self.answer = [], answer

    def generate(self, messages, json_schema=None, **kw):
        user = messages[-1]["content"]
        self.seen.append(user)
        if "\nQuestion:" in user:  # the round trip: answer from the passage
            passage, question = user.split("Passage:", 1)[1].split("\nQuestion:", 1)
            return SimpleNamespace(data={"answer": self.answer(question.strip(), passage.strip())}, text="", model="fake")
        line = [ln for ln in user.splitlines() if ln.startswith(("Sentence:", "Statement:", "Sentence 1:"))][0].split(":", 1)[1].strip()
        answer = [ln.split(":", 1)[1].strip() for ln in user.splitlines() if ln.startswith("Answer:")]
        line = line.replace(answer[0], "what") if answer else line  # a span question does not name its answer
        return SimpleNamespace(data={"question": f"Is it true that {line.rstrip('.')}?"}, text="", model="fake", latency_s=0.0,
                               input_tokens=1, output_tokens=1)  # fmt: skip


def test_reference_sentences_are_claims_a_reviewer_would_sign():
    sents = reference_sentences(SAVINGS)
    assert sents[0].startswith("The Easy Saver account") and len(sents) == 3
    assert not any("|" in s or s.startswith("It ") for s in sents)  # no table row, nothing leaning on the sentence before
    noisy = ("Special Attributes ****************** The implementation adds a few special read-only attributes to objects. "
             "See http://example.org/advisory.html for details on how hash values change. "
             "Return a copy of the string with the leading characters removed from it. "
             "Function attributes on built-in functions may be supported in the future.* A cell object has an attribute.")
    assert reference_sentences(noisy) == []  # the default corpus' failures: a heading, a URL, an imperative, two run together
    from hcat_pipeline.golden.claims import sentence_problem

    for glued in ("Common Sequence Operations The operations in the following table are supported by most sequence types.",
                  'Missing slice items are always filled in with "None". object.__getitem__(self, key) Called to implement it.',
                  'The context manager’s "__enter__()" method is invoked when the block is entered. 5.',
                  "A consequence of this is that the syntax may appear after the keyword arguments in a call."):
        assert sentence_problem(glued) is not None, glued


def test_yes_no_questions_invert_the_source_without_an_llm():
    from hcat_pipeline.golden.claims import yes_no_question

    assert yes_no_question('The return value of "__str__()" must be a string object.') == 'Must the return value of "__str__()" be a string object?'
    assert yes_no_question("The return value must be a string object.") is None  # the return value of what?
    assert yes_no_question('Item *i* of sequence *a* is selected by "a[i]".') == 'Is item *i* of sequence *a* selected by "a[i]"?'
    assert yes_no_question("The Easy Saver account cannot be held jointly.") is None  # a negated question has no clear "yes"
    assert yes_no_question("The account can be closed online, however the card must be returned.") is None  # two claims
    assert yes_no_question("Numeric types used for keys obey the normal rules.") is None  # no auxiliary: no question by rule
    assert yes_no_question("If the value is empty, it is ignored.") is None
    assert yes_no_question("The exec() and eval() functions have optional arguments.") is None  # "have" as the main verb
    assert yes_no_question("In this mode the account is closed after a year.") is None
    assert yes_no_question("The *fill* value has been converted to a string.") == "Has the *fill* value been converted to a string?"


def test_yes_no_polarity_comes_from_the_source():
    """"yes" asks the sentence as it stands; "no" a claim the sentence contradicts, made by rule (a negated sentence's
    positive claim, an antonym) and read as "no" by the polarity reader; never a negated question, never a "yes" for a
    negated sentence. The generator writes the question from the claim (not the sentence with two words swapped)."""
    chunk = {"chunk_id": "c1", "text": SAVINGS, "title": "Easy Saver account"}
    sentence = "You can make up to three withdrawals in each calendar year without losing interest."
    yes = build_request(chunk, "yes_no", sentence, None, "yes")
    assert (yes["label"], yes["reference"], yes["values"]) == ("yes", f"Yes. {sentence}", {"sentence": sentence, "title": "Easy Saver account"})
    assert build_request(chunk, "yes_no", sentence, None, "no") is None  # nothing a rule can make false: no "no" case from it
    swappable = "Partial withdrawals are allowed on the Easy Saver account after the first year."
    no = build_request(chunk, "yes_no", swappable, None, "no")
    assert no["claim"] == "Partial withdrawals are forbidden on the Easy Saver account after the first year." and no["reference"] == f"No. {swappable}"
    negated = "The Easy Saver account cannot be held jointly by two customers."
    assert build_request(chunk, "yes_no", negated, None, "yes") is None  # a negated sentence has no clear "yes"
    made = build_request(chunk, "yes_no", negated, None, "no")
    assert (made["claim"], made["label"]) == ("The Easy Saver account can be held jointly by two customers.", "no")


def test_yes_no_questions_are_written_by_the_generator_and_checked():
    from hcat_pipeline.golden.grounded import ask

    chunk = {"chunk_id": "c1", "text": SAVINGS, "title": "Easy Saver account", "stratum": 0}
    swappable = "Partial withdrawals are allowed on the Easy Saver account after the first year."
    llm = _LLM()
    row = ask(chunk, "yes_no", swappable, llm, None, 0, polarity="no")
    assert "Statement: Partial withdrawals are forbidden" in llm.seen[-1] and "Section: Easy Saver account" in llm.seen[-1]
    assert row["query"] == "Is it true that Partial withdrawals are forbidden on the Easy Saver account after the first year?"
    assert (row["answer_label"], row["error"]) == ("no", None)

    class _Negating(_LLM):
        def generate(self, messages, json_schema=None, **kw):
            return SimpleNamespace(data={"question": "Are partial withdrawals not allowed after the first year?"}, text="", model="fake",
                                   latency_s=0.0, input_tokens=1, output_tokens=1)  # fmt: skip

    fallback = ask(chunk, "yes_no", swappable, _Negating(), None, 0, polarity="no")  # adds a negation: the claim inverted by rule
    assert (fallback["query"], fallback["prompt_name"], fallback["error"]) == (
        "Are partial withdrawals forbidden on the Easy Saver account after the first year?", "rules:yes_no_inversion", None)

    class _Other(_LLM):  # asks something else than the claim: not read as asking it
        def generate(self, messages, json_schema=None, **kw):
            return SimpleNamespace(data={"question": "What is the minimum age for an Easy Saver account?"}, text="", model="fake",
                                   latency_s=0.0, input_tokens=1, output_tokens=1)  # fmt: skip

    assert ask(chunk, "yes_no", swappable, _Other(), None, 0, polarity="no")["prompt_name"] == "rules:yes_no_inversion"


def test_candidates_plan_a_polarity_per_stratum_and_a_third_of_yes_no():
    from hcat_pipeline.golden.grounded import candidate_plan
    from hcat_pipeline.golden.yes_no import stratum_polarity, yes_no_allowed

    negated = "The Easy Saver account cannot be held jointly by two customers."
    pool = [{"chunk_id": "a", "text": SAVINGS + " " + negated}]
    plan = candidate_plan(pool, ["simple", "yes_no", "inference"], lambda c: None, "no")
    yes_no = [c for c in plan if c[2] == "yes_no"]
    assert [(c[1], c[3]) for c in yes_no] == [(negated, "no")]  # a "no" slot takes the next sentence a rule can contradict
    assert len(plan) == len({c[1] for c in plan})  # each sentence asked once
    overlapping = [{"chunk_id": "a", "text": SAVINGS + " " + negated}, {"chunk_id": "b", "text": negated + " " + SAVINGS}]
    twice = candidate_plan(overlapping, ["simple", "yes_no", "inference"], lambda c: None, "no")
    assert len(twice) == len(plan) and len({c[1] for c in twice}) == len(twice)  # overlapping chunks: still once each
    assert {stratum_polarity(r, 0) for r in range(2)} == {"yes", "no"} and stratum_polarity(0, 0) != stratum_polarity(1, 0)
    assert [yes_no_allowed(n) for n in (1, 3, 4, 6, 9)] == [1, 1, 1, 2, 3]


def test_yes_no_quota_referent_and_round_trip_reject_in_the_gate():
    from hcat_pipeline.golden.grounded_gate import validity_gate
    from hcat_pipeline_tests.golden_data import bow_embed

    ref = "You can make up to three withdrawals in each calendar year without losing interest."

    def row(qid, query, qtype="simple", **kw):
        return {"query_id": qid, "query_type": qtype, "chunk_id": "c1", "source_chunk_ids": ["c1"], "query": query,
                "reference_answer": ref, "prompt_name": f"query_grounded_{qtype}_v2", "stratum": 0, "stratum_label": "s", **kw}  # fmt: skip

    rows = [
        row("q1", "How many withdrawals can you make from an Easy Saver account each calendar year without losing interest?"),
        row("q2", "How many times can this be done each calendar year without losing interest?"),
        row("q3", "How many withdrawals can you make each calendar year without losing Easy Saver interest?", roundtrip_agrees=False,
            roundtrip_answer="NOT IN PASSAGE"),
        row("q4", "Can Easy Saver customers make up to three withdrawals each calendar year without losing interest?", "yes_no",
            answer_label="yes", reference_answer=f"Yes. {ref}", evidence=ref),
        row("q5", "Can Easy Saver customers make three withdrawals a calendar year and keep their interest?", "yes_no",
            answer_label="yes", reference_answer=f"Yes. {ref}", evidence=ref),
    ]
    kept, rejected = validity_gate(rows, {"c1": SAVINGS}, bow_embed)
    reasons = {r["query_id"]: r["reason"] for r in rejected}
    assert reasons["q2"] == "no_referent" and reasons["q3"] == "roundtrip_disagrees"
    assert reasons.get("q5") in ("yes_no_quota", "case_invalid") and "q4" in {r["query_id"] for r in kept}
    assert sum(r["query_type"] == "yes_no" for r in kept) == 1  # one yes/no of the stratum's kept cases at most


def test_generate_grounded_asks_until_each_stratum_has_its_budget():
    more = ("A fee of 5 pounds applies to each international payment made online. Payments sent after 3 pm on a business day "
            "are processed on the next business day. A recall request costs 25 pounds and is not guaranteed to succeed.")
    pools = {0: [{"chunk_id": "a", "text": SAVINGS, "stratum": 0, "stratum_label": "s"}, {"chunk_id": "a2", "text": more, "stratum": 0, "stratum_label": "s"}],
             1: [{"chunk_id": "b", "text": "Nothing here is a sentence of six words or more", "stratum": 1, "stratum_label": "t"}]}  # fmt: skip
    rounds = []

    def keep(rows):  # every question without an error and with an agreeing round trip survives, but not the very first one asked
        rounds.append(len(rows))
        return {r["query_id"] for r in rows[1:] if not r["error"] and r.get("roundtrip_agrees") is not False}

    llm = _LLM()
    rows, summary = generate_grounded(pools, llm, keep, budget=2, max_requests=6, slack=0, query_types=("simple", "yes_no"), seed=0)
    assert len([r for r in rows if r["stratum"] == 0]) <= 6
    assert 1 in summary["short_strata"] and "no sentence left" in summary["short_strata"][1]
    assert 2 * len(summary["requests_by_round"]) == len(rounds) >= 4  # asked again for what the first round lacked (keep: before
    # and after each round's round trip)
    assert summary["roundtrip_calls"] == sum(r["roundtrip_agrees"] is not None for r in rows) >= 1
    flat = " ".join((SAVINGS + " " + more).split())
    for r in rows:  # grounded by construction
        assert r["reference_answer"].split(". ", 1)[-1] in flat if r["query_type"] == "yes_no" else r["reference_answer"] in flat
    assert len({r["query_id"] for r in rows}) == len(rows)  # one id per sentence asked
    again, _ = generate_grounded(pools, _LLM(), keep, budget=2, max_requests=6, slack=0, query_types=("simple", "yes_no"), seed=0)
    assert [r["query_id"] for r in again] == [r["query_id"] for r in rows]


def test_cut_sentences_and_variable_i_are_not_mistaken():
    from hcat_pipeline.golden.claims import sentence_problem
    from hcat_pipeline.golden.counterfactual import is_personal

    assert "chunk boundary" in sentence_problem("The dotted name in the pattern is not looked up using standard Python name")
    assert "mid-sentence" in sentence_problem('*key* is missing (not in the container), "KeyError" should be raised.')
    assert not is_personal('Is item *i* of sequence *a* selected by "a[i]"?')  # a variable, not the pronoun
    assert is_personal("How do I compare singletons in Python?") and is_personal("Can I close my account?")


def test_validity_gate_keeps_what_the_generation_loop_kept():
    """selected_queries applies the same acceptance as the loop: a grounded question best answered by another sentence of
    its chunk is rejected (case_invalid, stage validity); rows not made by golden.grounded pass through."""
    from hcat_pipeline.golden.grounded_gate import validity_gate
    from hcat_pipeline_tests.golden_data import bow_embed

    ref = "You can make up to three withdrawals in each calendar year without losing interest."

    def row(qid, query, prompt="query_grounded_simple_v1"):
        return {"query_id": qid, "query_type": "simple", "chunk_id": "c1", "source_chunk_ids": ["c1"], "query": query,
                "reference_answer": ref, "prompt_name": prompt, "stratum": 0, "stratum_label": "s"}  # fmt: skip

    good = row("q1", "How many withdrawals can you make in each calendar year without losing interest?")
    off = row("q2", "How is interest on the Easy Saver account calculated on the cleared balance and paid monthly?")
    free = {**off, "query_id": "q3", "prompt_name": "query_simple_v1"}
    kept, rejected = validity_gate([good, off, free], {"c1": SAVINGS}, bow_embed)
    assert [r["query_id"] for r in kept] == ["q1", "q3"]
    assert [(r["query_id"], r["reason"], r["stage"]) for r in rejected] == [("q2", "case_invalid", "validity")]
    assert rejected[0]["detail"]


def test_conditions_and_definitions_are_asked_by_rule():
    from hcat_pipeline.golden.claims import generic_subject, wh_question

    assert wh_question("Claims submitted later are rejected unless a director approves them.") == "Under what condition are claims submitted later rejected?"
    assert wh_question("You must tell us within 14 days if you change address.") == "Under what condition must you tell us within 14 days?"
    assert wh_question('A warning is printed to "sys.stderr" when an exception occurs in a destructor.') == 'When is a warning printed to "sys.stderr"?'
    assert wh_question("The calling convention is a set of assumptions made by the compiler about function arguments.") == "What is the calling convention?"
    assert wh_question("The exchange rate is fixed at the moment you confirm and is shown when you pay.") is None  # two predicates
    assert wh_question("The result is a set of assumptions made by the compiler.") is None  # "the result" of what?
    assert generic_subject("the return value") and generic_subject("This method") and not generic_subject('the "__exit__()" method')
    assert not generic_subject("the value of the counter") and not generic_subject("the Easy Saver account")
    chunk = {"chunk_id": "c1", "text": "Claims submitted later are rejected unless a director approves them."}
    req = build_request(chunk, "simple", chunk["text"], None, 0)
    assert req["question"] == "Under what condition are claims submitted later rejected?" and req["reference"] == chunk["text"]


def test_simple_questions_are_written_for_a_span_and_must_not_name_it():
    from hcat_pipeline.golden.grounded import answer_span, ask

    sentence = "You can make up to three withdrawals in each calendar year without losing interest."
    chunk = {"chunk_id": "c1", "text": SAVINGS, "stratum": 0, "stratum_label": "s"}
    assert answer_span('"index" raises "ValueError" when *x* is not found in *s*.') == "index"
    req = build_request(chunk, "simple", 'The fee is "15 pounds" for a payment made in a branch.', None, 0)
    assert req["values"]["answer"] == "15" and req["prompt"] == "query_grounded_span"

    class Leaky:  # names the answer in its question
        def generate(self, messages, **kw):
            return SimpleNamespace(data={"question": "Is 15 pounds the branch fee?"}, text="{}", model="fake", latency_s=0.0, input_tokens=1, output_tokens=1)

    row = ask(chunk, "simple", 'The fee is "15 pounds" for a payment made in a branch.', Leaky(), None, 0)
    assert row["error"].startswith("answer_in_question") and row["query"] == "Is 15 pounds the branch fee?"  # kept for the reader
    assert answer_span(sentence) is None or answer_span(sentence) in sentence


def test_rule_questions_need_every_referent_in_the_sentence():
    from hcat_pipeline.golden.claims import sentence_problem, wh_question, yes_no_question

    assert yes_no_question("One can think of them as defining the value of an object indirectly.") is None  # them?
    assert wh_question("They are rejected unless a director approves them.") is None
    glued = "A future statement is treated specially at compile time: Changes to the semantics are implemented differently."
    assert sentence_problem(glued) is not None  # two sentences after a colon
    assert sentence_problem("The context manager is entered first: the value is bound to the target of the statement.") is None
    assert yes_no_question("You must ensure that these type objects live as long as the call interface.") is None  # these?


def test_a_no_case_is_made_only_when_the_polarity_reader_sees_the_no():
    """A "no" claim by a swapped word is made only if selection and validity read it as "no" (their lexical reader knows
    negations and a short antonym list, not "first" / "last"): otherwise the sentence gives no "no" case."""
    from hcat_pipeline.golden.yes_no import false_claim

    assert false_claim("You must first describe the structure to the library by creating a new type object for it.") is None
    assert false_claim("A tuple is an immutable sequence of objects in Python.") == ("A tuple is a mutable sequence of objects in Python.", "antonym")


def test_round_trip_agreement_rules():
    from hcat_pipeline.golden.roundtrip import agrees

    ref = 'A rich comparison method may return the singleton "NotImplemented" if it does not implement the operation.'
    assert agrees("NotImplemented", ref, None, "NotImplemented")  # the span question's target in the answer
    assert agrees("['']", 'Splitting an empty string with a specified separator returns "[\'\']".', None, '"[\'\']"')  # no word characters
    assert agrees("It may return the singleton NotImplemented.", ref)  # made of the reference's words
    assert not agrees("The index set is renumbered so that it starts at 0.", ref)  # another sentence of the chunk
    assert not agrees("NOT IN PASSAGE", ref) and not agrees("", ref) and not agrees(None, ref)
    assert agrees("No, it is mutable.", "No. A list is mutable.", "no") and not agrees("Yes.", "No. A list is mutable.", "no")


def test_questions_without_a_referent_are_named():
    from hcat_pipeline.golden.question_checks import referent_problem

    for q in ("What is the *chars* argument?", "Does it return None?", "How many times can this be done each year?",
              "Is the semantics for a slicing as follows?", "Can any Unicode character be encoded this way?",
              "What is the value of the result?", "What does the passage say about fees?"):
        assert referent_problem(q), q
    for q in ("What is the *chars* argument of str.strip()?", "Does a list keep its order?", "Are pairs returned in LIFO order by dict.popitem()?",
              "Which exception does the Easy Saver account raise?", "How does the str.join() method use its argument?"):
        assert referent_problem(q) is None, q


def test_yes_cases_wait_while_they_outnumber_no_cases():
    """Balance: each stratum plans one polarity; a "yes" yes/no case is not asked while the kept "yes" cases outnumber
    the kept "no" ones, so a corpus with few contradictable sentences does not end with every yes/no answer "Yes"."""
    yes_only = ("The Easy Saver account is a savings account for customers aged 16 or over. "
                "Interest on the Easy Saver account is calculated daily on the cleared balance. "
                "The Gold card is a credit card for customers aged 18 or over.")  # a bound: no number swap contradicts it
    pools = {st: [{"chunk_id": f"c{st}", "text": yes_only, "stratum": st, "stratum_label": "s"}] for st in range(4)}

    def keep(rows):
        return {r["query_id"] for r in rows if not r["error"] and r.get("roundtrip_agrees") is not False}

    rows, _ = generate_grounded(pools, _LLM(), keep, budget=3, max_requests=3, slack=0, query_types=("yes_no", "simple"), seed=0)
    labels = [r["answer_label"] for r in rows if r["query_type"] == "yes_no" and not r["error"]]
    assert labels and set(labels) == {"yes"} and len(labels) == 1  # nothing to make "no" from: one "yes", then no more


def test_references_whose_content_is_elsewhere_are_not_used():
    text = ("Called by str(object) and the built-in functions format() and print() to compute the informal string representation. "
            "Most built-in types support a common formatting mini-language, which is described in the next section. "
            "The following identifiers are used as reserved words of the language and cannot be used as identifiers. "
            "The conversion field causes a type coercion before formatting.")
    assert reference_sentences(text) == ["The conversion field causes a type coercion before formatting."]


def test_a_conditioned_claim_makes_no_yes_no_case_and_no_cases_fill_the_quota_first():
    """The wrong key of issue 47 ("Is *errors* checked in Development Mode?" → "No. … not checked … unless Development
    Mode is enabled"): a claim that holds only under a condition gets no yes/no case of either polarity; and when a
    stratum has more yes/no cases than its quota, the "No" ones are kept first (an always-yes system must meet them)."""
    from hcat_pipeline.golden.yes_no import yes_no_quota, yes_no_request

    chunk = {"chunk_id": "c1", "text": "x", "title": "Error handlers"}
    conditioned = "For performance reasons, the value of *errors* is not checked for validity unless Development Mode is enabled."
    assert yes_no_request(chunk, conditioned, "no") is None and yes_no_request(chunk, conditioned, "yes") is None
    plain = "The value of *errors* is not checked for validity in the default build."
    assert yes_no_request(chunk, plain, "no")["label"] == "no"  # the same sentence without its condition still makes a "No"

    def row(qid, label, qtype="yes_no"):
        return {"query_id": qid, "query_type": qtype, "answer_label": label, "stratum": 0}

    reject = lambda r, reason, detail: {**r, "reason": reason}  # noqa: E731
    kept = [row("s1", None, "simple"), row("y1", "yes"), row("y2", "yes"), row("n1", "no")]
    out, rejected = yes_no_quota(kept, lambda r: True, reject)  # 4 kept allow one yes/no: the "No" one, order kept
    assert [r["query_id"] for r in out] == ["s1", "n1"] and {r["query_id"] for r in rejected} == {"y1", "y2"}
    six = [row("s1", None, "simple"), row("s2", None, "simple"), row("y1", "yes"), row("y2", "yes"), row("n1", "no"), row("s3", None, "simple")]
    out, rejected = yes_no_quota(six, lambda r: True, reject)  # 6 kept allow two: the "No" and the first "yes"
    assert [r["query_id"] for r in out] == ["s1", "s2", "y1", "n1", "s3"] and [r["query_id"] for r in rejected] == ["y2"]


def test_a_kept_yes_gets_its_no_twin_by_rule_sharing_one_slot():
    """issue 47: an always-yes system must be caught by the set itself — each kept "Yes" case gets the "No" case of a
    claim its sentence contradicts (no LLM call), and the two count as one yes/no slot of the stratum."""
    from hcat_pipeline.golden.grounded import no_twins
    from hcat_pipeline.golden.yes_no import yes_no_quota

    chunk = {"chunk_id": "c1", "text": SAVINGS, "title": "Easy Saver account", "stratum": 0}
    sentence = "Partial withdrawals are allowed on the Easy Saver account after the first year."
    yes = {"query_id": "q-yes", "query_type": "yes_no", "answer_label": "yes", "chunk_id": "c1", "evidence": sentence, "stratum": 0,
           "query": "Are partial withdrawals allowed on the Easy Saver account after the first year?", "generation_round": 1}
    unmakeable = {**yes, "query_id": "q-yes2", "evidence": "You can make up to three withdrawals in each calendar year without losing interest."}
    twins = no_twins([yes, unmakeable, {**yes, "query_id": "q-s", "query_type": "simple"}], {"c1": chunk}, seed=0)
    assert len(twins) == 1  # no rule makes the second sentence false; a simple case has no twin
    twin = twins[0]
    assert (twin["query"], twin["answer_label"], twin["reference_answer"]) == (
        "Are partial withdrawals forbidden on the Easy Saver account after the first year?", "no", f"No. {sentence}")
    assert twin["prompt_name"] == "rules:yes_no_inversion" and twin["evidence"] == sentence and twin["stratum"] == 0
    others = [{"query_id": f"s{i}", "query_type": "simple", "stratum": 0} for i in range(2)]
    out, rejected = yes_no_quota([*others, yes, twin], lambda r: True, lambda r, reason, detail: r)  # 4 kept: one slot
    assert {r["query_id"] for r in out} == {"s0", "s1", "q-yes", twin["query_id"]} and rejected == []


def test_query_types_are_handed_out_in_the_campaign_files_shares():
    """HCAT §2 step 5.3 in the shares the campaign file sets: any 20 slots hold each type share × 20 times, a share for a
    type not asked for or an unknown type is refused by name, and the kept mix is reported against the target."""
    import pytest

    from hcat_pipeline.golden.query_mix import DEFAULT_SHARES, mix_report, type_sequence, type_shares

    shares = type_shares(list(DEFAULT_SHARES))
    seq = type_sequence(shares, seed=3)
    assert {t: seq.count(t) for t in shares} == {"simple": 7, "inference": 3, "yes_no": 6, "multi_hop": 2, "multiple_choice": 2}
    assert seq[:5] != ["simple"] * 5  # interleaved, not in blocks
    mine = type_shares(["simple", "multiple_choice"], {"simple": 3, "multiple_choice": 1})
    assert mine == {"simple": 0.75, "multiple_choice": 0.25}
    assert type_shares(["simple", "yes_no"], {"simple": 1.0}) == {"simple": 1.0, "yes_no": 0.0}  # unlisted: not asked
    for bad, word in ((({"simple"}, {"yes_no": 1.0}), "yes_no"), ((["nope"], None), "nope"), ((["simple"], {"simple": 0.0}), "sum to 0")):
        with pytest.raises(ValueError, match=word):
            type_shares(*bad)
    report = mix_report(["simple"] * 8 + ["yes_no"] * 2, {"simple": 0.5, "yes_no": 0.5})
    assert report["by_type"]["simple"] == {"target": 0.5, "kept": 8, "share": 0.8} and report["off_target"] == [
        "simple: 8 of 10 (80%) vs 50%", "yes_no: 2 of 10 (20%) vs 50%"]


def test_grounded_multiple_choice_keys_the_span_among_mined_distractors():
    """A multiple-choice case is the span question with four options: the span (the reference) and three distractors of
    its shape, in a seeded order; too few distractors is a type_mismatch row with no LLM call spent."""
    from hcat_pipeline.golden.grounded import ask
    from hcat_pipeline.golden.selection import SelectionConfig, select_queries
    from hcat_pipeline_tests.golden_data import bow_embed

    text = 'The fee is "15 pounds" for a payment made in a branch of the bank.'
    chunk = {"chunk_id": "c1", "text": text, "stratum": 0, "stratum_label": "fees", "title": "Branch payments"}
    llm = _LLM()
    row = ask(chunk, "multiple_choice", text, llm, None, 7, distractors_of=lambda a, c: ["25", "40", "15", "60", "90"])
    assert row["error"] is None and row["reference_answer"] == "15" and row["evidence"] == text
    assert sorted(row["options"]) == ["15", "25", "40", "60"] and row["options"][row["correct_index"]] == "15"
    again = ask(chunk, "multiple_choice", text, _LLM(), None, 7, distractors_of=lambda a, c: ["25", "40", "15", "60", "90"])
    assert again["options"] == row["options"]  # deterministic
    calls = len(llm.seen)
    short = ask(chunk, "multiple_choice", text, llm, None, 7, distractors_of=lambda a, c: ["25"])
    assert short["error"].startswith("type_mismatch: 1 distractor(s)") and len(llm.seen) == calls
    kept, rejected = select_queries([{**row, "query": "What is the fee for a payment made in a branch of the bank?"}], {"c1": text},
                                    bow_embed, SelectionConfig())  # fmt: skip
    assert [k["query_id"] for k in kept] == [row["query_id"]], rejected


def test_generate_grounded_asks_every_type_in_its_share():
    """Over strata with enough sentences, the requests follow the shares: multi-hop (when listed) and multiple choice are
    asked in the grounded mode, and the summary carries the target shares and the kept types."""
    from hcat_pipeline.golden.grounded import GROUNDED_TYPES
    from hcat_pipeline.golden.query_mix import type_shares

    sents = [f"The {w} account pays {n} pounds of interest because the balance stays above {n * 10} pounds." for w, n in
             (("gold", 3), ("silver", 4), ("bronze", 5), ("green", 6), ("blue", 7), ("red", 8), ("white", 9), ("black", 11))]  # fmt: skip
    pools = {st: [{"chunk_id": f"c{st}{i}", "text": s, "stratum": st, "stratum_label": f"s{st}", "title": "Savings accounts"}
                  for i, s in enumerate(sents)] for st in (0, 1)}  # fmt: skip
    partner = lambda c: next({"chunk_id": o["chunk_id"], "text": o["text"]} for o in pools[c["stratum"]] if o["chunk_id"] != c["chunk_id"])  # noqa: E731
    rows, summary = generate_grounded(pools, _LLM(), keep=lambda rows: {r["query_id"] for r in rows if not r.get("error")}, budget=8,
                                      max_requests=8, partner_of=partner, distractors_of=lambda a, c: ["12", "13", "14"], roundtrip=False,
                                      query_types=GROUNDED_TYPES)  # fmt: skip
    asked = [r["query_type"] for r in rows if r.get("generation_round") == 1]
    assert {"multi_hop", "multiple_choice"} <= set(asked) and summary["type_shares"] == type_shares(GROUNDED_TYPES)
    assert asked.count("simple") >= asked.count("multi_hop") and len(summary["kept_types"]) == sum(summary["kept_per_stratum"].values())


def test_each_slot_takes_the_next_sentence_its_type_fits():
    """The requests follow the shares as far as the sentences allow: a multiple-choice slot skips a sentence without an
    answer term and takes the next one that has one; a multi-hop slot needs a partner sentence sharing two content words."""
    from hcat_pipeline.golden.grounded import candidate_plan, fits, partner_sentence

    text = ("Interest on the Easy Saver account is calculated daily on the cleared balance of the account. "
            'A same-day transfer made at a branch of the bank costs "15 pounds" for every customer. '
            "Savings held in the Easy Saver account earn interest calculated daily on the cleared balance.")  # fmt: skip
    chunk = {"chunk_id": "a", "text": text}
    plan = candidate_plan([chunk], ["multiple_choice", "simple"], lambda c: None)
    assert plan[0][2] == "multiple_choice" and "15 pounds" in plan[0][1]  # skipped ahead to the sentence with a term
    assert len(plan) == 3 and len({c[1] for c in plan}) == 3  # every sentence asked once
    partner = {"chunk_id": "b", "text": "Interest on the Fixed Bond account is paid once a year on the anniversary of the deposit."}
    first = text.split(". ")[0] + "."
    assert partner_sentence(first, partner) is not None and fits(chunk, first, "multi_hop", lambda c: partner)
    assert not fits(chunk, 'A same-day transfer made at a branch of the bank costs "15 pounds" for every customer.', "multi_hop", lambda c: partner)


def test_a_multi_hop_round_trip_must_use_both_sentences():
    from hcat_pipeline.golden.roundtrip import agrees_hops

    first = "User-defined classes have __eq__() and __hash__() methods by default."
    second = "By default, the __hash__() values of str and bytes objects are salted with an unpredictable random value."
    assert not agrees_hops("The hash values of str and bytes objects are salted with a random value.", first, second)  # one hop
    assert agrees_hops("User-defined classes get __eq__ by default, and str and bytes hashes are salted.", first, second)
    assert not agrees_hops("NOT IN PASSAGE", first, second)


def test_never_more_yes_than_no_cases_so_an_always_yes_system_loses_half():
    from hcat_pipeline.golden.yes_no import yes_no_balance

    rows = [{"query_id": f"q{i}", "query_type": "yes_no", "answer_label": lab} for i, lab in enumerate(["yes", "yes", "no", "yes", "yes"])]
    rows.append({"query_id": "s", "query_type": "simple", "answer_label": None})
    kept, rejected = yes_no_balance(rows, lambda r: True, lambda r, reason, detail: {"query_id": r["query_id"], "reason": reason})
    assert [r["query_id"] for r in kept] == ["q0", "q2", "s"] and {r["reason"] for r in rejected} == {"yes_no_balance"}
    assert len(yes_no_balance(rows[:2], lambda r: True, lambda *a: a)[0]) == 1  # no "No": one "Yes" kept


def test_a_question_made_of_the_consequence_clause_alone_is_refused():
    """Issue 68: "What is lost?" of "If the server stops, the data is lost." has no answer a stranger could give — the
    condition is the sentence's point; a question that keeps the condition is written."""
    from hcat_pipeline.golden.grounded import ask, consequence_only

    sentence = "If the payment is made after the cut-off time, the transfer is processed on the next business day."
    assert consequence_only("When is the transfer processed?", sentence) == "If the payment is made after the cut-off time"
    assert consequence_only("When is a transfer paid after the cut-off time processed?", sentence) is None
    assert consequence_only("When is the transfer processed?", "The transfer is processed on the next business day.") is None

    class _Asks(_LLM):
        def __init__(self, question):
            super().__init__()
            self.question = question

        def generate(self, messages, json_schema=None, **kw):
            return SimpleNamespace(data={"question": self.question}, text="", model="fake", latency_s=0.0, input_tokens=1, output_tokens=1)

    chunk = {"chunk_id": "c1", "text": sentence, "title": "Transfers", "stratum": 0}
    row = ask(chunk, "inference", sentence, _Asks("On which day is the transfer processed?"), None, 0)
    assert row["error"].startswith("consequence_clause:") and row["query"] == "On which day is the transfer processed?"
    kept = ask(chunk, "inference", sentence, _Asks("What happens to a payment made after the cut-off time?"), None, 0)
    assert kept["error"] is None
