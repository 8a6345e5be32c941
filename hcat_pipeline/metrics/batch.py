"""What a metric's ``compute(batch, resources, options)`` receives.

* ``Batch`` — the rows of one ``score()`` call: texts, which rows are scored (a failed response or a
  missing answer is skipped, with the reason), every text split into sentences once, every needed
  sentence embedded once (one ``embed`` call for the frame), per-row similarity matrices computed
  once and shared between metrics (groundedness and completeness read the same answer × context
  matrix).
* ``Resources`` — the models a metric needs (``registry.NEEDS``), acquired before any metric runs.
  A resource that is absent, or whose loading fails with an environment error (``ImportError``,
  ``OSError``: package or weights missing; or a ``MetricUnavailable`` raised by the resource itself),
  makes the metrics needing it *unavailable* (``MetricUnavailable`` with cause and fix). Any other
  exception while loading is a bug and propagates.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import polars as pl

from hcat_pipeline.corpus.chunking import split_sentences
from hcat_pipeline.metrics.aggregation import aggregate, token_weights
from hcat_pipeline.metrics.groundedness_nli import DEFAULT_TASK
from hcat_pipeline.metrics.registry import FIXES, RESOURCES, MetricUnavailable
from hcat_pipeline.resources.devices import Device

# no sentence punctuation, quote, bracket or line break before the last character: the splitter (pysbd, ≈ 0.7 ms a text,
# the costliest Python of a scored row) can only return the text itself — checked on 3,330 such texts of a night
_BOUNDARY = re.compile(r"[.!?…。！？\n\r\"'“”‘’«»()\[\]]")


def one_sentence(text: str) -> bool:
    """Whether ``split_sentences(text)`` is ``[text.strip()]`` without running the splitter (see ``_BOUNDARY``)."""
    body = text.strip()
    return bool(body) and not _BOUNDARY.search(body[:-1]) and body[-1] not in "\"'“”‘’«»)]"


LOAD_ERRORS = (ImportError, OSError)  # a package or a weights file is missing: unavailable, not a bug
PROBE = "The sky is blue."


class Batch:
    def __init__(
        self,
        frame: pl.DataFrame,
        language: str = "en",
        sentence_weights: Callable[[list[str]], np.ndarray] | None = None,
        progress: bool = False,
    ):
        for col in ("query", "contexts", "answer"):
            if col not in frame.columns:
                raise ValueError(f"score: input has no {col!r} column (columns: {frame.columns})")
        self.n = frame.height
        self.language = language
        self.weight_fn = sentence_weights or token_weights
        self.progress = progress
        self.queries: list[str | None] = frame["query"].to_list()
        self.answers: list[str | None] = frame["answer"].to_list()
        self.contexts: list[list[str]] = [list(c or []) for c in frame["contexts"].to_list()]
        self.has_reference = "reference" in frame.columns
        # the full source documents of a row (long-document faithfulness; None: the input has no such column)
        self.source_documents: list[list[str]] | None = (
            [list(d or []) for d in frame["source_documents"].to_list()] if "source_documents" in frame.columns else None
        )
        self.references: list[str | None] = frame["reference"].to_list() if self.has_reference else [None] * self.n
        self.tasks: list[str | None] = (
            frame["task"].to_list() if "task" in frame.columns else [None] * self.n
        )  # grounding task per row
        # the retrieved passages' chunk ids, in rank order (citation markers may name them); None where not given
        self.context_ids: list[list[str] | None] = (
            [list(c) if c is not None else None for c in frame["context_chunk_ids"].to_list()] if "context_chunk_ids" in frame.columns
            else [None] * self.n
        )
        self._memo: dict[str, Any] = {}
        errors = frame["error"].to_list() if "error" in frame.columns else [None] * self.n
        self.skipped: list[str | None] = [
            f"response failed: {e}" if e is not None else ("no answer" if a is None else None)
            for a, e in zip(self.answers, errors)
        ]
        self.valid: list[int] = [i for i in range(self.n) if self.skipped[i] is None]
        self._split: dict[str, list[str]] = {}
        self._pos: dict[str, int] = {}
        self._vecs: np.ndarray | None = None
        self._sim: dict[tuple[str, str, int], np.ndarray] = {}

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per batch: metrics that share one computation (citation precision, recall, presence)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    # -- sentences --
    def split(self, text: str | None) -> list[str]:
        if not text:
            return []
        s = self._split.get(text)
        if s is None:
            s = self._split[text] = [text.strip()] if one_sentence(text) else split_sentences(text, self.language)
        return s

    def sentences(self, kind: str, i: int) -> list[str]:
        """Sentences of row ``i``: query / answer / reference, or the context (unique, in passage order)."""
        if kind == "context":
            return list(dict.fromkeys(s for passage in self.contexts[i] for s in self.split(passage)))
        text = {"query": self.queries, "answer": self.answers, "reference": self.references}[kind][i]
        return self.split(text)

    @property
    def texts_split(self) -> int:
        return len(self._split)

    # -- embeddings --
    def embed_all(self, embed: Callable[[list[str]], np.ndarray], kinds: Iterable[str]) -> int:
        """Embed every unique sentence of the scored rows for ``kinds`` in one call; returns how many."""
        kinds = list(kinds)
        for i in self.valid:
            for kind in kinds:
                for s in self.sentences(kind, i):
                    self._pos.setdefault(s, len(self._pos))
        self._vecs = np.asarray(embed(list(self._pos)), dtype=np.float32) if self._pos else np.zeros((0, 1), np.float32)
        return len(self._pos)

    def vectors(self, kind: str, i: int) -> np.ndarray:
        if self._vecs is None:
            raise RuntimeError("Batch.vectors before embed_all: the metric did not declare the sentences it embeds")
        return self._vecs[[self._pos[s] for s in self.sentences(kind, i)]]

    def similarity(self, a: str, b: str, i: int) -> np.ndarray:
        """Cosine similarities (|a| × |b|) between row ``i``'s sentences of kinds ``a`` and ``b``, computed once."""
        key = (a, b, i)
        if key not in self._sim:
            other = self._sim.get((b, a, i))
            self._sim[key] = other.T if other is not None else self.vectors(a, i) @ self.vectors(b, i).T
        return self._sim[key]

    # -- aggregation --
    def aggregate(self, values: np.ndarray, method: str, kind: str, i: int) -> float | None:
        """Aggregate per-sentence ``values`` of row ``i``'s ``kind`` sentences (weights only for "weighted")."""
        return aggregate(values, method, self.weight_fn(self.sentences(kind, i)) if method == "weighted" else None)

    # -- iteration --
    def rows(self, desc: str = "score") -> Iterator[int]:
        if not self.progress:
            return iter(self.valid)
        from tqdm.auto import tqdm

        return iter(tqdm(self.valid, desc=desc, unit="row"))

    def column(self) -> list:
        return [None] * self.n


