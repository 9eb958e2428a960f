"""Fixtures shared by the trainer tests."""
import pytest
import torch


@pytest.fixture
def cuda_autocast_on_cpu(monkeypatch):
    """torch.autocast("cuda", ...) as CPU autocast with the same dtype, so the code that asks for
    CUDA bf16 autocast runs its bf16 forward here."""
    real = torch.autocast

    class CpuAutocast(real):
        def __init__(self, device_type, *args, **kwargs):
            super().__init__("cpu" if device_type == "cuda" else device_type, *args, **kwargs)

    monkeypatch.setattr(torch, "autocast", CpuAutocast)
