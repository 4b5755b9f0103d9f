"""Read and write sharded safetensors checkpoints (python3-safetensors is not in Debian 12).

Layout written like the reference tooling does: a compact JSON header with `__metadata__`
first, tensors ordered by (wider dtype first, name), header padded with spaces to a multiple of
8 bytes; `model.safetensors.index.json` with `metadata.total_size` and a sorted `weight_map`.
"""
import json
import os
import struct

import numpy as np
import torch

_DTYPES = {"F32": (torch.float32, 4), "BF16": (torch.bfloat16, 2), "F16": (torch.float16, 2)}
_NAMES = {v[0]: k for k, v in _DTYPES.items()}


def read_file(path):
    """{name: tensor in its stored dtype} of one .safetensors file."""
    blob = open(path, "rb").read()
    n = struct.unpack("<Q", blob[:8])[0]
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype, size = _DTYPES[info["dtype"]]
        begin, end = info["data_offsets"]
        raw = np.frombuffer(blob, dtype=np.uint8, count=end - begin, offset=8 + n + begin).copy()
        t = torch.from_numpy(raw.view(np.int16 if size == 2 else np.float32))
        if dtype != torch.float32:
            t = t.view(dtype)
        out[name] = t.reshape(info["shape"])
    return out


def read_folder(folder):
    """All tensors of a checkpoint folder, following its index when there is one, as float32."""
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    tensors = {}
    for f in files:
        tensors.update(read_file(os.path.join(folder, f)))
    return {k: v.float() for k, v in tensors.items()}


def _encode(tensor):
    t = tensor.detach().contiguous().cpu()
    if t.dtype == torch.float32:
        return t.numpy().tobytes()
    return t.view(torch.int16).numpy().tobytes()


def write_file(path, tensors):
    """tensors: {name: tensor already in its storage dtype (F32 or BF16)}."""
    order = sorted(tensors, key=lambda k: (-tensors[k].element_size(), k))
    header = {"__metadata__": {"format": "pt"}}
    chunks, offset = [], 0
    for name in order:
        t = tensors[name]
        data = _encode(t)
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for c in chunks:
            f.write(c)
    return offset


def write_sharded(folder, tensors, shard_of):
    """Write shards named model-0000i-of-0000n.safetensors; shard_of(name) -> 0-based shard."""
    groups = {}
    for name, t in tensors.items():
        groups.setdefault(shard_of(name), {})[name] = t
    n = len(groups)
    weight_map, total = {}, 0
    for i in sorted(groups):
        fname = "model-%05d-of-%05d.safetensors" % (i + 1, n)
        total += write_file(os.path.join(folder, fname), groups[i])
        for name in groups[i]:
            weight_map[name] = fname
    index = {"metadata": {"total_size": total},
             "weight_map": dict(sorted(weight_map.items()))}
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")