def _resolve(obj: Any) -> Any:
    """A resource instance, or a zero-argument factory (function or class) called when first needed."""
    return obj() if inspect.isfunction(obj) or isinstance(obj, type) else obj


CALLABLES = ("embed", "embed_layers")  # resources given as the callable itself (never a factory)
PROBES: dict[str, Callable[[Any], Any]] = {
    "nli": lambda nli: nli.decision([[PROBE]], [PROBE], task=DEFAULT_TASK),  # loads the default task's head / model and its encoder
    "pii": lambda pii: pii.leaks([PROBE], [[]]),  # loads presidio + spaCy
    "multilingual": lambda enc: enc.encode([PROBE]),
}


class Resources:
    """The resources given to ``score()`` (instances or zero-argument factories), acquired per need; ``device``
    (``auto | cpu | cuda``): where the metrics' own fine-tuned encoders run (the toxicity head's), the caller's
    embedding model's device."""

    def __init__(self, has_reference: bool = False, device: Device = "cpu", **given: Any):
        if unknown := set(given) - set(RESOURCES):
            raise TypeError(f"unknown resources {sorted(unknown)}")
        self.has_reference = has_reference
        self.device = device
        self._given = {k: v for k, v in given.items() if v is not None}
        self._ready: dict[str, Any] = {}
        self._failed: dict[str, tuple[str, str]] = {}  # need -> (cause, fix)

    def acquire(self, need: str, metric: str) -> None:
        """Make ``need`` ready for ``metric`` or raise ``MetricUnavailable`` (cause + fix)."""
        if need == "reference":
            if not self.has_reference:
                raise MetricUnavailable(metric, "the input has no 'reference' column", FIXES["reference"])
            return
        if need in self._ready:
            return
        if need not in self._failed:
            if need not in self._given:
                self._failed[need] = (f"no {need} resource was given", FIXES[need])
            else:
                try:
                    obj = self._given[need] if need in CALLABLES else _resolve(self._given[need])
                    if need in PROBES:
                        PROBES[need](obj)
                    self._ready[need] = obj
                    return
                except LOAD_ERRORS as e:
                    self._failed[need] = (f"the {need} resource could not be loaded ({type(e).__name__}: {e})", FIXES[need])
                except MetricUnavailable as e:  # the resource itself says it cannot serve (e.g. a head of another version)
                    self._failed[need] = (f"the {need} resource is not usable: {e.cause}", e.fix)
        raise MetricUnavailable(metric, *self._failed[need])

    def get(self, need: str) -> Any:
        """The ready resource (``acquire`` first; the registry does that for every declared need)."""
        if need not in self._ready:
            raise RuntimeError(f"resource {need!r} used without being declared in the metric's needs")
        return self._ready[need]
