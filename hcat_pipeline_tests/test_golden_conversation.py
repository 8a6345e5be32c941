"""Multi-turn cases (golden-eval §2.2): built from happy-path bases with known referents and references, valid, scored
on the last turn; sent to the reference systems with their history and to an http system (a real local server) as a
message list."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import polars as pl

from hcat_pipeline.golden.case_checks import check_rows
from hcat_pipeline.golden.case_rules import rule_for
from hcat_pipeline.golden.cases import case_from_query, cases_frame, new_case
from hcat_pipeline.golden.categories import variant_case
from hcat_pipeline.golden.contradiction import contradict_sentence
from hcat_pipeline.golden.conversation import conversation_cases, conversation_problems, standalone_question
from hcat_pipeline.golden.robustness import rng_for
from hcat_pipeline.resources.http_system import HttpRagSystem
from hcat_pipeline.responses.rag import conversation_messages, retrieval_query
from hcat_pipeline_tests.golden_data import bow_embed

TEXTS = {
    "c1": "The Easy Saver account pays interest monthly on the first business day.",
    "c2": "The Fixed Bond account pays interest once a year, on the anniversary of the deposit.",
    "c3": "Transfers above 10,000 pounds need a second approval by a manager.",
    "c4": "Statements are sent by post every quarter unless the customer opts for paperless statements.",
    "c5": "The overdraft limit is reviewed every six months.",
}


def _base(q, ref, chunk, stratum):
    return case_from_query({"query_type": "simple", "query": q, "reference_answer": ref, "source_chunk_ids": [chunk], "options": [],
                            "stratum": stratum, "stratum_label": "x", "model": "m", "prompt_hash": "p", "seed": 0}, "h")  # fmt: skip


BASES = [
    _base("When does the Easy Saver account pay interest?", TEXTS["c1"], "c1", 0),
    _base("How often does the Fixed Bond account pay interest?", TEXTS["c2"], "c2", 1),
    _base("What do transfers above 10,000 pounds need?", TEXTS["c3"], "c3", 2),
    _base("How often are statements sent by post?", TEXTS["c4"], "c4", 3),
    _base("How often is the overdraft limit reviewed?", TEXTS["c5"], "c5", 4),
]


def _cases():
    return conversation_cases(BASES, {"follow_up": 1, "correction": 1, "long_history": 1}, rng_for(0, "conversation"), new_case, variant_case,
                              contradict_sentence)


def test_each_kind_is_built_with_its_history_and_scored_on_the_last_turn():
    cases, failures = _cases()
    assert not failures and sorted(c["variant_kind"] for c in cases) == ["correction", "follow_up", "long_history"]
    by = {c["variant_kind"]: c for c in cases}
    fu = by["follow_up"]
    assert "Easy Saver" in fu["history"][0]["content"] or "Fixed Bond" in fu["history"][0]["content"]
    assert "that account" in fu["query"] and "Saver" not in fu["query"] and "Bond" not in fu["query"]
    co = by["correction"]
    assert co["history"][1]["content"] != co["reference_answer"] and co["query"].startswith("That is not right")
    assert len(by["long_history"]["history"]) == 6 and by["long_history"]["query"] == standalone_question(by["long_history"])
    for c in cases:
        assert c["category"] == "multi_turn" and rule_for(c) == "answer_correct" and conversation_problems(c) == []
    assert conversation_problems({**fu, "history": fu["history"][:1]})[0].startswith("malformed")
    again, _ = _cases()
    assert [c["case_id"] for c in again] == [c["case_id"] for c in cases]  # deterministic, history in the id
    assert len({c["case_id"] for c in cases} | {b["case_id"] for b in BASES}) == 8


def test_conversation_cases_pass_the_validity_checks_and_keep_their_history_in_the_table():
    cases, _ = _cases()
    frame = cases_frame(cases)
    assert frame.schema["history"] == pl.List(pl.Struct({"role": pl.String, "content": pl.String}))
    checked = check_rows(frame.to_dicts(), TEXTS, bow_embed)
    assert {r["variant_kind"]: r["validity_verdict"] for r in checked} == {"follow_up": "valid", "correction": "valid", "long_history": "valid"}
    single = cases_frame(BASES)
    assert single["history"].to_list() == [[]] * 5 and single["case_id"].to_list() == sorted(b["case_id"] for b in BASES)


def test_reference_systems_get_the_history_as_messages_and_retrieve_with_the_earlier_turns():
    cases, _ = _cases()
    fu = next(c for c in cases if c["variant_kind"] == "follow_up")
    msgs = conversation_messages(fu, "PROMPT")
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"] and msgs[-1]["content"] == "PROMPT"
    assert conversation_messages(BASES[0], "PROMPT") == "PROMPT"
    assert fu["history"][0]["content"] in retrieval_query(fu) and retrieval_query(BASES[0]) == BASES[0]["query"]


class _Echo(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.server.seen.append(body)
        data = json.dumps({"answer": "Monthly."}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def test_an_http_system_receives_the_message_list():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    srv.seen = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        cases, _ = _cases()
        fu = next(c for c in cases if c["variant_kind"] == "follow_up")
        sut = HttpRagSystem(system_id="my_rag", url=f"http://127.0.0.1:{srv.server_address[1]}/ask", answer_path="answer",
                            request_template='{"question": "{{query}}", "messages": "{{messages}}", "id": "{{case_id}}"}')
        rec = sut.respond(fu)
    finally:
        srv.shutdown()
        srv.server_close()
    assert rec["error"] is None and rec["answer"] == "Monthly."
    sent = srv.seen[-1]
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"] and sent["messages"][-1]["content"] == fu["query"]
    assert json.dumps(sent["messages"][0]) == json.dumps(fu["history"][0])
