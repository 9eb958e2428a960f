"""safetensors_io reads what the format specifies and writes what it reads, without the safetensors package."""
import json
import struct

import pytest
import torch

from atk_trainer.model.safetensors_io import SafetensorsError, load_dir, load_file, load_metadata, save_file


def test_save_then_load_returns_equal_tensors_of_every_dtype(tmp_path):
    tensors = {
        "f32": torch.randn(3, 4),
        "f16": torch.randn(5).half(),
        "bf16": torch.randn(2, 2, 2).bfloat16(),
        "f64": torch.randn(1).double(),
        "i64": torch.arange(-3, 3),
        "i32": torch.arange(6, dtype=torch.int32).reshape(2, 3),
        "u8": torch.tensor([0, 255], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 7),
        "strided": torch.randn(4, 6)[:, ::2],  # non-contiguous input is written contiguously
    }
    path = str(tmp_path / "t.safetensors")
    save_file(tensors, path, {"format": "pt", "note": "x"})
    loaded = load_file(path)
    assert sorted(loaded) == sorted(tensors)
    for name, t in tensors.items():
        assert loaded[name].dtype == t.dtype and loaded[name].shape == t.shape, name
        assert torch.equal(loaded[name], t), name
    assert load_metadata(path) == {"format": "pt", "note": "x"}


def test_load_file_returns_tensors_of_a_hand_built_file(tmp_path):
    # Written byte by byte as the format specifies: u64 header length, JSON header, little-endian data.
    data = struct.pack("<3f", 1.0, -2.0, 0.5) + struct.pack("<2q", 7, -9)
    header = {
        "b": {"dtype": "I64", "shape": [2], "data_offsets": [12, 28]},
        "a": {"dtype": "F32", "shape": [1, 3], "data_offsets": [0, 12]},
    }
    encoded = json.dumps(header).encode()
    path = tmp_path / "hand.safetensors"
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)
    loaded = load_file(str(path))
    assert torch.equal(loaded["a"], torch.tensor([[1.0, -2.0, 0.5]]))
    assert torch.equal(loaded["b"], torch.tensor([7, -9]))
    assert load_metadata(str(path)) == {}


def test_save_file_writes_the_reference_layout(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file(
        {"z": torch.tensor([1.5], dtype=torch.float32), "a": torch.tensor([[1, 2]], dtype=torch.int16)}, str(path)
    )
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0
    header = json.loads(raw[8 : 8 + n])
    assert header == {
        "__metadata__": {"format": "pt"},
        "a": {"dtype": "I16", "shape": [1, 2], "data_offsets": [0, 4]},
        "z": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
    }
    assert raw[8 + n :] == struct.pack("<2h", 1, 2) + struct.pack("<f", 1.5)


def test_load_dir_returns_every_shard_of_an_index(tmp_path):
    save_file({"x": torch.ones(2)}, str(tmp_path / "model-00001-of-00002.safetensors"))
    save_file({"y": torch.zeros(3), "unused": torch.ones(1)}, str(tmp_path / "model-00002-of-00002.safetensors"))
    index = {
        "metadata": {"total_size": 20},
        "weight_map": {"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"},
    }
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    loaded = load_dir(str(tmp_path))
    assert sorted(loaded) == ["x", "y"] and torch.equal(loaded["y"], torch.zeros(3))


def test_load_file_rejects_corrupt_files(tmp_path):
    bad = tmp_path / "bad.safetensors"
    bad.write_bytes(struct.pack("<Q", 4) + b"{no}")
    with pytest.raises(SafetensorsError, match="not JSON"):
        load_file(str(bad))
    short = tmp_path / "short.safetensors"
    header = json.dumps({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}).encode()
    short.write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    with pytest.raises(SafetensorsError, match="offsets"):
        load_file(str(short))
    with pytest.raises(FileNotFoundError):
        load_dir(str(tmp_path / "nowhere"))  # noqa: the directory does not exist
