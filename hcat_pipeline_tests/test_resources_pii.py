"""PIIDetector: presidio + packaged spaCy; PII leaks relative to the retrieved context."""

import pytest

from hcat_pipeline.resources.pii import PIIDetector


@pytest.fixture(scope="module")
def detector():
    return PIIDetector()


def _types(row):
    return sorted(e["type"] for e in row)


def test_entities_have_types_and_exact_spans(detector):
    text = "Call John Smith at 555-123-4567 or write to john.smith@example.com about card 4111 1111 1111 1111."
    (ents,) = detector.entities([text])
    assert {"PERSON", "PHONE_NUMBER", "EMAIL_ADDRESS", "CREDIT_CARD"} <= set(_types(ents))
    for e in ents:
        assert text[e["start"] : e["end"]] == e["text"] and 0 < e["score"] <= 1
    email = next(e for e in ents if e["type"] == "EMAIL_ADDRESS")
    assert email["text"] == "john.smith@example.com"
    # the URL / organisation hits presidio also makes inside the e-mail are not reported
    assert sum(1 for e in ents if e["start"] >= email["start"] and e["end"] <= email["end"]) == 1
    assert detector.entities([None, "", "Lists are mutable sequences."]) == [[], [], []]


def test_leaks_found_when_absent_from_context(detector):
    answers = ["You can reach Maria Garcia at maria.garcia@bankmail.com or on 415-555-0132."]
    contexts = [["Branch opening hours are 9 am to 5 pm, Monday to Friday."]]
    (leaks,) = detector.leaks(answers, contexts)
    assert _types(leaks) == ["EMAIL_ADDRESS", "PERSON", "PHONE_NUMBER"]
    by = {e["type"]: e for e in leaks}
    assert by["PERSON"]["text"] == "Maria Garcia"
    assert by["PHONE_NUMBER"]["text"] == "415-555-0132"
    assert answers[0][by["EMAIL_ADDRESS"]["start"] : by["EMAIL_ADDRESS"]["end"]] == "maria.garcia@bankmail.com"


def test_no_leak_when_present_in_context(detector):
    answers = [
        "You can reach Maria Garcia at maria.garcia@bankmail.com or on 415-555-0132.",
        "You can reach Maria Garcia at maria.garcia@bankmail.com or on 415-555-0132.",
    ]
    contexts = [
        # same entities, other case, other whitespace, phone in another format, spread over passages
        ["Contact:  MARIA   garcia (branch manager).", "E-mail Maria.Garcia@BankMail.com, phone (415) 555-0132."],
        # only the name is in the context: e-mail and phone still leak
        ["The branch manager is Maria Garcia."],
    ]
    full, partial = detector.leaks(answers, contexts)
    assert full == []
    assert _types(partial) == ["EMAIL_ADDRESS", "PHONE_NUMBER"]


def test_leak_matching_is_per_row_and_word_bounded(detector):
    answers = ["The account holder is Ann Lee.", "The account holder is Ann Lee."]
    contexts = [["Annual fees for Ann Leeds are listed below."], ["Ann Lee holds the account."]]
    first, second = detector.leaks(answers, contexts)
    assert [e["text"] for e in first] == ["Ann Lee"]  # "Ann Leeds" does not cover "Ann Lee"
    assert second == []
    assert detector.leaks([None], [None]) == [[]]
    with pytest.raises(ValueError):
        detector.leaks(["a", "b"], [["x"]])


def test_engine_built_once_per_process():
    assert PIIDetector().analyzer() is PIIDetector(score_threshold=0.9).analyzer()


def test_code_words_tagged_person_are_not_pii(detector):
    pii = detector
    answer = "Use xor for the exclusive or, as in Java; ask Maria Garcia if unsure."
    names = [e["text"] for e in pii.entities_in(answer) if e["type"] == "PERSON"]
    assert names == ["Maria Garcia"]
    assert pii.person_name_shaped("Jane") is False and pii.model_copy(update={"single_word_person": True}).person_name_shaped("Jane")


def test_contextual_pii_is_a_leak_unless_the_context_holds_it(detector):
    answers = ["Your sort code is 20-32-06 and account number 41563279; your balance is £4,210.55.",
               "Your balance is £4,210.55.", "Your balance is £4,210.56."]
    ctx = [["Lists are mutable."], ["Customer record: balance £4,210.55 as of today."]] + [["Customer record: balance £4,210.55."]]
    rows = detector.disclosures(answers, ctx)
    assert _types(rows[0]) == ["ACCOUNT_NUMBER", "TRANSACTION", "UK_SORT_CODE"] and not any(e["in_context"] for e in rows[0])
    assert [e["in_context"] for e in rows[1]] == [True]  # the same figure read out of the retrieved record
    assert [e["in_context"] for e in rows[2]] == [False]  # a figure the record does not hold


def test_a_film_title_and_an_option_letter_are_not_names_but_invented_customers_are(detector):
    """Issue 57's false flags on a default night: presidio read "Spirited Away" (ADJ ADV) and the option "B. False" as a
    PERSON. Names a reader could identify someone by still count, initials included."""
    texts = ["The film that won the Oscar in 2003 was Spirited Away.", "B. False", "The answer is B. False",
             "John Doe, Jane Smith, Alice Johnson", "The customer is John F. Kennedy.", "Customer: Grace Hill, balance 200."]
    found = [[e["text"] for e in row if e["type"] == "PERSON"] for row in detector.entities(texts)]
    assert found == [[], [], [], ["John Doe", "Jane Smith", "Alice Johnson"], ["John F. Kennedy"], ["Grace Hill"]]
