"""A reader's faults of a happy-path case, in any domain (issue 47): each signal fires on the fault the issue quotes and
stays quiet on a sound case of the same shape; the validity check makes each a hard reason."""

import numpy as np
import pytest

from hcat_pipeline.golden.case_signals import text_signals
from hcat_pipeline.golden.validity import ValidityConfig, answerable_checks, combine

FAULTS = [  # (question, reference, the signal that must fire) — the issue's own examples, and one per domain shape
    ("What is the first step in looking up a keyword pattern as an attribute on the subject?",
     "The keyword is looked up as an attribute on the subject.", "restatement"),
    ("What must be enclosed in quotes when creating an alias?", "The command must not be enclosed in quotes.", "polarity_denied"),
    ("What can the licensee sublicense?", "The licensee cannot sublicense the rights granted under this licence.", "polarity_denied"),
    ("What must be enclosed in quotes when creating an alias?", "The *command* must *not* be enclosed in quotes.", "polarity_denied"),
    ("How are targets assigned in an augmented assignment statement?",
     "The same caveat about class and instance attributes applies as for regular assignments.", "defers"),
    ("How does man-db find the cache files?", "This way the cache files are found without a full scan.", "context_lost"),
    ("What is the smallest value allowed for the block size?", "The *n* must be a power of two.", "context_lost"),
]
SOUND = [
    ("What does the break statement terminate?", "The break statement terminates the nearest enclosing for or while loop."),
    ("What happens when a pass statement is executed?", "Nothing happens."),
    ("Within how many days of discovering a loss must a claim be made?", "Within 30 days of discovering the loss."),
    ("What is the result of splitting an empty string with a specified separator?",
     'Splitting an empty string with a specified separator returns "[\'\']".'),  # a quoted literal is an answer
    ("What does the proxy do with the data?", "The proxy does not store the data but forwards it to the server."),
    ("What is the default encoding of the configuration file?", "The default encoding is not locale-dependent; it is UTF-8."),
    ("When does the licence terminate?", "The licence terminates automatically if you fail to comply with its terms."),
]


@pytest.mark.parametrize("question,reference,signal", FAULTS)
def test_each_fault_fires_its_signal(question, reference, signal):
    sig = text_signals(question, reference)
    assert sig[signal] >= 0.8, sig


@pytest.mark.parametrize("question,reference", SOUND)
def test_a_sound_case_fires_none(question, reference):
    sig = text_signals(question, reference)
    assert sig["restatement"] < 0.8 and not any(sig[k] for k in ("defers", "context_lost", "polarity_denied")), sig


def test_a_yes_no_reference_is_read_without_its_yes():
    assert text_signals("Does the licence require notice of termination?", "Yes. The licence requires notice of termination.",
                        "yes_no")["restatement"] == 0.0  # a yes/no reference restates its claim by design


def _vec(text: str) -> np.ndarray:  # a bag-of-letters embedding: enough for support / round trip on a one-sentence source
    v = np.zeros(26)
    for ch in text.lower():
        if "a" <= ch <= "z":
            v[ord(ch) - 97] += 1
    return v / (np.linalg.norm(v) or 1.0)


@pytest.mark.parametrize("question,reference,signal", FAULTS)
def test_the_validity_check_calls_each_fault_invalid(question, reference, signal):
    case = {"query": question, "reference_answer": reference, "query_type": "simple", "expected_behavior": "answer"}
    checks, reasons = answerable_checks(case, reference + " Another sentence of the source about something else.", _vec, ValidityConfig())
    v = combine(checks, reasons, ValidityConfig())
    assert v.verdict == "invalid" and any(r.split(":")[0] in ("circular", "polarity_denied", "reference_defers", "reference_context_lost")
                                          for r in v.reasons), v.reasons  # fmt: skip
