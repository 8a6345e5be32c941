"""Tool calls a system returns with its answer (golden-eval §3.2.2 TOOL_USE_CORRECTNESS: "right tool, right arguments,
right step", judged over the tool-call trace): stored on ``rag_responses.tool_calls`` as a JSON list of
``{name, arguments, result}`` objects, shown to the judge as a numbered trace."""

from __future__ import annotations

import json


def _name_and_arguments(call: dict) -> tuple[str, object]:
    """A call's tool name and arguments, as given or in OpenAI's ``function`` shape."""
    fn = call.get("function") if isinstance(call.get("function"), dict) else {}
    return str(call.get("name") or fn.get("name") or "").strip(), call.get("arguments", fn.get("arguments"))


def tool_calls_json(value) -> str | None:
    """The reply's tool calls as a JSON list (a single object becomes a list of one); None when there are none.
    Raises ValueError when the value is not a list of objects each with a ``name`` (a bad reply, said with its reason)."""
    if isinstance(value, str) and value.strip().startswith(("[", "{")):  # already stored as JSON (a parquet import)
        try:
            value = json.loads(value)
        except json.JSONDecodeError as e:
            raise ValueError(f"tool calls are not valid JSON: {e.msg}") from None
    if value is None or value == []:
        return None
    calls = value if isinstance(value, list) else [value]
    for i, c in enumerate(calls):
        if not isinstance(c, dict) or not _name_and_arguments(c)[0]:
            raise ValueError(f"tool call {i + 1} is not an object with a name: {str(c)[:120]!r}")
    return json.dumps(calls, ensure_ascii=False, sort_keys=True)


def tool_trace(stored: str | None, max_chars: int = 3000) -> str:
    """The stored calls as the judge reads them: one numbered line per call, its arguments and (cut) result."""
    if not stored:
        return ""
    lines = []
    for i, c in enumerate(json.loads(stored)):
        name, args = _name_and_arguments(c)
        line = f"{i + 1}. {name}({json.dumps(args, ensure_ascii=False) if not isinstance(args, str) else args})"
        if c.get("result") is not None:
            line += f" → {str(c['result'])[:300]}"
        lines.append(line)
    text = "\n".join(lines)
    return text if len(text) <= max_chars else text[:max_chars] + " …[cut]"
