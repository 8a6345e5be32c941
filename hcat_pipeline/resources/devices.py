"""Where the encoders run: ``device: auto | cpu | cuda`` for the embedding model, the NLI model and its backends, and
the toxicity head's fine-tuned encoder (on the embedding model's device).

``cpu`` (the default, and the tested path) runs on the CPU. ``cuda`` needs a GPU: torch's
(``torch.cuda.is_available()``) for the torch backends, onnxruntime's CUDA execution provider (the
``onnxruntime-gpu`` build) for the ONNX ones; without it the model refuses to load and says why
(``DeviceUnavailable``), rather than running slowly somewhere else. ``auto`` takes the GPU when there is one
and the CPU otherwise, never failing. The default comes from ``HCAT_DEVICE`` (unset: ``cpu``). Vectors are
cached by model, not by device: the CPU and the GPU give the same vectors to float rounding.
"""

from __future__ import annotations

import os
from typing import Literal

__all__ = ["DEFAULT_DEVICE", "Device", "DeviceUnavailable", "onnx_providers", "torch_device"]

Device = Literal["auto", "cpu", "cuda"]
DEFAULT_DEVICE: Device = os.environ.get("HCAT_DEVICE", "cpu")  # type: ignore[assignment]
if DEFAULT_DEVICE not in Device.__args__:
    raise ValueError(f"HCAT_DEVICE={DEFAULT_DEVICE!r}: use one of {list(Device.__args__)}")


class DeviceUnavailable(RuntimeError):
    """``device: cuda`` asked for where no GPU (or no GPU build of the runtime) is."""


def _torch_cuda() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return False
    return bool(torch.cuda.is_available())


def torch_device(device: Device) -> str:
    """``"cpu"`` or ``"cuda"`` for a torch model."""
    if device == "cpu":
        return "cpu"
    if _torch_cuda():
        return "cuda"
    if device == "cuda":
        raise DeviceUnavailable("device 'cuda' asked for, but torch sees no CUDA device (torch.cuda.is_available() is False); "
                                "use device 'auto' or 'cpu'")  # fmt: skip
    return "cpu"


def onnx_providers(device: Device) -> list[str]:
    """onnxruntime execution providers, in order of preference."""
    if device == "cpu":
        return ["CPUExecutionProvider"]
    import onnxruntime as ort

    if "CUDAExecutionProvider" in ort.get_available_providers():
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    if device == "cuda":
        raise DeviceUnavailable(f"device 'cuda' asked for, but this onnxruntime has no CUDA execution provider (it has "
                                f"{ort.get_available_providers()}: install onnxruntime-gpu); use device 'auto' or 'cpu'")  # fmt: skip
    return ["CPUExecutionProvider"]
