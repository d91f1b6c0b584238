"""`pip install .` of the repository into a fresh venv, then onnxc used from a fresh process outside
the repository: what a user gets. The venv is made with --system-site-packages (as the README
says), and sees the test process's packages too (scikit-build-core, nanobind, numpy, onnxruntime,
pinned in scripts/requirements.txt), so the install needs no network: --no-build-isolation uses
them as the build requirements. The wheel's build folder lives in the ctest build tree, so a second
run is incremental. With ONNXC_PREBUILT_LIBRARIES (set by ctest: the build's own export file) the
wheel imports the compiler libraries the suite already built and compiles only the module; without
it, it compiles the libraries the module needs, as a user's `pip install .` does."""

import os
import subprocess
import sys
import textwrap
import time

REPO = os.environ.get("ONNXC_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CHECK = textwrap.dedent("""
    import sys
    import numpy as np
    import onnxruntime as ort
    import onnxc
    assert onnxc.__file__.startswith(sys.prefix), onnxc.__file__
    model = onnxc.compile(sys.argv[1])
    rng = np.random.default_rng(0)
    feeds = {"input_ids": rng.integers(0, 100, size=(2, 8), dtype=np.int64),
             "attention_mask": np.ones((2, 8), dtype=np.int64)}
    (got,) = model.run(None, feeds)
    (want,) = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)

    # A library too, with no compiler on PATH (lld in process), against the runtime archive the
    # wheel installed beside the module, not the build folder's: with that one broken, it fails.
    import os, tempfile
    os.environ["PATH"] = tempfile.mkdtemp()
    library = os.path.join(tempfile.mkdtemp(), "tiny.so")
    (from_library,) = onnxc.compile(sys.argv[1], output=library).run(None, feeds)
    np.testing.assert_allclose(from_library, want, rtol=1e-4, atol=1e-5)
    archive = os.path.join(os.path.dirname(onnxc.__file__), "lib", "libonnxc_runtime.a")
    with open(archive, "w") as f:
        f.write("not an archive")
    try:
        onnxc.compile(sys.argv[1], output=library + ".2.so")
        raise AssertionError("compiled against a broken runtime archive")
    except onnxc.Error as error:
        assert archive in str(error), error
    print("ok", [i.name for i in model.inputs], got.shape)
""")


def test_pip_install_then_use(tiny_bert, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    # The packages this process sees (its venv's, and what that venv's own .pth files add), but
    # not PYTHONPATH's build tree.
    visible = [p for p in sys.path if p.endswith(("site-packages", "dist-packages")) and os.path.isdir(p)]
    with open(os.path.join(purelib, "onnxc_test_parent.pth"), "w") as f:
        f.write("".join(p + "\n" for p in visible))

    work = os.environ.get("ONNXC_PYTHON_TEST_DIR") or str(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    start = time.monotonic()
    settings = ["--config-settings=build-dir=" + os.path.join(work, "wheel-build")]
    if os.environ.get("ONNXC_PREBUILT_LIBRARIES"):
        settings.append("--config-settings=cmake.define.ONNXC_PREBUILT_LIBRARIES="
                        + os.environ["ONNXC_PREBUILT_LIBRARIES"])
    subprocess.run([python, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "-q",
                    *settings, REPO], check=True, env=env, cwd=str(tmp_path))
    print(f"\npip install . took {time.monotonic() - start:.0f} s")

    # A fresh process, outside the repository, without the build tree on its path.
    result = subprocess.run([python, "-c", CHECK, tiny_bert], capture_output=True, text=True,
                            env=env, cwd=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok ['input_ids', 'attention_mask'] (2, 8, 32)"), result.stdout
