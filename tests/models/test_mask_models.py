"""The shape-only masks of tests/models/mask_models.py at -O2: each Attention carries exactly the
mask attributes the proof establishes for every length (window, is_causal), or keeps the mask as
an operand, with the reason `--explain` gives. (The numbers are checked against onnxruntime at
lengths below, at and above each mask's width by test_models.py, through ref, jit and so.)

    ONNXC=build/tools/onnxc ONNXC_MODEL_DIR=build/models .venv/bin/python -m pytest tests/models/test_mask_models.py
"""

import os
import re
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mask_models  # noqa: E402
from test_models import MANIFEST, model_path, onnxc_binary  # noqa: E402

ENTRIES = [pytest.param(entry, id=entry["name"]) for entry in MANIFEST["models"]
           if entry["name"] in mask_models.EXPECTED_ATTENTION]


def attribute(line: str, name: str):
    found = re.search(rf"\b{name} = (-?\d+)", line)
    return int(found.group(1)) if found else None


def test_every_mask_model_is_in_the_manifest():
    assert {e.values[0]["name"] for e in ENTRIES} == set(mask_models.EXPECTED_ATTENTION)


@pytest.mark.parametrize("entry", ENTRIES)
def test_mask_attributes(entry, tmp_path):
    onnxc = onnxc_binary()
    expected = mask_models.EXPECTED_ATTENTION[entry["name"]]
    out = tmp_path / "fused.ir"
    result = subprocess.run([onnxc, "dump", model_path(entry), "-O2", "--explain", "-o", str(out)],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    lines = [line for line in out.read_text().splitlines() if "= Attention(" in line]
    assert len(lines) == expected["count"], "\n".join(lines)
    for line in lines:
        operands = line.split("Attention(", 1)[1].split(")", 1)[0].split(",")
        found = {name: attribute(line, name) for name in expected["attributes"]}
        assert found == expected["attributes"], line
        assert (len(operands) == 4) == (expected["operand"] is not None), line
        assert ("mask_fill = " in line) == expected.get("mask_fill", False), line
    if expected["operand"]:
        assert f"stays an operand: {expected['operand']}" in result.stderr, result.stderr
    else:
        assert "stays an operand" not in result.stderr, result.stderr
