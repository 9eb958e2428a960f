"""Read and write safetensors files without the `safetensors` package.

The format: 8 bytes little-endian header length N, N bytes of JSON
`{name: {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}`,
then the raw little-endian tensor bytes (offsets relative to the end of the header). We always write
with this module, even when the package is installed, so a checkpoint is byte-identical either way.
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import torch

DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
NAMES = {dtype: name for name, dtype in DTYPES.items()}
INDEX_FILE = "model.safetensors.index.json"
# Real files keep headers far below this; a bigger length means a corrupt or foreign file.
MAX_HEADER = 100 * 1024 * 1024

if sys.byteorder != "little":  # the raw bytes are little-endian; torch tensors are native-endian
    raise ImportError("atk_trainer.model.safetensors_io needs a little-endian machine")


class SafetensorsError(ValueError):
    """A file that is not valid safetensors (or holds a dtype we do not read)."""


def load_file(path: str, names: Optional[Iterable[str]] = None) -> Dict[str, torch.Tensor]:
    """All tensors of one .safetensors file (or just `names`), on CPU, each owning its memory."""
    return dict(iter_file(path, names))


def iter_file(path: str, names: Optional[Iterable[str]] = None) -> Iterator[Tuple[str, torch.Tensor]]:
    """(name, tensor) for the tensors of one .safetensors file (or just `names`), read one at a time, so
    a consumer that copies each one elsewhere never holds more than one in memory."""
    with open(path, "rb") as f:
        header, data_start = _read_header(f, path)
        size = os.fstat(f.fileno()).st_size
        wanted = sorted(header) if names is None else list(names)
        for name in wanted:
            if name not in header:
                raise SafetensorsError(f"{path}: no tensor {name!r}")
            info = header[name]
            dtype, shape, (begin, end) = _parse_entry(info, name, path)
            numel = 1
            for dim in shape:
                numel *= dim
            nbytes = numel * torch.tensor([], dtype=dtype).element_size()
            if end - begin != nbytes or data_start + end > size:
                raise SafetensorsError(f"{path}: tensor {name!r} has offsets {begin}..{end} for {nbytes} bytes")
            buffer = bytearray(nbytes)
            f.seek(data_start + begin)
            if f.readinto(buffer) != nbytes:
                raise SafetensorsError(f"{path}: file ends inside tensor {name!r}")
            flat = torch.frombuffer(buffer, dtype=dtype) if nbytes else torch.empty(0, dtype=dtype)
            yield name, flat.reshape(shape)


def load_metadata(path: str) -> Dict[str, str]:
    """The file's `__metadata__` (string to string), empty when absent."""
    with open(path, "rb") as f:
        header, _ = _read_header(f, path, keep_metadata=True)
    return dict(header.get("__metadata__") or {})


def save_file(tensors: Mapping[str, torch.Tensor], path: str, metadata: Optional[Mapping[str, str]] = None) -> None:
    """Write `tensors` (any device; copied to contiguous CPU) as one .safetensors file, names sorted."""
    cpu = {name: t.detach().to("cpu").contiguous() for name, t in tensors.items()}
    header: Dict[str, object] = {"__metadata__": dict(metadata or {"format": "pt"})}
    offset = 0
    for name in sorted(cpu):
        t = cpu[name]
        if t.dtype not in NAMES:
            raise SafetensorsError(f"{name}: dtype {t.dtype} cannot be written to safetensors here")
        nbytes = t.numel() * t.element_size()
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)  # the reference writer pads the header to 8-byte alignment
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for name in sorted(cpu):
            t = cpu[name]
            if t.numel():
                f.write(ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()))


def load_dir(directory: str) -> Dict[str, torch.Tensor]:
    """Every weight of a Hugging Face model directory (see iter_dir)."""
    return dict(iter_dir(directory))


def iter_dir(directory: str) -> Iterator[Tuple[str, torch.Tensor]]:
    """(name, tensor) for every weight of a Hugging Face model directory, one tensor at a time (see
    weight_files). @raises FileNotFoundError (when iterated) if there is none."""
    for file, names in weight_files(directory):
        yield from iter_file(os.path.join(directory, file), names)


def tensor_names(directory: str) -> List[str]:
    """The names of every weight of a Hugging Face model directory (see weight_files), read from the
    index or the file headers alone. @raises FileNotFoundError if there is none."""
    names: List[str] = []
    for file, listed in weight_files(directory):
        if listed is None:
            path = os.path.join(directory, file)
            with open(path, "rb") as f:
                listed = list(_read_header(f, path)[0])
        names.extend(listed)
    return sorted(names)


def weight_files(directory: str) -> List[Tuple[str, Optional[List[str]]]]:
    """(file name, the weights to read from it or None for all) of a Hugging Face model directory: the
    shards of model.safetensors.index.json, else model.safetensors, else every *.safetensors file.
    @raises FileNotFoundError if there is none."""
    index = os.path.join(directory, INDEX_FILE)
    if os.path.exists(index):
        with open(index) as f:
            weight_map: Dict[str, str] = json.load(f)["weight_map"]
        by_file: Dict[str, list] = {}
        for name, file in weight_map.items():
            by_file.setdefault(file, []).append(name)
        return sorted(by_file.items())
    if os.path.exists(os.path.join(directory, "model.safetensors")):
        return [("model.safetensors", None)]
    files = sorted(n for n in os.listdir(directory) if n.endswith(".safetensors"))
    if not files:
        raise FileNotFoundError(f"{directory}: no model.safetensors, {INDEX_FILE} or *.safetensors")
    return [(n, None) for n in files]


def _read_header(f, path: str, keep_metadata: bool = False):
    raw = f.read(8)
    if len(raw) != 8:
        raise SafetensorsError(f"{path}: too short for a safetensors file")
    (length,) = struct.unpack("<Q", raw)
    if length > MAX_HEADER:
        raise SafetensorsError(f"{path}: header length {length} is not plausible; not a safetensors file")
    try:
        header = json.loads(f.read(length).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SafetensorsError(f"{path}: header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{path}: header is not a JSON object")
    if not keep_metadata:
        header.pop("__metadata__", None)
    return header, 8 + length


def _parse_entry(info, name: str, path: str):
    try:
        dtype_name, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    except (TypeError, KeyError):
        raise SafetensorsError(f"{path}: tensor {name!r} lacks dtype/shape/data_offsets") from None
    if dtype_name not in DTYPES:
        raise SafetensorsError(f"{path}: tensor {name!r} has dtype {dtype_name}, which atk_trainer does not read")
    return DTYPES[dtype_name], [int(d) for d in shape], (int(offsets[0]), int(offsets[1]))
