"""Line-numbered errors for YAML files validated by pydantic (campaign file, gates file)."""

from __future__ import annotations

import re
from collections.abc import Callable

import yaml
from pydantic import ValidationError


class _Yaml12Bools(yaml.SafeLoader):
    """YAML 1.2 booleans: only true / false. YAML 1.1 also reads yes / no / on / off as booleans, so a mode such as
    ``enabled: on`` reached the schema as True and was refused; a bool field still accepts "on" / "yes" (pydantic)."""


_BOOL = "tag:yaml.org,2002:bool"
_Yaml12Bools.yaml_implicit_resolvers = {k: [(tag, rx) for tag, rx in v if tag != _BOOL]
                                        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()}  # fmt: skip
_Yaml12Bools.add_implicit_resolver(_BOOL, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def yaml_line_of(node, loc: tuple) -> int | None:
    """The 1-based line of the YAML node at pydantic's error location ``loc`` (deepest node found)."""
    line = node.start_mark.line + 1 if node is not None else None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            nxt = next((v for k, v in node.value if k.value == str(part)), None)
            if nxt is None:
                key = next((k for k, _ in node.value if k.value == str(part)), None)
                return key.start_mark.line + 1 if key is not None else line
            node = nxt
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            break
        line = node.start_mark.line + 1
    return line


def validation_problems(error: ValidationError, root, source: str, label: Callable[[tuple], str] | None = None) -> list[str]:
    """One ``source:line: field[label]: reason`` per pydantic error; ``root`` is ``yaml.compose(text)``."""
    problems = []
    for err in error.errors():
        loc = tuple(err["loc"])
        field = ".".join(str(p) for p in loc) or "(top level)"
        reason = "unknown key (typo?)" if err["type"] == "extra_forbidden" else err["msg"]
        problems.append(f"{source}:{yaml_line_of(root, loc)}: {field}{label(loc) if label else ''}: {reason}")
    return problems


def load_yaml_mapping(text: str, source: str, error: type[Exception], what: str) -> tuple[dict, yaml.Node]:
    """(data, composed root) of a YAML file that must be a mapping; ``error`` names the line of a syntax error or of a
    non-mapping document (``what``: what such a file is, for the message)."""
    try:
        data = yaml.load(text, Loader=_Yaml12Bools)  # noqa: S506 (a SafeLoader)
        root = yaml.compose(text, Loader=_Yaml12Bools)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        raise error(f"{source}:{mark.line + 1 if mark else 1}: not valid YAML: {getattr(e, 'problem', e)}") from e
    if not isinstance(data, dict):
        raise error(f"{source}:1: {what}")
    return data, root
