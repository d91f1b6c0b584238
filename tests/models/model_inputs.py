"""Valid inputs for the test models, from the input descriptions in manifest.json.

An input description looks like
    {"name": "input_ids", "dtype": "int64", "shape": ["batch", "seq"],
     "generator": {"kind": "token_ids", "low": 0, "high": 512}}
and a shape binding like {"batch": 2, "seq": 16} gives the symbolic dimensions their sizes.

Generator kinds:
  token_ids       integers in [low, high); with "pad_id", rows after the first end in padding
  attention_mask  1 for tokens, 0 for padding at the end of every row after the first
  normal          float, standard normal times "scale" (default 1)
"""

import zlib

import numpy as np


def padding_lengths(batch: int, seq: int) -> list:
    """How many trailing positions of each row are padding: none in row 0 (so every batch has
    a full row, and no row is ever all padding), a growing amount in later rows."""
    return [0 if row == 0 else min(seq - 1, 1 + (row * seq) // (2 * batch)) for row in range(batch)]


def concrete_shape(spec: dict, dims: dict) -> tuple:
    shape = []
    for dim in spec["shape"]:
        if isinstance(dim, str):
            if dim not in dims:
                raise KeyError(f"input '{spec['name']}': no size given for dimension '{dim}'")
            shape.append(int(dims[dim]))
        else:
            shape.append(int(dim))
    return tuple(shape)


def make_input(spec: dict, dims: dict, rng: np.random.Generator) -> np.ndarray:
    shape = concrete_shape(spec, dims)
    gen = spec["generator"]
    dtype = np.dtype(spec["dtype"])
    kind = gen["kind"]
    if kind == "token_ids":
        ids = rng.integers(gen["low"], gen["high"], size=shape, dtype=np.int64)
        if "pad_id" in gen:
            for row, pad in enumerate(padding_lengths(shape[0], shape[1])):
                if pad:
                    ids[row, -pad:] = gen["pad_id"]
        return ids.astype(dtype)
    if kind == "attention_mask":
        mask = np.ones(shape, dtype=dtype)
        for row, pad in enumerate(padding_lengths(shape[0], shape[1])):
            if pad:
                mask[row, -pad:] = 0
        return mask
    if kind == "normal":
        return (gen.get("scale", 1.0) * rng.standard_normal(shape)).astype(dtype)
    raise ValueError(f"input '{spec['name']}': unknown generator kind '{kind}'")


def make_inputs(model_entry: dict, dims: dict, seed: int = None) -> dict:
    """Inputs for one manifest entry, deterministic per (model, shape) unless a seed is given."""
    if seed is None:
        key = model_entry["name"] + "".join(f"|{k}={dims[k]}" for k in sorted(dims))
        seed = zlib.crc32(key.encode())
    rng = np.random.default_rng(seed)
    return {spec["name"]: make_input(spec, dims, rng) for spec in model_entry["inputs"]}


def shape_id(dims: dict) -> str:
    """A short readable label for a shape binding, e.g. 'batch2-seq16'."""
    return "-".join(f"{k}{v}" for k, v in dims.items())
