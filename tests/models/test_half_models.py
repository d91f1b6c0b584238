"""Half-precision models as people get them, compiled onto the f32 (and bf16) kernels.

- f16: library-zoo exports turned into f16 models by onnxruntime's float16 converter
  (`onnxruntime.transformers.float16.convert_float_to_float16`, inputs and outputs f16 too).
- bf16: a BERT exported by Debian's torch from a bf16 module.

widen-half-precision computes such a model in f32 between its inputs, outputs and its own
roundings (docs/KERNEL_ACCURACY.md, "f16 and bf16 models"). So each model is checked against
the f32 computation with the same weights: onnxruntime (or torch) running the f32 model whose
weights and inputs are rounded to the half type. The difference allowed is the rounding of the
outputs to the half type (half an ulp: 2^-11 of |y| for f16, 2^-8 for bf16) plus the f32
agreement of the model tests. The fusions must find what they find in the f32 model: one matcher
serves both. Where onnxruntime runs the f16 model itself its error against f32 is printed
beside onnxc's.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models \\
        .venv/bin/python -m pytest tests/models/test_half_models.py -v -s
"""

import os
import re
import subprocess

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from model_checks import skip_at_pass_level
from model_inputs import make_inputs
from ort_reference import make_session, output_file_name, run_ort
from test_models import MANIFEST, model_path, run_onnxc

runs_kernels = skip_at_pass_level("ONNXC_MODEL_CHECKS=passes: compiled kernels run in the normal build")
ONNXC = os.environ.get("ONNXC")
HALF_ULP = {np.float16: 2.0**-11, "bf16": 2.0**-8}
F32_AGREEMENT = 1e-4  # of max |y|: the f32 kernels' reordering of sums, as in the model tests
F16_MODELS = ["hf_bert_op17", "hf_gpt2_op17", "hf_vit_op17", "hf_t5_op17", "hf_whisper_encoder_op17"]
FUSIONS = ("fuse-attention", "fuse-skip-layernorm", "fuse-layernorm", "fuse-rmsnorm", "fuse-gelu")


def fusion_counts(model: str) -> dict:
    """{fusion pass: how many it fused} from `onnxc dump --stats`."""
    result = subprocess.run([ONNXC, "dump", model, "-O2", "--stats"], capture_output=True, text=True,
                            timeout=300, check=True)
    counts = {}
    for line in result.stderr.splitlines():
        match = re.match(r"([a-z-]+): (\d+) fused", line)
        if match and match.group(1) in FUSIONS:
            counts[match.group(1)] = counts.get(match.group(1), 0) + int(match.group(2))
    return counts


def rounded_weights(model: onnx.ModelProto) -> onnx.ModelProto:
    """The f32 model with every float initializer and Constant rounded to f16 as the float16
    converter rounds them (clamped to f16's finite range), and kept f32."""
    from onnxruntime.transformers.float16 import convert_np_to_float16

    def round_tensor(tensor):
        values = numpy_helper.to_array(tensor)
        if values.dtype == np.float32:
            rounded = convert_np_to_float16(values.reshape(-1)).astype(np.float32).reshape(values.shape)
            tensor.CopyFrom(numpy_helper.from_array(rounded, tensor.name))

    rounded = onnx.ModelProto()
    rounded.CopyFrom(model)
    for tensor in rounded.graph.initializer:
        round_tensor(tensor)
    for node in rounded.graph.node:
        for attribute in node.attribute:
            if node.op_type == "Constant" and attribute.name == "value":
                round_tensor(attribute.t)
    return rounded


def check_outputs(label: str, got: np.ndarray, want: np.ndarray, half_ulp: float) -> float:
    """Fails when |got - want| exceeds the output rounding plus f32 agreement; returns the error."""
    got64, want64 = got.astype(np.float64), want.astype(np.float64)
    error = np.abs(got64 - want64)
    allowed = half_ulp * np.abs(want64) + F32_AGREEMENT * float(np.abs(want64).max())
    worst = float((error / allowed).max())
    print(f"{label}: max |onnxc - f32 with the same weights| {error.max():.3e} "
          f"({worst:.2f} of the allowance)")
    assert worst <= 1.0, f"{label}: error {error.max()} beyond the half-precision allowance"
    return float(error.max())


def converted(name: str, folder) -> tuple:
    """(manifest entry, f32 model, path of its f16 conversion in `folder`)."""
    from onnxruntime.transformers.float16 import convert_float_to_float16
    entry = next(e for e in MANIFEST["models"] if e["name"] == name)
    model = onnx.load(model_path(entry))
    half_path = str(folder / "half.onnx")
    onnx.save(convert_float_to_float16(model, keep_io_types=False), half_path)
    return entry, model, half_path


@pytest.mark.skipif(not ONNXC, reason="ONNXC must name the onnxc tool")
@pytest.mark.parametrize("name", F16_MODELS)
def test_f16_model_fuses_as_the_f32_one(name, tmp_path):
    entry, _, half_path = converted(name, tmp_path)
    assert fusion_counts(half_path) == fusion_counts(model_path(entry)), "fusions of the f16 model"


