"""Trace exports read as traffic (issue 60 item 3): OpenTelemetry GenAI spans and OpenInference spans (Phoenix,
LangSmith exports) mapped to one log record per trace by their semantic-convention attributes.

A span file holds one span per line (JSONL) or an OTLP JSON export (``resourceSpans → scopeSpans → spans``). A span's
attributes may be a flat object (``{"input.value": …}``), OTLP's list of ``{key, value: {stringValue | intValue …}}``,
or flattened columns (``attributes.input.value``). The spans of a trace make one request:

* question — the root span's ``input.value`` (OpenInference), else the first user message of an LLM span
  (``gen_ai.prompt.0.content`` / ``llm.input_messages.0.message.content``, role user);
* answer — the root span's ``output.value``, else the last LLM span's completion (``gen_ai.completion.0.content`` /
  ``llm.output_messages.0.message.content``);
* contexts — every retriever span's ``retrieval.documents.<i>.document.content``, in order;
* tokens — the LLM spans' ``gen_ai.usage.input_tokens`` / ``output_tokens`` (``llm.token_count.prompt`` / ``completion``);
* latency — the root span's end − start; timestamp — its start; error — a span whose status is ERROR, with its message.

A trace without a question or an answer (and no error) is rejected by ``logs.normalise_record`` like any bad row, named
by its file and trace id. Pure.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

_TRACE_KEYS = ("trace_id", "traceId", "context.trace_id")
_SPAN_KEYS = ("span_id", "spanId", "context.span_id")
_PARENT_KEYS = ("parent_id", "parentSpanId", "parent_span_id")
SPAN_RECORD_FIELDS = {"question_path": "question", "answer_path": "answer", "contexts_path": "contexts", "timestamp_path": "timestamp",
                      "request_id_path": "request_id", "latency_ms_path": "latency_ms", "input_tokens_path": "input_tokens",
                      "output_tokens_path": "output_tokens", "error_path": "error"}  # fmt: skip


def _get(d: dict, keys: Iterable[str]):
    for k in keys:
        cur = d
        for part in [k] if k in d else k.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if cur not in (None, ""):
            return cur
    return None


def _value(v):
    """An OTLP AnyValue ({stringValue: …}) or a plain value."""
    if isinstance(v, dict) and len(v) == 1:
        (k, x), = v.items()
        if k in ("stringValue", "intValue", "doubleValue", "boolValue"):
            return int(x) if k == "intValue" else x
    return v


def attributes(span: dict) -> dict:
    """The span's attributes as one flat {name: value}, whichever of the three shapes the export wrote."""
    attrs = span.get("attributes")
    out = {}
    if isinstance(attrs, list):
        out = {a.get("key"): _value(a.get("value")) for a in attrs if isinstance(a, dict)}
    elif isinstance(attrs, dict):
        stack = [("", attrs)]
        while stack:
            prefix, d = stack.pop()
            for k, v in d.items():
                name = f"{prefix}{k}"
                if isinstance(v, dict) and not set(v) <= {"stringValue", "intValue", "doubleValue", "boolValue"}:
                    stack.append((name + ".", v))
                else:
                    out[name] = _value(v)
    out |= {k[len("attributes."):]: v for k, v in span.items() if k.startswith("attributes.")}
    return out


def is_span(rec: dict | None) -> bool:
    return isinstance(rec, dict) and _get(rec, _TRACE_KEYS) is not None and ("attributes" in rec or any(k.startswith("attributes.") for k in rec))


def unpack_otlp(doc) -> list[dict] | None:
    """The spans of an OTLP JSON export ({"resourceSpans": …}); None when ``doc`` is not one."""
    if not isinstance(doc, dict) or "resourceSpans" not in doc:
        return None
    return [s for rs in doc.get("resourceSpans") or [] for ss in rs.get("scopeSpans") or rs.get("instrumentationLibrarySpans") or []
            for s in ss.get("spans") or []]  # fmt: skip


