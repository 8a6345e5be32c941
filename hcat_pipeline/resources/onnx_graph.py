"""Reading more of a packaged ONNX model than its graph declares, in the same pass (no second model):
``expose_outputs`` adds inner tensors (hidden states) to a graph's outputs; ``masked_mean`` pools
token states over a mask. Used by the MiniLM layer features (``embedding.py``) and the
contradiction model's pair representation (``nli_backends.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def expose_outputs(proto, names: Sequence[str]) -> bytes:
    """The serialised graph of ``proto`` (an ``onnx.ModelProto``) with the tensors ``names`` as
    extra outputs (those already outputs are left as they are); a name the graph does not produce
    is an error naming it."""
    import onnx

    produced = {o for n in proto.graph.node for o in n.output}
    if missing := [n for n in names if n not in produced]:
        raise ValueError(f"the ONNX graph does not produce the tensors {missing}")
    known = {o.name for o in proto.graph.output}
    for name in names:
        if name not in known:
            proto.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    return proto.SerializeToString()


def masked_mean(states: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Mean of ``states`` (batch × tokens × dim) over the tokens where ``mask`` is set (batch × tokens);
    zeros for a row with no token set."""
    m = np.asarray(mask, dtype=np.float32)
    return np.einsum("btd,bt->bd", np.asarray(states, dtype=np.float32), m) / np.maximum(m.sum(axis=1, keepdims=True), 1e-9)
