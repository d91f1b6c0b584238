"""The search options against HF `transformers`' own generate (4.40.2) on the same torch model.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models .venv/bin/python -m pytest tests/generate/test_search.py

The model is tests/models' random-weight HF GPT-2 with its cache (hf_gpt2_past: 2 layers, hidden 64,
vocabulary 384), rebuilt here in torch from its builder and seed exactly as build_models.py built it
before the export, so transformers' GPT2LMHeadModel.generate with the same weights is the oracle:
greedy, beam search (4 beams: length penalties, the three early-stopping rules, several returned
sequences, a stop id that ends hypotheses), repetition penalty, min_new_tokens and the log-probabilities
of the chosen tokens. Batches of prompts are checked against the same prompts run alone: on hf_llama_past
(position ids and a mask, so prompts of different lengths are left-padded) and on GPT-2 (no position
ids: one length; different lengths are refused in one line).
"""

import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))

from model_checks import PASS_LEVEL  # noqa: E402

MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
ONNXC = os.environ.get("ONNXC")
PROMPT = [64, 290, 318]
TIMEOUT = 600

pytestmark = [pytest.mark.skipif(not ONNXC, reason="ONNXC (the onnxc binary) is not set"),
              pytest.mark.skipif(bool(PASS_LEVEL), reason="ONNXC_MODEL_CHECKS=passes: the generator's "
                                 "C++ runs in test_generate.py's kept test")]


@pytest.fixture(scope="module")
def libraries(tmp_path_factory):
    folder = tmp_path_factory.mktemp("search")
    built = {}
    for name in ("hf_gpt2_past", "hf_llama_past"):
        path = os.path.join(MODEL_DIR, f"{name}_op17.onnx")
        if not os.path.exists(path):
            pytest.skip(f"{path} is not built (ctest -R models/build)")
        library = str(folder / f"{name}.so")
        subprocess.run([ONNXC, "compile", path, "-o", library], check=True, capture_output=True, text=True,
                       timeout=TIMEOUT)
        built[name] = library
    return built


@pytest.fixture(scope="module")
def torch_gpt2():
    """transformers' GPT2LMHeadModel with the weights of hf_gpt2_past_op17.onnx."""
    torch = pytest.importorskip("torch")
    import transformers_zoo as zoo
    from library_models import FAMILIES
    builder, seed, _ = FAMILIES["hf_gpt2_past"]
    torch.manual_seed(seed)
    module = builder()[0]
    zoo.randomize_norms(module, torch.Generator().manual_seed(seed))
    return module.model.eval()


def run(library, *options, prompts=(PROMPT,), expect_failure=False):
    """The stdout lines of `onnxc generate LIBRARY --prompt-ids P... OPTIONS`."""
    command = [ONNXC, "generate", library, "--threads", "1", *options]
    for prompt in prompts:
        command += ["--prompt-ids", ",".join(map(str, prompt))]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT)
    if expect_failure:
        assert result.returncode != 0, f"{command} should fail:\n{result.stdout}{result.stderr}"
        return result.stderr
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}{result.stderr}"
    return result.stdout.splitlines()


def error_lines(stderr):
    """The lines of an error: everything but the generator's note of the roles it found."""
    return [line for line in stderr.splitlines() if not line.startswith("onnxc generate: ")]


def ids(line):
    return [int(t) for t in line.split(",")] if line else []


def hf_generate(model, prompt=PROMPT, **options):
    """The new ids of each returned sequence of transformers' generate, cut after the first stop id
    (transformers pads the shorter beams after it)."""
    import torch
    prompt_ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(prompt_ids, attention_mask=torch.ones_like(prompt_ids), pad_token_id=0, **options)
    eos = options.get("eos_token_id")
    rows = []
    for row in out.tolist():
        new = row[len(prompt):]
        if eos is not None and eos in new:
            new = new[:new.index(eos) + 1]
        rows.append(new)
    return rows


def test_greedy_matches_transformers(libraries, torch_gpt2):
    want = hf_generate(torch_gpt2, max_new_tokens=24, do_sample=False, eos_token_id=None)[0]
    assert ids(run(libraries["hf_gpt2_past"], "--max-new-tokens", "24")[0]) == want


@pytest.mark.parametrize("length_penalty,early_stopping,returned,stop", [
    (1.0, "false", 4, "last"), (0.5, "true", 2, "first"), (0.5, "never", 4, "first"), (-1.0, "false", 3, "first")])
def test_beam_search_matches_transformers(libraries, torch_gpt2, length_penalty, early_stopping, returned, stop):
    # A stop id the beams reach: the first or the last id of the best sequence without one.
    free = hf_generate(torch_gpt2, max_new_tokens=16, num_beams=4, eos_token_id=None)[0]
    eos = free[0] if stop == "first" else free[-1]
    hf_early = {"true": True, "false": False, "never": "never"}[early_stopping]
    want = hf_generate(torch_gpt2, max_new_tokens=16, num_beams=4, num_return_sequences=returned,
                       length_penalty=length_penalty, early_stopping=hf_early, eos_token_id=eos)
    got = run(libraries["hf_gpt2_past"], "--max-new-tokens", "16", "--num-beams", "4",
              "--num-return-sequences", str(returned), "--length-penalty", str(length_penalty),
              "--early-stopping", early_stopping, "--eos-id", str(eos))
    assert [ids(line) for line in got] == want
    assert any(row[-1] == eos for row in want), "no returned hypothesis ended on the stop id"


def test_beam_search_without_a_stop_matches_transformers(libraries, torch_gpt2):
    want = hf_generate(torch_gpt2, max_new_tokens=20, num_beams=4, num_return_sequences=2, eos_token_id=None)
    got = run(libraries["hf_gpt2_past"], "--max-new-tokens", "20", "--num-beams", "4",
              "--num-return-sequences", "2")
    assert [ids(line) for line in got] == want


