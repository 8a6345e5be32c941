"""Issue 69 item 6 known answers: a case whose reference is code is checked by running the answer's code with the case's
checks in a sandbox — a right snippet passes, a wrong one fails naming the check, an infinite loop is killed at its
timeout without harm, network access and an answer without code fail, said why; the behaviour checks use it for every
case that carries checks. Each run is a subprocess: a second or two in all."""

import time

import numpy as np
import polars as pl

from hcat_pipeline.behaviour.checks import judge_behaviour
from hcat_pipeline.behaviour.code_run import Limits, answer_code, code_runs

CASE = {"constraints": ["check: assert add(2, 3) == 5", "check: assert add(-1, 1) == 0"]}
RIGHT = "Define it as:\n```python\ndef add(a, b):\n    return a + b\n```"
WRONG = "```python\ndef add(a, b):\n    return a * b\n```"
LOOP = "```python\ndef add(a, b):\n    while True:\n        pass\n\nadd(1, 2)\n```"
FAST = Limits(timeout_s=2.0, cpu_s=2)


def test_a_right_snippet_passes_a_wrong_one_fails_naming_the_check():
    assert code_runs(CASE, RIGHT, FAST)[:3] == ("pass", 1.0, "ran with its 2 check(s): all held")
    v, s, ev, _ = code_runs(CASE, WRONG, FAST)
    assert (v, s) == ("fail", 0.0) and ev == "failed: AssertionError: check 1 failed: assert add(2, 3) == 5"


def test_an_infinite_loop_is_killed_at_its_timeout_and_the_network_is_closed():
    t0 = time.perf_counter()
    v, _, ev, d = code_runs(CASE, LOOP, FAST)
    assert v == "fail" and d["status"] in ("timeout", "failed") and time.perf_counter() - t0 < 10  # killed, never hangs the run
    net = code_runs({"constraints": ["check: assert True"]}, "```python\nimport socket\nsocket.create_connection(('example.com', 80))\n```", FAST)
    assert net[0] == "fail" and "network access is disabled in the sandbox" in net[2]
    assert code_runs(CASE, "Just add the two numbers.", FAST)[2] == "the answer holds no code to run"
    assert answer_code("x = 1\nprint(x)") == "x = 1\nprint(x)" and answer_code("Add them, then print.") is None


def test_the_behaviour_checks_run_the_code_of_every_case_with_checks():
    cases = pl.DataFrame([{"case_id": "c1", "category": "happy_path", "query_type": "simple", "expected_behavior": "answer", "variant_kind": None,
                           "query": "Write add(a, b).", "reference_answer": "def add(a, b): return a + b", "constraints": CASE["constraints"],
                           "base_case_id": None, "options": [], "source_chunk_ids": []}])  # fmt: skip
    responses = pl.DataFrame({"case_id": ["c1", "c1"], "system_id": ["good", "bad"], "answer": [RIGHT, WRONG], "contexts": [[], []],
                              "error": [None, None]})  # fmt: skip
    out = judge_behaviour(cases, responses, embed=lambda texts: np.ones((len(texts), 4)) / 2)
    rows = {r["system_id"]: r for r in out.iter_rows(named=True)}
    assert rows["good"]["rule"] == rows["bad"]["rule"] == "code_runs"
    assert rows["good"]["verdict"] == "pass" and rows["bad"]["verdict"] == "fail" and "check 1 failed" in rows["bad"]["evidence"]


def test_an_answer_that_exits_before_its_checks_fails():
    """A reviewer's finding: ``sys.exit(0)`` in the answer used to end the run with status 0 before any check ran."""
    early = "```python\nimport sys\ndef add(a, b):\n    return a * b\nsys.exit(0)\n```"
    v, _, ev, _ = code_runs(CASE, early, FAST)
    assert v == "fail" and "exited before its checks ran" in ev
    main_guard = "```python\nimport sys\ndef add(a, b):\n    return a + b\ndef main():\n    return 0\nif __name__ == '__main__':\n    sys.exit(main())\n```"
    assert code_runs(CASE, main_guard, FAST)[0] == "pass"  # runs as a module: its main guard does not fire
