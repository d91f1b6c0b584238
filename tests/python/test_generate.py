"""Model.generate on the KV-cache GPT-2 of tests/models (hf_gpt2_past) and on a decoder without a
cache (gpt_op17), against onnxruntime's greedy loop over the same file.

At the pass level (ONNXC_MODEL_CHECKS=passes, tests/models/model_checks.py: the sanitizer builds)
the two tests on hf_gpt2_past, one compiled model, keep the bindings' generate, its callback and its
errors under the sanitizers; the other models' generations are skipped."""

import os
import sys

import numpy as np
import pytest

import onnxc

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models"))
from model_checks import skip_at_pass_level  # noqa: E402

compiled_kernels = skip_at_pass_level("ONNXC_MODEL_CHECKS=passes: one more model compiled to run its kernels "
                                      "(uninstrumented); the bindings' generate runs on hf_gpt2_past")

PROMPT = [64, 290, 318]


@pytest.fixture(scope="module")
def gpt2_past(model_dir):
    path = os.path.join(model_dir, "hf_gpt2_past_op17.onnx")
    return path, onnxc.compile(path, threads=1)


def ort_greedy_with_cache(path, prompt, count):
    import onnxruntime as ort
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    pasts = [i.name for i in session.get_inputs() if i.name.startswith("past_")]
    feeds = {name: np.zeros((1, 4, 0, 16), dtype=np.float32) for name in pasts}
    names = [o.name for o in session.get_outputs()]
    ids, produced = list(prompt), []
    new = list(prompt)
    while len(produced) < count:
        feeds["input_ids"] = np.array([new], dtype=np.int64)
        feeds["attention_mask"] = np.ones((1, len(ids)), dtype=np.int64)
        outputs = dict(zip(names, session.run(names, feeds)))
        token = int(np.argmax(outputs["logits"][0, -1]))
        produced.append(token)
        ids.append(token)
        new = [token]
        for name in pasts:
            feeds[name] = outputs[name.replace("past_", "present_", 1)]
    return produced


def test_greedy_matches_onnxruntime(gpt2_past):
    path, model = gpt2_past
    streamed = []
    tokens = model.generate(PROMPT, max_new_tokens=24, on_token=streamed.append)
    assert tokens == ort_greedy_with_cache(path, PROMPT, 24)
    assert streamed == tokens
    assert model.last_generation["mode"] == "kv-cache"
    assert "4 cache pairs" in model.last_generation["roles"]
    # A numpy prompt, [1, n] too.
    assert model.generate(np.array([PROMPT]), max_new_tokens=24) == tokens


def test_sampling_and_errors(gpt2_past):
    _, model = gpt2_past
    options = dict(max_new_tokens=12, do_sample=True, temperature=1.5, top_k=40, top_p=0.95)
    first = model.generate(PROMPT, seed=3, **options)
    assert first == model.generate(PROMPT, seed=3, **options)
    assert first != model.generate(PROMPT, seed=4, **options)
    with pytest.raises(onnxc.Error, match=r"^after 6 tokens: the sequence would grow to 9 positions, "
                                          r"past the capacity of 8"):
        model.generate(PROMPT, max_new_tokens=12, capacity=8)
    with pytest.raises(onnxc.Error, match=r"^mapping: logits=nope names no output of the model$"):
        model.generate(PROMPT, mapping={"logits": "nope"})
    # What the CLI refuses, refused here too (issue 33): a negative id would index the embedding
    # table from its end, a fractional count would be truncated.
    with pytest.raises(onnxc.Error, match=r"^prompt id -1 at position 1 is negative"):
        model.generate([PROMPT[0], -1], max_new_tokens=2)
    with pytest.raises(onnxc.Error, match=r"^eos_token_id is -5; use a token id, or -1 for none"):
        model.generate(PROMPT, max_new_tokens=2, eos_token_id=-5)
    # GPT-2's 1,024-row position table bounds the sequence: refused before the first step, saying
    # how many new tokens fit, rather than failing at the step that crosses it.
    with pytest.raises(onnxc.Error, match=r"^the prompt's 3 tokens and max_new_tokens 1100 need 1103 "
                                          r"positions, but the model holds 1024 positions \(.*\); at "
                                          r"most 1021 new tokens fit$"):
        model.generate(PROMPT, max_new_tokens=1100)
    for name, value in (("max_new_tokens", 2.7), ("top_k", True), ("capacity", "8")):
        with pytest.raises(onnxc.Error, match=rf"^{name} must be an integer, got {value!r}"):
            model.generate(PROMPT, **{"max_new_tokens": 2, name: value})


