"""Valid inputs for the test models, from the input descriptions in manifest.json.

An input description looks like
    {"name": "input_ids", "dtype": "int64", "shape": ["batch", "seq"],
     "generator": {"kind": "token_ids", "low": 0, "high": 512}}
and a shape binding like {"batch": 2, "seq": 16} gives the symbolic dimensions their sizes. A
dimension may be a sum of symbols ("past+seq", a KV-cache model's attention mask): its size is
the sum of theirs.

Generator kinds:
  token_ids       integers in [low, high); with "pad_id", rows after the first end in padding
  attention_mask  1 for tokens, 0 for padding at the end of every row after the first; with
                  "empty_last_row", the last row of a batch of 2 or more is all padding (a row whose
                  every key is masked: the unfused graph's result there is what fusions must keep)
  padding_flags   the opposite: true for padding (torch's key_padding_mask), false for tokens
  normal          float, standard normal times "scale" (default 1)
  positions       each row past, past + 1, ... with "offset" naming the dimension that is the past

differential_shapes() gives the shapes of the differential check (compiled path against the
reference evaluator at lengths no pass probed), read from the same symbolic dimension names.
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
            # A sum of dimensions ("past+seq": a mask over the cache and the new tokens) is
            # sized from its terms; it is not a dimension of its own.
            size = 0
            for term in dim.split("+"):
                if term not in dims:
                    raise KeyError(f"input '{spec['name']}': no size given for dimension '{term}'")
                size += int(dims[term])
            shape.append(size)
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
        if gen.get("empty_last_row") and shape[0] >= 2:
            mask[-1, :] = 0
        return mask
    if kind == "padding_flags":
        flags = np.zeros(shape, dtype=dtype)
        for row, pad in enumerate(padding_lengths(shape[0], shape[1])):
            if pad:
                flags[row, -pad:] = True
        return flags
    if kind == "positions":
        # Each row counts on from the cache's length: past, past + 1, ...
        offset = int(dims.get(gen.get("offset", ""), 0))
        return np.broadcast_to(np.arange(offset, offset + shape[-1]), shape).astype(dtype).copy()
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


# ---- the differential check's shapes ----------------------------------------------------------
# The batch dimension is named "batch" in every manifest; any other symbolic input dimension is a
# sequence length (seq, src_seq, tgt_seq, ...) that the differential check drives beyond anything
# a pass evaluated when it was compiled (the attention-mask classifier probed lengths 1..100).

BATCH_DIM = "batch"
DIFFERENTIAL_LENGTHS = (1, 7, 129, 300, 600)
# The JIT compiles the model again for every run: it runs where the first sequence dimension
# takes these lengths (the longest, and a short odd one); the .so, compiled once, runs everywhere.
JIT_LENGTHS = (600, 7)
# One shape runs at batch 2 (padding in the rows after the first, see padding_lengths): the
# sequence dimensions take these lengths, in order of appearance.
BATCH2_LENGTHS = (129, 7)
# A model without a sequence dimension varies its batch instead.
DIFFERENTIAL_BATCHES = (1, 2, 7, 33)
JIT_BATCHES = (33, 7)


def symbolic_dims(entry: dict) -> list:
    """The symbolic input dimensions of a manifest entry, in order of first appearance."""
    found = []
    for spec in entry["inputs"]:
        for dim in spec["shape"]:
            for term in dim.split("+") if isinstance(dim, str) else []:
                if term not in found:
                    found.append(term)
    return found


def differential_shapes(entry: dict) -> tuple:
    """(shapes, note) for the differential check of one manifest entry. `shapes` is a list of
    (dims, run_jit); `note` says which dimensions vary, or, with no shapes, why the model is
    skipped.

    Sequence dimensions come from the symbolic input dims; with several (an encoder-decoder's
    src_seq and tgt_seq) each takes every length, rotated against the others, so that they
    vary independently (src 600 with tgt 7, src 1 with tgt 129, ...). An entry may say what
    varies instead with "differential": {"batches": [...], "reason": "..."} or skip with
    "differential": {"skip": "reason"}.
    """
    override = entry.get("differential", {})
    if "skip" in override:
        return [], override["skip"]
    symbols = symbolic_dims(entry)
    sequences = [dim for dim in symbols if dim != BATCH_DIM]
    if "batches" in override or not sequences:
        if BATCH_DIM not in symbols:
            return [], "every input dimension is fixed"
        batches = override.get("batches", DIFFERENTIAL_BATCHES)
        jit = [b for b in JIT_BATCHES if b in batches] or [max(batches)]
        # Sequence dimensions that an override holds still keep their first test shape's size.
        held = {dim: entry["test_shapes"][0][dim] for dim in sequences}
        shapes = [({BATCH_DIM: b, **held}, b in jit) for b in batches]
        reason = override.get("reason", "no symbolic dimension but the batch")
        return shapes, f"batch varies ({reason})"
    count = len(DIFFERENTIAL_LENGTHS)
    # Dimension i takes the lengths rotated by 2*i: with two dimensions every pair is distinct
    # and every length meets a short and a long partner.
    shapes = []
    for k in range(count):
        lengths = {dim: DIFFERENTIAL_LENGTHS[(k + 2 * i) % count] for i, dim in enumerate(sequences)}
        dims = {BATCH_DIM: 1, **lengths} if BATCH_DIM in symbols else lengths
        shapes.append((dims, lengths[sequences[0]] in JIT_LENGTHS))
    if BATCH_DIM in symbols:
        lengths = {dim: BATCH2_LENGTHS[i % len(BATCH2_LENGTHS)] for i, dim in enumerate(sequences)}
        shapes.append(({BATCH_DIM: 2, **lengths}, False))
    return shapes, ", ".join(sequences) + " vary"
