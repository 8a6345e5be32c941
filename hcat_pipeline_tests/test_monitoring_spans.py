"""Issue 60 item 3: the traces users already export — OpenInference spans (Phoenix / LangSmith JSONL) and an
OpenTelemetry OTLP JSON export with GenAI attributes — read as one request per trace, bad traces named."""

import json

from hcat_pipeline.monitoring.logs import LogFields, days_in, read_day

DAY = "2026-11-20"


def _openinference(tid: str, question: str, answer: str | None, docs: list[str], start_s: int) -> list[dict]:
    t0 = f"{DAY}T10:00:{start_s:02d}+00:00"
    t1 = f"{DAY}T10:00:{start_s + 2:02d}.500000+00:00"
    root = {"context": {"trace_id": tid, "span_id": f"{tid}-root"}, "parent_id": None, "name": "rag", "start_time": t0, "end_time": t1,
            "status_code": "OK", "attributes": {"openinference.span.kind": "CHAIN", "input.value": question, **({"output.value": answer} if answer else {})}}  # fmt: skip
    ret = {"context": {"trace_id": tid, "span_id": f"{tid}-ret"}, "parent_id": f"{tid}-root", "name": "retrieve", "start_time": t0, "end_time": t0,
           "attributes": {"openinference.span.kind": "RETRIEVER", **{f"retrieval.documents.{i}.document.content": d for i, d in enumerate(docs)}}}  # fmt: skip
    llm = {"context": {"trace_id": tid, "span_id": f"{tid}-llm"}, "parent_id": f"{tid}-root", "name": "llm", "start_time": t0, "end_time": t1,
           "attributes": {"openinference.span.kind": "LLM", "llm.token_count.prompt": 120, "llm.token_count.completion": 17}}  # fmt: skip
    return [root, ret, llm]


def test_openinference_spans_are_one_request_per_trace_and_a_bad_trace_is_named(tmp_path):
    spans = (_openinference("t1", "How do I reset my PIN?", "Use the app's security settings.", ["PINs are reset in settings.", "Other."], 1)
             + _openinference("t2", "What is the daily limit?", "£500 a day.", ["The limit is £500."], 10)
             + _openinference("t3", "No answer here", None, [], 20))  # fmt: skip
    (tmp_path / "phoenix-export.jsonl").write_text("".join(json.dumps(s) + "\n" for s in spans) + '{"not": "a span"}\n')
    fields = LogFields(question_path="whatever.the.user.set")  # a span file is read by the spans' own names
    assert sorted(days_in([str(tmp_path)], fields.day_pattern, fields)) == [DAY]
    read = read_day([str(tmp_path)], DAY, fields)
    rows = {r["request_id"]: r for r in read.rows.to_dicts()}
    assert set(rows) == {"t1", "t2"}
    t1 = rows["t1"]
    assert t1["question"] == "How do I reset my PIN?" and t1["answer"].startswith("Use the app") and t1["contexts"] == ["PINs are reset in settings.", "Other."]
    assert t1["latency_ms"] == 2500 and t1["output_tokens"] == 17 and t1["input_tokens"] == 120
    reasons = dict(zip(read.rejected["source"], read.rejected["reason"], strict=True))
    assert any("trace t3" in k and "no answer" in v for k, v in reasons.items()), reasons
    assert any("line 10" in k for k in reasons), reasons  # the non-span line, by its line


def test_an_otlp_json_export_with_genai_attributes_is_read(tmp_path):
    ns = 1_795_600_000_000_000_000  # 2026-11-25 in nanoseconds
    kv = lambda k, v: {"key": k, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}}  # noqa: E731
    span = {"traceId": "abc", "spanId": "s1", "name": "chat", "startTimeUnixNano": str(ns), "endTimeUnixNano": str(ns + 800_000_000),
            "status": {"code": "STATUS_CODE_OK"},
            "attributes": [kv("gen_ai.operation.name", "chat"), kv("gen_ai.prompt.0.role", "user"), kv("gen_ai.prompt.0.content", "Is overdraft free?"),
                           kv("gen_ai.completion.0.content", "No, it costs 39.9 % EAR."), kv("gen_ai.usage.output_tokens", 9)]}  # fmt: skip
    failed = {**span, "traceId": "err", "spanId": "s2", "status": {"code": "STATUS_CODE_ERROR", "message": "upstream timeout"},
              "attributes": [kv("gen_ai.prompt.0.content", "Hello?")]}  # fmt: skip
    (tmp_path / "otlp.json").write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span, failed]}]}]}))
    day = "2026-11-25"
    read = read_day([str(tmp_path)], day, LogFields())
    rows = {r["request_id"]: r for r in read.rows.to_dicts()}
    assert rows["abc"]["question"] == "Is overdraft free?" and rows["abc"]["answer"].startswith("No, it costs")
    assert rows["abc"]["latency_ms"] == 800 and rows["abc"]["output_tokens"] == 9
    assert rows["err"]["error"] == "upstream timeout" and rows["err"]["answer"] is None