@compiled_kernels
def test_without_a_cache(gpt):
    path, _ = gpt
    import onnxruntime as ort
    model = onnxc.compile(path, threads=1)
    tokens = model.generate([5, 17, 2], max_new_tokens=10)
    assert model.last_generation["mode"] == "full-sequence"
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    ids, want = [5, 17, 2], []
    name = session.get_inputs()[0].name
    for _ in range(10):
        logits = session.run(None, {name: np.array([ids], dtype=np.int64)})[0]
        want.append(int(np.argmax(logits[0, -1])))
        ids.append(want[-1])
    assert tokens == want


@compiled_kernels
def test_encoder_decoder(model_dir):
    """BART as two models (tests/models/library_models.py): the encoder once per source, the decoder
    step with its cache and the encoder's cross K/V; the tokens are those of the CLI's test."""
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "generate"))
    from test_seq2seq import ort_greedy_with_cache as ort_seq2seq
    encoder_path = os.path.join(model_dir, "hf_bart_seq2seq_encoder_op17.onnx")
    decoder_path = os.path.join(model_dir, "hf_bart_seq2seq_decoder_past_op17.onnx")
    encoder = onnxc.compile(encoder_path, threads=1)
    decoder = onnxc.compile(decoder_path, threads=1)
    source = [0, 45, 311, 67, 89, 123, 200, 17, 2]
    tokens = decoder.generate([2], max_new_tokens=20, encoder=encoder, source_ids=np.array(source))
    assert tokens == ort_seq2seq(encoder_path, decoder_path, source, 20)
    assert "5 inputs from the encoder" in decoder.last_generation["roles"]
    with pytest.raises(onnxc.Error, match="needs both encoder= and source_ids="):
        decoder.generate([2], encoder=encoder)
    with pytest.raises(onnxc.Error, match="^the source is empty"):
        decoder.generate([2], encoder=encoder, source_ids=[])


def test_search_options_batches_and_beams(gpt2_past):
    """The kwargs of issue 30 reach the generator: a batch returns one list per prompt, equal to each
    prompt alone; beams return the best sequences with their scores; log-probabilities come back per
    token; a stop list ends the output; bad values are one-line errors."""
    _, model = gpt2_past
    prompts = [PROMPT, [5, 6, 7], [100, 101, 102]]
    alone = [model.generate(p, max_new_tokens=10) for p in prompts]
    assert model.generate(prompts, max_new_tokens=10) == alone
    assert model.generate(np.array(prompts), max_new_tokens=10) == alone
    stopped = model.generate(PROMPT, max_new_tokens=10, eos_token_id=[999, alone[0][2]])
    assert stopped == alone[0][:alone[0].index(alone[0][2]) + 1]
    tokens = model.generate(PROMPT, max_new_tokens=6, logprobs=True, top_logprobs=2)
    logprobs = model.last_generation["logprobs"]
    top = model.last_generation["top_logprobs"]
    assert len(logprobs) == len(tokens) == len(top) == 6
    assert all(lp < 0 for lp in logprobs)
    assert [pairs[0][0] for pairs in top] == tokens and top[0][0][1] == pytest.approx(logprobs[0])
    best = model.generate(PROMPT, max_new_tokens=8, num_beams=4)
    sequences = model.generate(PROMPT, max_new_tokens=8, num_beams=4, num_return_sequences=3)
    assert sequences[0] == best and len(sequences) == 3
    scores = model.last_generation["scores"]
    assert scores == sorted(scores, reverse=True)
    penalized = model.generate(PROMPT, max_new_tokens=10, repetition_penalty=1.5, presence_penalty=0.5)
    assert penalized != alone[0]
    for kwargs, message in [({"num_beams": 0}, "num_beams is 0"),
                            ({"num_beams": 2, "num_return_sequences": 3}, "num_return_sequences is 3"),
                            ({"frequency_penalty": -3.0}, "frequency_penalty is -3"),
                            ({"early_stopping": "sometimes"}, "early_stopping must be")]:
        with pytest.raises(onnxc.Error, match=message):
            model.generate(PROMPT, max_new_tokens=4, **kwargs)
    with pytest.raises(onnxc.Error, match="prompts of different lengths"):
        model.generate([[1, 2, 3], [4]], max_new_tokens=4)
