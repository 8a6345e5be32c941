"""``device: auto | cpu | cuda`` for the encoders: auto takes a GPU when there is one, cuda refuses plainly without one,
cpu is the default and what this machine runs."""

import subprocess
import sys

import numpy as np
import pytest

from hcat_pipeline.resources.devices import DeviceUnavailable, onnx_providers, torch_device
from hcat_pipeline.resources.embedding import EmbeddingModel

HAS_CUDA = torch_device("auto") == "cuda"


def test_auto_takes_what_is_there_and_cpu_is_cpu():
    assert torch_device("cpu") == "cpu" and onnx_providers("cpu") == ["CPUExecutionProvider"]
    import onnxruntime as ort
    import torch

    assert torch_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    gpu_onnx = "CUDAExecutionProvider" in ort.get_available_providers()
    assert onnx_providers("auto")[0] == ("CUDAExecutionProvider" if gpu_onnx else "CPUExecutionProvider")


@pytest.mark.skipif(HAS_CUDA, reason="a GPU is here: cuda is available")
def test_cuda_without_a_gpu_refuses_and_says_why(tmp_path):
    with pytest.raises(DeviceUnavailable, match=r"torch sees no CUDA device"):
        torch_device("cuda")
    with pytest.raises(DeviceUnavailable, match="onnxruntime-gpu"):
        onnx_providers("cuda")
    with pytest.raises(DeviceUnavailable):
        EmbeddingModel(device="cuda", use_cache=False).embed(["a sentence"])


def test_the_embedding_model_on_auto_gives_the_cpu_vectors(tmp_path):
    texts = ["The pass statement does nothing.", "A much longer sentence about the break statement and loops in Python."]
    cpu = EmbeddingModel(device="cpu", use_cache=False).embed(texts)
    auto = EmbeddingModel(device="auto", use_cache=False).embed(texts)
    assert cpu.shape == (2, 384) and np.allclose(cpu, auto, atol=1e-3)


def test_a_wrong_hcat_device_is_refused_at_start():
    code = "import hcat_pipeline.resources.devices"
    res = subprocess.run([sys.executable, "-c", code], env={"HCAT_DEVICE": "gpu", "PATH": ""}, capture_output=True, text=True)
    assert res.returncode != 0 and "HCAT_DEVICE='gpu': use one of ['auto', 'cpu', 'cuda']" in res.stderr
