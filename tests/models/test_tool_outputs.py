"""Outputs for other tools, on every test model: `onnxc dump --format=onnx` runs in onnxruntime
and matches the original, and `--format=dot` draws one cluster per layer with no dangling edge.

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models .venv/bin/python -m pytest tests/models/test_tool_outputs.py -v

For each model in manifest.json: dump at -O2 (the fused graph: Attention, LayerNormalization,
RMSNormalization, Gelu as standard ONNX ops, onnxc's own ops decomposed) to ONNX, check it with
the onnx checker, run it with onnxruntime on the inputs of the model's last test shape and compare
with onnxruntime's run of the original model at the model's tolerance. The exported model may keep
no op in the `onnxc` domain unless KEPT_CUSTOM lists the model with the reason. A second test does
the same at -O0 (the unoptimized graph round-trips). One shape per model keeps it
cheap: the models are the ones build_models.py already exported.

At the pass level (ONNXC_MODEL_CHECKS=passes, model_checks.py: the sanitizer builds) every dump
still runs (onnxc's exporter and DOT printer are what ASan checks here) and the exported files
still pass the onnx checker; running them in onnxruntime against the original is the normal build's.
"""

import json
import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "ir", "Inputs"))

from dot_structure import parse_dot  # noqa: E402
from model_checks import PASS_LEVEL  # noqa: E402
from model_inputs import shape_id  # noqa: E402
from ort_reference import run_ort  # noqa: E402
from test_models import MANIFEST, compare, model_path, onnxc_binary, reference  # noqa: E402

# Models whose export keeps ops in the onnxc domain, with why (docs/OUTPUTS.md). Empty: every
# zoo model's fused graph has a standard form.
KEPT_CUSTOM = {}


def export(entry: dict, directory, opt_level: str) -> tuple:
    """(path of the exported model, custom ops the export reported)."""
    destination = str(directory / f"{entry['name']}{opt_level}.onnx")
    command = [onnxc_binary(), "dump", model_path(entry), opt_level, "--format=onnx", "-o", destination,
               "--json"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        pytest.fail(f"exit code {result.returncode}: {' '.join(command)}\nstderr: {result.stderr.strip()[-3000:]}")
    document = json.loads(result.stdout)
    assert document["format"] == "onnx" and document["output"] == destination
    return destination, document["custom_ops"]


def check_runs_like_original(entry: dict, exported: str) -> None:
    import onnx
    model = onnx.load(exported)
    onnx.checker.check_model(model)
    if PASS_LEVEL:
        return  # onnxc's part is done: the numbers are onnxruntime's, checked in the normal build
    dims = entry["test_shapes"][-1]
    feeds, want = reference(entry, dims)
    got = run_ort(exported, feeds)
    assert sorted(got) == sorted(want), f"outputs {sorted(got)}, expected {sorted(want)}"
    for name, value in want.items():
        compare(f"{entry['name']} {shape_id(dims)} {name} (exported vs original)", got[name], value,
                entry["tolerance"])


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["name"]) for e in MANIFEST["models"]])
def test_exported_o2_runs_in_onnxruntime(entry, tmp_path):
    exported, custom = export(entry, tmp_path, "-O2")
    expected = KEPT_CUSTOM.get(entry["name"], {}).get("ops", [])
    assert custom == expected, f"{entry['name']}: ops kept in the onnxc domain: {custom}"
    print(f"{entry['name']}: custom ops {custom or 'none'}")
    if custom:
        pytest.skip(f"keeps {custom}: {KEPT_CUSTOM[entry['name']]['reason']}")
    check_runs_like_original(entry, exported)


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["name"]) for e in MANIFEST["models"]])
def test_exported_o0_round_trips(entry, tmp_path):
    """The imported graph, unoptimized, written back: what every op's export computes."""
    exported, custom = export(entry, tmp_path, "-O0")
    assert custom == []
    check_runs_like_original(entry, exported)


@pytest.mark.parametrize("entry", [pytest.param(e, id=e["name"]) for e in MANIFEST["models"]])
def test_dot_has_a_cluster_per_layer(entry):
    """The -O2 picture joins every edge to a drawn node and, where the exporter's node names
    number the layers (`/layers.3/...`, `/h.0/...`), has one cluster per layer index."""
    result = subprocess.run([onnxc_binary(), "dump", model_path(entry), "-O2", "--format=dot"],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    declared, edges, clusters = parse_dot(result.stdout)
    dangling = [e for e in edges if e[0] not in declared or e[1] not in declared]
    assert not dangling, f"edges to undeclared nodes: {dangling[:3]}"
    # Layer indices the node names carry, as the clusters should show them.
    names = re.findall(r'loc\("([^"]*)"\)', subprocess.run(
        [onnxc_binary(), "dump", model_path(entry), "-O2", "--print-node-names"],
        capture_output=True, text=True, timeout=600).stdout)
    layers = {m.group(0).strip("/") for n in names for m in [re.search(r"/[^/]*[._]\d+/", n)] if m}
    labels = {label for label, _ in clusters}
    missing = [layer for layer in layers if not any(label.endswith(layer) for label in labels)]
    assert not missing, f"layers without a cluster: {sorted(missing)[:5]} (clusters {sorted(labels)})"
