"""Yes/no cases of the grounded golden set (issue 32): polarity from the source, balanced, at most a third of a stratum.

``false_claim``: a claim the source sentence contradicts, by rule; ``yes_no_request``: the request for a polarity;
``yes_no_form_problem``: why a generated yes/no question is not one; ``stratum_polarity`` / ``yes_no_allowed`` /
``yes_no_quota``: the balance and the share. See ``golden.grounded`` for how they are used.
"""

from __future__ import annotations

import random
import re

from hcat_pipeline.golden.claims import sentence_problem, subject_split, yes_no_question
from hcat_pipeline.golden.contradiction import contradict_sentence, swap_antonym_or_number
from hcat_pipeline.golden.generation import item_seed
from hcat_pipeline.golden.selection import AUXILIARIES, reference_polarity

YES_NO_MAX_WORDS = 30  # a longer reference sentence makes a yes/no question no user would ask
YES_NO_MIN_WORDS = 6  # a rule-made probe may ask a short fact ("pg_dumpall does not support the directory format.")
_NEGATED = re.compile(r"\b(?:not|cannot|never|no)\b|n't\b", re.I)
# a claim that holds only under a condition has no clean yes/no: a question that drops the condition flips the answer
# ("The value of *errors* is not checked unless Development Mode is enabled" asked as "Is *errors* checked in
# Development Mode?" keys "No" where the answer is yes)
_CONDITIONED = re.compile(r"\b(?:unless|except|otherwise|only (?:if|when)|provided(?: that)?|as long as)\b", re.I)


def section_title(chunk: dict) -> str:
    return (chunk.get("title") or chunk.get("stratum_label") or "").strip()


def false_claim(sentence: str, **problem_args) -> tuple[str, str] | None:
    """(a claim the source sentence contradicts, the rule), made by rule, never by adding a negation (a negated question
    has no clear "yes"): a negated sentence's positive claim ("X cannot be held jointly" → "X can be held jointly"), else
    an antonym or a number swapped — kept only when the polarity reader sees the sentence deny it, so selection and
    validity read the same "No". ``problem_args``: ``claims.sentence_problem``'s bounds for the claim."""
    contra = contradict_sentence(sentence)
    if not (contra and contra[1] == "remove_negation"):
        contra = swap_antonym_or_number(sentence)
    if contra is None:
        return None
    contra = (re.sub(r"\b([Aa])n? (?=(\w))", lambda m: m.group(1) + ("n " if m.group(2)[0].lower() in "aeiou" else " "), contra[0]), contra[1])
    if sentence_problem(contra[0], **problem_args) or _NEGATED.search(contra[0]):
        return None
    return contra if reference_polarity("Is it true that " + contra[0], sentence) == "no" else None


def yes_no_request(chunk: dict, sentence: str, polarity: str) -> dict | None:
    """A yes/no request with its polarity from the source: "yes" asks the (affirmative) sentence itself, "no" a claim the
    sentence contradicts (``false_claim``). The generator writes the question from the claim and the section title, so
    it is not the reference sentence with two words swapped; the reference is "Yes." / "No." and the true sentence.
    None when the polarity does not fit the sentence (a negated sentence has no "yes"; no rule makes it false; the claim
    holds only under a condition — "unless", "except", "only if" — which a yes/no question would drop)."""
    if len(sentence.split()) > YES_NO_MAX_WORDS or _CONDITIONED.search(sentence):
        return None
    if polarity == "yes":
        if _NEGATED.search(sentence) or yes_no_question(sentence) is None:
            return None  # a negated sentence has no clear "yes"; without a rule inversion to fall back on, "yes" cases are not scarce
        claim, rule = sentence, "as_stated"
    else:
        made = false_claim(sentence)
        if made is None:
            return None
        claim, rule = made
    return {"values": {"sentence": claim, "title": section_title(chunk)}, "reference": f"{polarity.capitalize()}. {sentence}", "label": polarity,
            "evidence": sentence, "chunk_ids": [chunk["chunk_id"]], "claim": claim, "claim_rule": rule}  # fmt: skip


# "Is X necessary, or can it be turned off?": an alternative question keyed Yes or No (issue 68, a held-out read)
_ALTERNATIVES = re.compile(r",\s*or\s+(?:can|could|is|are|does|do|should|must|will|would|may|has|have|was|were|else|not)\b", re.I)


