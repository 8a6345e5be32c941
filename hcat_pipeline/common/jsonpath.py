"""A small JSON path for the HTTP adapter: ``a.b[0].c``, ``contexts[*].text``, ``$.answer``.

``get_path(obj, path)`` returns the value (a list when the path has ``[*]``) or raises KeyError with
the part of the path that did not resolve.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"\.?([^.\[\]]+)|\[(\*|-?\d+)\]")


def parse_path(path: str) -> list[str | int]:
    p = path.strip()
    if p.startswith("$"):
        p = p[1:]
    parts: list[str | int] = []
    pos = 0
    while pos < len(p):
        m = _TOKEN.match(p, pos)
        if not m:
            raise ValueError(f"bad JSON path {path!r} at {p[pos:]!r}")
        if m.group(1) is not None:
            parts.append(m.group(1))
        else:
            parts.append("*" if m.group(2) == "*" else int(m.group(2)))
        pos = m.end()
    return parts


def get_path(obj, path: str):
    def walk(o, parts, done):
        if not parts:
            return o
        head, rest = parts[0], parts[1:]
        where = path if not done else ".".join(map(str, done + [head]))
        if head == "*":
            if not isinstance(o, list):
                raise KeyError(f"{where}: expected a list")
            return [walk(x, rest, done + [head]) for x in o]
        if isinstance(head, int):
            if not isinstance(o, list) or not -len(o) <= head < len(o):
                raise KeyError(f"{where}: no such index")
            return walk(o[head], rest, done + [head])
        if not isinstance(o, dict) or head not in o:
            raise KeyError(f"{where}: no such key")
        return walk(o[head], rest, done + [head])

    return walk(obj, parse_path(path), [])