@runs_kernels
@pytest.mark.skipif(not ONNXC, reason="ONNXC must name the onnxc tool")
@pytest.mark.parametrize("name", F16_MODELS)
def test_f16_model_from_the_float16_converter(name, tmp_path):
    entry, model, half_path = converted(name, tmp_path)
    rounded_path = str(tmp_path / "rounded.onnx")
    onnx.save(rounded_weights(model), rounded_path)

    feeds = make_inputs(entry, entry["test_shapes"][-1])
    half_feeds = {k: v.astype(np.float16) if v.dtype == np.float32 else v for k, v in feeds.items()}
    want = run_ort(rounded_path, {k: v.astype(np.float32) if v.dtype == np.float16 else v
                                  for k, v in half_feeds.items()})
    exact = run_ort(model_path(entry), feeds)
    try:  # onnxruntime refuses some of its converter's f16 models (a Cast's declared type)
        peer = run_ort(half_path, half_feeds)
    except Exception as error:  # noqa: BLE001
        peer = None
        print(f"{name}: onnxruntime refuses the f16 model: {str(error).splitlines()[0][:120]}")
    (tmp_path / "run").mkdir()
    output_dir = run_onnxc(ONNXC, half_path, half_feeds, str(tmp_path / "run"), "jit")
    for output, reference in want.items():
        got = np.load(os.path.join(output_dir, output_file_name(output)))
        assert got.dtype == np.float16 and got.shape == reference.shape, output
        check_outputs(f"{name} {output}", got, reference, HALF_ULP[np.float16])
        ours = float(np.abs(got.astype(np.float64) - exact[output]).max())
        theirs = "refused" if peer is None else \
            f"{np.abs(peer[output].astype(np.float64) - exact[output]).max():.3e}"
        print(f"{name} {output}: max |f16 - f32 model|: onnxc {ours:.3e}, onnxruntime {theirs}")


@runs_kernels
@pytest.mark.skipif(not ONNXC, reason="ONNXC must name the onnxc tool")
def test_bf16_model_from_torch(tmp_path):
    import torch
    import transformers
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=128, hidden_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, intermediate_size=128)
    module = transformers.BertModel(config).eval().to(torch.bfloat16)
    ids = torch.randint(0, 128, (2, 9))
    mask = torch.ones(2, 9, dtype=torch.int64)
    mask[1, 6:] = 0
    path = str(tmp_path / "bert_bf16.onnx")
    torch.onnx.export(module, (ids, mask), path, input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state", "pooler_output"], opset_version=17,
                      dynamic_axes={"input_ids": {0: "batch", 1: "seq"},
                                    "attention_mask": {0: "batch", 1: "seq"}})
    reference = transformers.BertModel(config).eval()
    reference.load_state_dict({k: v.float() for k, v in module.state_dict().items()})
    with torch.no_grad():
        want = reference(input_ids=ids, attention_mask=mask)
    counts = fusion_counts(path)
    assert counts.get("fuse-attention") == 2 and counts.get("fuse-gelu") == 2, counts

    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy()}
    for precision in ("f32", "bf16"):
        run_dir = tmp_path / precision
        run_dir.mkdir()
        output_dir = run_onnxc(ONNXC, path, feeds, str(run_dir), "jit", extra=[f"--precision={precision}"])
        # numpy has no bfloat16: `onnxc run` writes a bf16 output as the f32 values it holds.
        got = np.load(os.path.join(output_dir, output_file_name("last_hidden_state")))
        assert got.dtype == np.float32
        assert np.all((got.view(np.uint32) & 0xFFFF) == 0), "values that are not bf16"
        if precision == "f32":
            check_outputs("bert bf16 model", got, want.last_hidden_state.numpy(), HALF_ULP["bf16"])
        else:  # the bf16 GEMM rounds the activations too: the model-level bound of test_bf16_models
            largest = float(np.abs(got - want.last_hidden_state.numpy()).max())
            print(f"bert bf16 model at --precision=bf16: max difference {largest:.3e}")
            assert largest <= 0.02 * float(np.abs(want.last_hidden_state.numpy()).max())



@runs_kernels
@pytest.mark.skipif(not ONNXC, reason="ONNXC must name the onnxc tool")
def test_f16_decoder_generates_as_the_f32_one_with_its_weights(tmp_path):
    """A decoder compiled for generation gets an f32 interface (driver/HalfInterface.h), so its
    cache is updated in place and its greedy tokens are those of the f32 model with the same
    (f16-rounded) weights."""
    entry, model, half_path = converted("hf_gpt2_past_op17", tmp_path)
    rounded_path = str(tmp_path / "rounded.onnx")
    onnx.save(rounded_weights(model), rounded_path)

    def generate(path):
        result = subprocess.run([ONNXC, "generate", path, "--prompt-ids", "11,29,3,57",
                                 "--max-new-tokens", "48"], capture_output=True, text=True,
                                timeout=600, check=True)
        return result.stdout.strip(), result.stderr

    half_tokens, half_log = generate(half_path)
    rounded_tokens, _ = generate(rounded_path)
    assert "updated in place" in half_log, half_log
    assert half_tokens == rounded_tokens