def test_beam_search_with_repetition_penalty_matches_transformers(libraries, torch_gpt2):
    # transformers applies the processors to the log-softmax in beam search; so does onnxc.
    want = hf_generate(torch_gpt2, max_new_tokens=12, num_beams=4, num_return_sequences=2,
                       repetition_penalty=1.5, eos_token_id=None)
    got = run(libraries["hf_gpt2_past"], "--max-new-tokens", "12", "--num-beams", "4",
              "--num-return-sequences", "2", "--repetition-penalty", "1.5")
    assert [ids(line) for line in got] == want


def test_repetition_penalty_and_min_new_tokens_match_transformers(libraries, torch_gpt2):
    want = hf_generate(torch_gpt2, max_new_tokens=24, repetition_penalty=1.3, eos_token_id=None)[0]
    got = ids(run(libraries["hf_gpt2_past"], "--max-new-tokens", "24", "--repetition-penalty", "1.3")[0])
    assert got == want
    plain = hf_generate(torch_gpt2, max_new_tokens=24, eos_token_id=None)[0]
    assert got != plain, "the penalty changed nothing; the comparison proves little"
    # The greedy first id as the stop, masked for three tokens.
    eos = plain[0]
    want = hf_generate(torch_gpt2, max_new_tokens=12, min_new_tokens=3, eos_token_id=eos)[0]
    got = ids(run(libraries["hf_gpt2_past"], "--max-new-tokens", "12", "--min-new-tokens", "3",
                  "--eos-id", str(eos))[0])
    assert got == want and len(got) >= 3


def test_logprobs_match_transformers_scores(libraries, torch_gpt2):
    import torch
    prompt_ids = torch.tensor([PROMPT])
    with torch.no_grad():
        out = torch_gpt2.generate(prompt_ids, attention_mask=torch.ones_like(prompt_ids), max_new_tokens=8,
                                  repetition_penalty=1.2, pad_token_id=0, eos_token_id=None,
                                  output_scores=True, return_dict_in_generate=True)
    chosen = out.sequences[0, len(PROMPT):]
    want = [torch.log_softmax(score[0], -1)[token].item() for score, token in zip(out.scores, chosen)]
    lines = run(libraries["hf_gpt2_past"], "--max-new-tokens", "8", "--repetition-penalty", "1.2",
                "--logprobs", "--top-logprobs", "3")
    assert ids(lines[0]) == chosen.tolist()
    entries = [entry.split() for entry in lines[1].split(",")]
    got = [float(entry[0]) for entry in entries]
    np.testing.assert_allclose(got, want, atol=2e-4)
    for entry, token in zip(entries, chosen.tolist()):
        top = [int(pair.split(":")[0]) for pair in entry[1:]]
        assert len(top) == 3 and top[0] == token  # greedy: the chosen id is the most likely


def test_batch_of_different_lengths_matches_each_alone(libraries):
    # 24 ids against 1 to 7: the rows run apart (the 24 alone, the others as a group) and are
    # joined into the batch's cache rows, instead of one run padded to 24.
    prompts = [[5, 17, 200, 33, 9, 41, 7], [64, 290], list(range(200, 224)), [11, 12, 13, 14], [300]]
    alone = [ids(run(libraries["hf_llama_past"], "--max-new-tokens", "16", prompts=[p])[0]) for p in prompts]
    batch = run(libraries["hf_llama_past"], "--max-new-tokens", "16", prompts=prompts)
    assert [ids(line) for line in batch] == alone
    # Sampling: every row draws from the seed as its prompt alone does.
    sampling = ["--max-new-tokens", "10", "--sample", "--seed", "3", "--top-k", "20"]
    drawn = [ids(run(libraries["hf_llama_past"], *sampling, prompts=[p])[0]) for p in prompts]
    assert [ids(line) for line in run(libraries["hf_llama_past"], *sampling, prompts=prompts)] == drawn
    # Each row stops at its own stop id: row 1's fourth id.
    eos = alone[1][3]
    stopped = [ids(line) for line in run(libraries["hf_llama_past"], "--max-new-tokens", "16", "--eos-id",
                                         str(eos), prompts=prompts)]
    for row, full in zip(stopped, alone):
        assert row == (full[:full.index(eos) + 1] if eos in full else full)


def test_gpt2_batch_of_one_length_and_different_lengths_refused(libraries):
    prompts = [[64, 290, 318], [5, 6, 7], [100, 101, 102]]
    alone = [ids(run(libraries["hf_gpt2_past"], "--max-new-tokens", "12", prompts=[p])[0]) for p in prompts]
    assert [ids(line) for line in run(libraries["hf_gpt2_past"], "--max-new-tokens", "12", prompts=prompts)] == alone
    error = run(libraries["hf_gpt2_past"], prompts=[[1, 2, 3], [4]], expect_failure=True)
    assert "prompts of different lengths need a model with an attention mask and position ids" in error
    assert len(error_lines(error)) == 1


@pytest.mark.parametrize("options,message", [
    (["--num-beams", "0"], "--num-beams must be at least 1"),
    (["--num-beams", "2", "--num-return-sequences", "3"], "num_return_sequences is 3"),
    (["--repetition-penalty", "-1"], "repetition_penalty is -1"),
    (["--num-return-sequences", "2"], "apply to beam search"),
])
def test_bad_search_arguments_are_one_line(libraries, options, message):
    error = run(libraries["hf_gpt2_past"], *options, expect_failure=True)
    assert message in error and len(error_lines(error)) == 1, error