def _time(v) -> dt.datetime | None:
    if v in (None, ""):
        return None
    if isinstance(v, int | float) or re.fullmatch(r"\d+", str(v)):
        x = int(v)
        return dt.datetime.fromtimestamp(x / 1e9 if x > 1e14 else x / 1e3 if x > 1e11 else x, dt.UTC)
    t = dt.datetime.fromisoformat(str(v).replace("Z", "+00:00"))
    return t if t.tzinfo else t.replace(tzinfo=dt.UTC)


def _first(spans: list[dict], names: Iterable[str]):
    for s in spans:
        v = _get(s["_attrs"], names)
        if v not in (None, ""):
            return v
    return None


def trace_record(spans: list[dict]) -> dict:
    """One request of the spans of a trace (module doc), keyed like ``SPAN_RECORD_FIELDS``."""
    for s in spans:
        s["_attrs"] = attributes(s)
    ids = {_get(s, _SPAN_KEYS) for s in spans}
    roots = [s for s in spans if _get(s, _PARENT_KEYS) in (None, "") or _get(s, _PARENT_KEYS) not in ids] or spans
    root = roots[0]
    llm = [s for s in spans if str(s["_attrs"].get("openinference.span.kind", "")).upper() == "LLM" or any(k.startswith("gen_ai.") for k in s["_attrs"])]
    retrievers = [s for s in spans if str(s["_attrs"].get("openinference.span.kind", "")).upper() == "RETRIEVER"
                  or any(k.startswith("retrieval.documents.") for k in s["_attrs"])]  # fmt: skip
    question = _first([root], ["input.value"]) or _first(llm, ["gen_ai.prompt.0.content", "llm.input_messages.0.message.content", "input.value"])
    answer = _first([root], ["output.value"]) or _first(list(reversed(llm)), [
        "gen_ai.completion.0.content", "llm.output_messages.0.message.content", "output.value"])  # fmt: skip
    contexts = []
    for s in retrievers:
        docs = sorted((int(m.group(1)), v) for k, v in s["_attrs"].items() if (m := re.fullmatch(r"retrieval\.documents\.(\d+)\.document\.content", k)))
        contexts += [v for _, v in docs]
    start, end = _time(_get(root, ("start_time", "startTimeUnixNano"))), _time(_get(root, ("end_time", "endTimeUnixNano")))
    tokens = lambda names: sum(int(v) for s in llm if (v := _get(s["_attrs"], names)) not in (None, "")) or None  # noqa: E731
    failed = [s for s in spans if "ERROR" in str(_get(s, ("status.code", "status_code", "status.status_code")) or "").upper()]
    error = (_get(failed[0], ("status.message", "status_message", "status.description")) or "span status ERROR") if failed else None
    return {"request_id": str(_get(root, _TRACE_KEYS)), "question": question, "answer": answer, "contexts": contexts,
            "timestamp": start.isoformat() if start else None, "latency_ms": (end - start).total_seconds() * 1000 if start and end else None,
            "input_tokens": tokens(("gen_ai.usage.input_tokens", "llm.token_count.prompt")),
            "output_tokens": tokens(("gen_ai.usage.output_tokens", "llm.token_count.completion")), "error": error}  # fmt: skip


def traces(records: list[tuple[int, dict | None, str]]) -> list[tuple[str, dict | None, str]]:
    """(where, record or None, why not) per trace of a span file's records; a line that is no span is named."""
    by_trace: dict[str, list[dict]] = {}
    first_line: dict[str, int] = {}
    out: list[tuple[str, dict | None, str]] = []
    for line, rec, why in records:
        if rec is None or not is_span(rec):
            out.append((f"line {line}", None, why or "not a span (no trace id and attributes)"))
            continue
        tid = str(_get(rec, _TRACE_KEYS))
        by_trace.setdefault(tid, []).append(rec)
        first_line.setdefault(tid, line)
    for tid, spans in by_trace.items():
        try:
            out.append((f"trace {tid}", trace_record(spans), ""))
        except (ValueError, TypeError, OverflowError) as e:
            out.append((f"trace {tid}", None, f"spans unreadable: {e}"))
    return out