def yes_no_form_problem(question: str, claim: str) -> str | None:
    """Why a generated yes/no question is not one: no leading auxiliary, a negation the claim does not have."""
    toks = question.split()
    if not toks or toks[0].lower().strip("\"'") not in AUXILIARIES or not question.rstrip().endswith("?"):
        return f"type_mismatch: {question[:60]!r} is not a yes/no question"
    if _NEGATED.search(question) and not _NEGATED.search(claim):
        return "type_mismatch: the yes/no question adds a negation (no clear yes)"
    if _ALTERNATIVES.search(question) and not _ALTERNATIVES.search(claim):
        return "type_mismatch: the question offers two alternatives ('…, or …?'): neither Yes nor No answers it"
    return None


def yes_no_allowed(n_kept: int) -> int:
    """Yes/no cases a stratum may keep: a third of its kept cases, at least one."""
    return max(1, n_kept // 3)


def stratum_polarity(rank: int, seed: int) -> str:
    """The yes/no answer a stratum's yes/no cases are built for: alternating over the strata, the first by the seed,
    so about half the yes/no answers are "No"."""
    return "no" if (rank + item_seed(seed, "polarity")) % 2 == 0 else "yes"


def yes_no_quota(kept: list[dict], is_grounded, rejection) -> tuple[list[dict], list[dict]]:
    """Keep at most ``yes_no_allowed`` yes/no slots per stratum — a slot is a source sentence asked once per answer, so a
    "Yes" case and its "No" twin (``grounded.no_twins``) share one, two "Yes" questions of it do not —, "No" ones first (an always-yes system must meet them; "No" is the
    scarcer answer), then in order; the rest are rejected ``yes_no_quota``."""
    n_in: dict = {}
    for r in kept:
        n_in[r.get("stratum")] = n_in.get(r.get("stratum"), 0) + 1
    yes_no = [r for r in kept if r["query_type"] == "yes_no" and is_grounded(r)]  # rows of golden.grounded only
    rank = {id(r): i for i, r in enumerate(sorted(yes_no, key=lambda r: r.get("answer_label") != "no"))}
    slots: dict = {}
    out, rejections = [], []
    for r in sorted(kept, key=lambda r: rank.get(id(r), -1)):
        if id(r) in rank:
            st, sentence, label = r.get("stratum"), r.get("evidence") or r.get("query_id"), r.get("answer_label")
            taken = slots.setdefault(st, {})  # sentence → the answers asked of it
            if (sentence not in taken and len(taken) >= yes_no_allowed(n_in[st])) or label in taken.get(sentence, ()):
                rejections.append(rejection(r, "yes_no_quota", f"more than {yes_no_allowed(n_in[st])} yes/no case(s) of {n_in[st]} in stratum {st}"))
                continue
            taken.setdefault(sentence, set()).add(label)
        out.append(r)
    out, over = yes_no_balance(out, is_grounded, rejection)
    order = {id(r): i for i, r in enumerate(kept)}
    return sorted(out, key=lambda r: order[id(r)]), rejections + over


def yes_no_balance(kept: list[dict], is_grounded, rejection) -> tuple[list[dict], list[dict]]:
    """At most as many "Yes" cases as "No" ones over the whole set (one "Yes" when there is no "No"), the first in order
    kept: an always-yes system must get about half of the yes/no cases wrong (issue 47: a set with 1 "No" of 5 could not
    tell it from an honest one). The rest are rejected ``yes_no_balance``; the generation loop then asks its stratum for
    another case, and a "yes" question is asked only while "no" ones are not outnumbered."""
    yes_no = [r for r in kept if r["query_type"] == "yes_no" and is_grounded(r)]
    n_no = sum(r.get("answer_label") == "no" for r in yes_no)
    allowed, out, rejections = max(n_no, 1), [], []
    for r in kept:
        if r["query_type"] == "yes_no" and is_grounded(r) and r.get("answer_label") == "yes":
            if allowed <= 0:
                rejections.append(rejection(r, "yes_no_balance", f"more \"Yes\" than \"No\" cases ({n_no} \"No\" kept)"))
                continue
            allowed -= 1
        out.append(r)
    return out, rejections


# ------------------------------------------------------------------------------ the rule-made yes/no suite (issue 58)
# a sentence that points at what it does not say (a table, the text above) loses its context as a question; "more" /
# "most" first is a comparison with something unnamed
_DEICTIC = re.compile(r"\b(?:following|above|below|preceding|previous|aforementioned|latter|former|here|this|these|those|such|given|exact|either way)\b"
                      r"|^\s*(?:more|most|both|other|another|further)\b|\?"
                      r"|\b(?:it|its|they|them|their)\b"  # a pronoun whose referent is in another sentence
                      r"|\x1b|\[\d+m|\w- \w", re.I)  # terminal escapes, a word hyphenated across a line: text to clean first
# a word that opens a subordinate clause: a claim changed after one ("even if they do not contain …" → "… do contain")
# may flip what the clause conditions, not the main claim, so its "No" is not sure
_SUBORDINATE = re.compile(r",|\b(?:and|or|but|if|when|whenever|as|because|since|that|which|who|whose|where|while|although|though|even|so|unless|until"
                          r"|in order)\b", re.I)  # a purpose ("in order to be allowed to …" → "forbidden"): not the claim
_LITERAL = re.compile(r"\"[^\"]*\"|`[^`]*`|\*[^*]*\*|“[^”]*”")


def answer_key(reference: str | None) -> str | None:
    """A yes/no case's reference answer: "yes" / "no" (its first word), None for any other reference."""
    head = re.match(r"\s*(yes|no)\b", reference or "", re.I)
    return head.group(1).lower() if head else None


_TWO_PREDICATES = re.compile(r"\b(?:and|or)\s+(?:is|are|was|were|will|would|can|could|may|might|must|should|does|do|did|has|have)\b", re.I)
_PROBE_BOUNDS = {"min_words": YES_NO_MIN_WORDS, "identifier_start": True}


# a discourse connective that links a sentence to the one before without conditioning its claim ("However, the tar
# format does not support compression." states that the tar format does not support compression)
_CONNECTIVE = re.compile(r"^(?:however|also|thus|therefore|consequently|furthermore|moreover|in addition|note(?:,\s*however,)?(?:\s+that)?"
                         r"|notice that|similarly|likewise)\s*,?\s+(?=\S)", re.I)


def standalone_claim(sentence: str) -> str:
    """``sentence`` without a leading discourse connective ("However,", "Also,", "Note that"), its first letter capitalised
    (an identifier first, "pg_dump …", is kept as written); the sentence itself when it has none."""
    s = " ".join((sentence or "").split())
    rest = _CONNECTIVE.sub("", s, count=1)
    if rest == s:
        return s
    first = rest.split()[0]
    return rest if re.search(r"[_\d]|^-", first) else rest[:1].upper() + rest[1:]


def yes_no_probe(sentence: str, key: str) -> tuple[str, str] | None:
    """(question, claim rule) of a yes/no question about ``sentence`` whose answer is ``key``, by rule and no LLM: "yes"
    inverts the sentence itself (``claims.yes_no_question``), "no" a claim the sentence contradicts (``false_claim``,
    checked by the polarity reader); None when the sentence has no such question (negated, conditioned, long, generic
    subject, a pronoun first, no contradiction rule applies). A leading connective ("However,", "Note that") is read
    past (``standalone_claim``)."""
    sentence = standalone_claim(sentence)
    if (len(sentence.split()) > YES_NO_MAX_WORDS or _CONDITIONED.search(sentence) or _DEICTIC.search(sentence)
            or sentence_problem(sentence, **_PROBE_BOUNDS)):
        return None
    subject, aux, _ = subject_split(sentence) or ("", "", [])
    if aux.lower() in ("have", "has", "had"):
        return None  # "Has the module a …?": "have" as the main verb inverts into an old-fashioned question
    if re.fullmatch(r"(?i)the [a-z]+", subject.strip()):
        return None  # "The view will be …": a bare "the <noun>" names something the sentence before introduced
    if key == "no" and re.search(r"\bnot\b.*\bbut\b", sentence, re.I):
        return None  # "X is not A but B" without its "not" asks "is X A but B?": no clear answer
    if key == "yes":
        q = None if _NEGATED.search(sentence) else yes_no_question(sentence)
        return (q, "as_stated") if q else None
    made = false_claim(sentence, **_PROBE_BOUNDS)
    q = yes_no_question(made[0]) if made else None
    before = _before_change(sentence, made[0]) if q else ""
    parts = subject_split(sentence)
    if q and (_LITERAL.findall(made[0]) != _LITERAL.findall(sentence) or _SUBORDINATE.search(before)
              or (parts is not None and len(before.split()) < len(parts[0].split()))):
        return None  # a code literal changed ("x is not y" → "x y"), the change is in a subordinate clause, or in the subject
        # ("Optional arguments are …" → "Are required arguments …?": a false presupposition, not a clear "No")
    if q and _TWO_PREDICATES.search(q):
        return None  # "Is X aware of Y and may truncate Z?": the rule changed one of two claims, the question asks both
    return (q, made[1]) if q and not _NEGATED.search(q) else None


def yes_no_suite(chunks: list[dict], n_per_key: int, seed: int, new_case, asked: set[str] = frozenset(),
                 corpus_hash: str | None = None) -> tuple[list[dict], list[dict]]:
    """``n_per_key`` happy-path yes/no cases answered "Yes" and as many answered "No" (a system answering "Yes" to
    everything is wrong on half of them), each from a different source sentence of the corpus (``chunks``: chunk_id,
    text, stratum, stratum_label), the chunks taken round-robin over the strata in a seeded order until both keys have
    their count. ``asked``: questions already in the set (not asked twice). The reference is "Yes." / "No." and the
    source sentence; the case is tagged ``yes_no:rule``. Returns (cases, failures): a key short of its count is named
    with how many sentences were read."""
    rng = random.Random(f"{seed}:yes_no_suite")
    by_stratum: dict = {}
    for c in sorted(chunks, key=lambda c: c["chunk_id"]):
        by_stratum.setdefault(c.get("stratum"), []).append(c)
    for group in by_stratum.values():
        rng.shuffle(group)
    queues = [by_stratum[k] for k in sorted(by_stratum, key=str)]
    order = [q[i] for i in range(max(map(len, queues), default=0)) for q in queues if i < len(q)]
    made: dict[str, list[dict]] = {"no": [], "yes": []}
    seen = {_norm(q) for q in asked}
    read = 0
    for chunk in order:
        if all(len(v) >= n_per_key for v in made.values()):
            break
        for sentence in _sentences(chunk["text"]):
            read += 1
            for key in sorted(made, key=lambda k: len(made[k])):  # the key with fewer cases first: the two stay balanced
                probe = yes_no_probe(sentence, key) if len(made[key]) < n_per_key else None
                if probe is None or _norm(probe[0]) in seen:
                    continue
                seen.add(_norm(probe[0]))
                made[key].append(new_case(
                    category="happy_path", query_type="yes_no", query=probe[0], reference_answer=f"{key.capitalize()}. {sentence}",
                    expected_behavior="answer", stratum=chunk.get("stratum"), stratum_label=chunk.get("stratum_label"),
                    source_chunk_ids=[chunk["chunk_id"]], model="rules:yes_no", seed=seed, corpus_hash=corpus_hash,
                    tags=["query_type:yes_no", "yes_no:rule", f"answer_key:{key}", f"claim_rule:{probe[1]}", "answerability:answerable"],
                    constraints=["must answer from the documents", f"the documents say {key}"]))  # fmt: skip
                break
    failures = [{"kind": f"yes_no_{k}", "base_case_id": None, "reason": f"{len(v)} of {n_per_key} \"{k.capitalize()}\" questions: "
                 f"no other of the {read} sentences of the corpus's {len(chunks)} chunks makes one by rule"}
                for k, v in made.items() if len(v) < n_per_key]  # fmt: skip
    return made["no"] + made["yes"], failures


def _before_change(sentence: str, claim: str) -> str:
    """The words of ``sentence`` before the first one ``claim`` changes (the main clause when the change is in it)."""
    a, b = sentence.split(), claim.split()
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return " ".join(a[:i])


def _norm(q: str) -> str:
    return " ".join(str(q or "").lower().split())


def _sentences(text: str) -> list[str]:
    from hcat_pipeline.common.sentences import sentences

    return sentences(text)
