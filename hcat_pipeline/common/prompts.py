"""Prompt templates: the one loader for the versioned files under ``hcat_pipeline/prompts/``.

A template is read once per file version and carries its content hash, which callers
record on their outputs. Two hash lengths are in use and must not change (they are part of stored
ids and config hashes): 12 hex digits for the RAG and harm-judge prompts (``sha(12)``), 16 for the
query-generation prompts (``hash``). Two ways to fill a template:

* ``render(**values)`` — chat messages from ``### system`` / ``### user`` / ``### assistant`` sections;
* ``fill(**values)`` — the whole text with ``{{name}}`` placeholders replaced (single-prompt templates).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from hcat_pipeline.common.ids import short_hash

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
ROLES = ("system", "user", "assistant")
_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


@dataclass(frozen=True)
class PromptTemplate:
    name: str
    text: str

    def sha(self, n: int = 16) -> str:
        """First ``n`` hex digits of the SHA-256 of the file's text."""
        return short_hash(self.text, n=n)

    @property
    def hash(self) -> str:
        return self.sha(16)

    def fill(self, **values: str) -> str:
        """The text with every ``{{key}}`` of ``values`` replaced (other placeholders are left as they are)."""
        text = self.text
        for key, value in values.items():
            text = text.replace("{{" + key + "}}", value)
        return text

    def render(self, **values: str) -> list[dict]:
        """Chat messages from the ``### role`` sections, ``{{name}}`` placeholders filled in."""
        messages: list[dict] = []
        for block in re.split(r"^### ", self.text, flags=re.M):
            if not block.strip():
                continue
            role, _, body = block.partition("\n")
            role = role.strip()
            if role not in ROLES:
                raise ValueError(f"prompt {self.name}: unknown section {role!r}")
            missing = [k for k in _PLACEHOLDER.findall(body) if k not in values]
            if missing:  # checked on the template, not after filling: a value may itself contain "{{" (format strings)
                raise ValueError(f"prompt {self.name}: no value for {missing}")
            body = _PLACEHOLDER.sub(lambda m: values[m.group(1)], body)  # one pass: values are never re-scanned
            messages.append({"role": role, "content": body.strip()})
        return messages


def available_prompts(prompts_dir: str | Path = PROMPTS_DIR) -> list[str]:
    return sorted(p.stem for p in Path(prompts_dir).glob("*.txt"))


@lru_cache(maxsize=64)
def _read(path: str, name: str, mtime_ns: int, size: int) -> PromptTemplate:
    return PromptTemplate(name, Path(path).read_text(encoding="utf-8"))


def load_prompt(name: str, prompts_dir: str | Path = PROMPTS_DIR) -> PromptTemplate:
    """The template ``<prompts_dir>/<name>.txt``; ``FileNotFoundError`` lists the available names.

    Cached per file version (path, modification time, size): an edited template is read again."""
    path = Path(prompts_dir) / f"{name}.txt"
    if not path.is_file():
        raise FileNotFoundError(f"prompt template {name!r} not found in {prompts_dir} (available: {available_prompts(prompts_dir)})")
    st = path.stat()
    return _read(str(path), name, st.st_mtime_ns, st.st_size)
