"""The wheel as a user gets it: scripts/build_wheel.sh, then `pip install onnxc-*.whl` into a fresh
venv (no --system-site-packages) with --no-deps plus its one pinned dependency, numpy, on a path
with no build tree and with LD_LIBRARY_PATH empty; then the README's quick start, the `onnxc`
command, `python -m onnxc`, onnxc.__version__, and a model compiled to a .so and run.

The wheel links the static archives this build already compiled (ONNXC_PREBUILT_LIBRARIES, set by
ctest: --reuse-build), so it costs a link and auditwheel, not a second compile of the compiler.
Nothing is downloaded: numpy comes from the wheelhouse scripts/setup.sh fills beside the venv
(.venv/wheelhouse), and the results are checked against onnxruntime in this process, so the
fresh venv holds only what the wheel asks for."""

import glob
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import onnxruntime as ort

REPO = os.environ.get("ONNXC_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The README's quick start (its python-quickstart block) less onnxruntime, which the wheel does not
# install: the outputs go to .npy files that the test compares with onnxruntime's.
QUICKSTART = textwrap.dedent("""
    import os, sys, tempfile
    import numpy as np, onnxc

    assert onnxc.__file__.startswith(sys.prefix), onnxc.__file__
    print("version", onnxc.__version__)
    model = onnxc.compile("tiny_bert.onnx")
    feeds = {"input_ids": np.array([[5, 17, 42, 9]]), "attention_mask": np.ones((1, 4), np.int64)}
    (hidden,) = model.run(None, feeds)
    np.save("jit.npy", hidden)
    print([i.name for i in model.inputs])
    print(onnxc.explain("tiny_bert.onnx"))

    # The tokenizers' library from the package, with the libraries auditwheel put beside it.
    from onnxc import _tokenizer
    assert _tokenizer._find_library().startswith(os.path.dirname(onnxc.__file__))
    _tokenizer._lib()

    # A library too, linked in process with no compiler on PATH, against the runtime archive the
    # wheel put beside the module: with that one broken, the compile must fail naming it.
    os.environ["PATH"] = tempfile.mkdtemp()
    (from_library,) = onnxc.compile("tiny_bert.onnx", output="py.so").run(None, feeds)
    np.save("library.npy", from_library)
    archive = os.path.join(os.path.dirname(onnxc.__file__), "lib", "libonnxc_runtime.a")
    saved = open(archive, "rb").read()
    with open(archive, "w") as f:
        f.write("not an archive")
    try:
        onnxc.compile("tiny_bert.onnx", output="broken.so")
        raise AssertionError("compiled against a broken runtime archive")
    except onnxc.Error as error:
        assert archive in str(error), error
    finally:
        with open(archive, "wb") as f:
            f.write(saved)
""")

# The .so that the `onnxc compile` command wrote, run from the fresh venv.
RUN_LIBRARY = textwrap.dedent("""
    import numpy as np, onnxc
    feeds = {"input_ids": np.array([[5, 17, 42, 9]]), "attention_mask": np.ones((1, 4), np.int64)}
    (out,) = onnxc.load("cli.so").run(None, feeds)
    np.save("cli.npy", out)
""")


def pinned(name):
    """The version scripts/requirements.txt pins for a package."""
    with open(os.path.join(REPO, "scripts", "requirements.txt")) as f:
        for line in f:
            if line.startswith(name + "=="):
                return line.split("==")[1].strip()
    raise AssertionError(f"scripts/requirements.txt pins no {name}")


def project_version():
    with open(os.path.join(REPO, "pyproject.toml")) as f:
        return re.search(r'^version = "([^"]+)"$', f.read(), re.M).group(1)


def run(args, **kwargs):
    result = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{args} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


def build_wheel(work):
    """scripts/build_wheel.sh with this build's archives; returns the wheel's path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_PRELOAD")}
    env["PYTHON"] = sys.executable
    env["ONNXC_WHEEL_BUILD_DIR"] = os.path.join(work, "wheel-build")
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    start = time.monotonic()
    result = run(["bash", os.path.join(REPO, "scripts", "build_wheel.sh"), os.path.join(work, "dist")],
                 env=env)
    print(f"\nbuild_wheel.sh took {time.monotonic() - start:.0f} s")
    print("\n".join(line for line in result.stderr.splitlines() if line.startswith("build_wheel.sh")))
    wheel = result.stdout.strip().splitlines()[-1]
    assert re.search(r"onnxc-[^-]+-cp\d+-cp\d+-manylinux_2_\d+_x86_64\.whl$", wheel), wheel
    return wheel


def fresh_venv(root, wheel):
    """A venv of its own with numpy (from the local wheelhouse) and the wheel, both --no-deps."""
    venv = os.path.join(root, "venv")
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = os.path.join(venv, "bin", "python")
    # Fresh: the packages of this process (onnxruntime, torch) are not visible in it.
    assert subprocess.run([python, "-c", "import onnxruntime"], capture_output=True).returncode != 0
    wheelhouse = os.path.join(sys.prefix, "wheelhouse")
    numpy = f"numpy=={pinned('numpy')}"
    if not glob.glob(os.path.join(wheelhouse, f"numpy-{pinned('numpy')}-*.whl")):
        raise AssertionError(f"{wheelhouse} holds no {numpy} wheel: run scripts/setup.sh, which caches it")
    # The test venv's pip installs into the fresh one (--python): no pip bootstrap, no network.
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
           "--disable-pip-version-check", "-q"]
    run(pip + ["--find-links", wheelhouse, numpy])
    start = time.monotonic()
    run(pip + [wheel])
    print(f"pip install of the wheel took {time.monotonic() - start:.1f} s "
          f"({os.path.getsize(wheel) / 2**20:.0f} MB)")
    return venv


def test_wheel_in_a_fresh_venv(tiny_bert, tmp_path):
    work = os.environ.get("ONNXC_PYTHON_TEST_DIR") or str(tmp_path)
    wheel = build_wheel(work)
    venv = fresh_venv(str(tmp_path), wheel)
    python, onnxc = os.path.join(venv, "bin", "python"), os.path.join(venv, "bin", "onnxc")

    # The user's folder: the model, nothing of the build tree, no library path.
    user = tmp_path / "user"
    user.mkdir()
    with open(tiny_bert, "rb") as src, open(user / "tiny_bert.onnx", "wb") as dst:
        dst.write(src.read())
    env = {"PATH": f"{venv}/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LD_LIBRARY_PATH": "",
           "PYTHONDONTWRITEBYTECODE": "1"}
    in_user = dict(env=env, cwd=str(user))

    version = project_version()
    assert run([onnxc, "--version"], **in_user).stdout.startswith(f"onnxc {version}\n")
    assert "USAGE: onnxc SUBCOMMAND" in run([python, "-m", "onnxc", "--help"], **in_user).stdout
    # The tool's exit statuses and one-line errors: 2 for a usage mistake, 1 for a bad model.
    usage = subprocess.run([onnxc, "frobnicate"], capture_output=True, text=True, **in_user)
    assert usage.returncode == 2 and usage.stderr.startswith("error: unknown subcommand"), usage
    missing = subprocess.run([python, "-m", "onnxc", "inspect", "missing.onnx"], capture_output=True,
                             text=True, **in_user)
    assert missing.returncode == 1 and missing.stderr.startswith("error: ") \
        and "missing.onnx" in missing.stderr and missing.stderr.count("\n") == 1, missing

    assert_ctrl_c_ends_the_command(onnxc, in_user)

    quickstart = run([python, "-c", QUICKSTART], **in_user)
    assert f"version {version}\n" in quickstart.stdout, quickstart.stdout
    run([onnxc, "compile", "tiny_bert.onnx", "-o", "cli.so"], **in_user)
    assert os.path.exists(user / "cli.h")
    run([python, "-c", RUN_LIBRARY], **in_user)

    feeds = {"input_ids": np.array([[5, 17, 42, 9]]), "attention_mask": np.ones((1, 4), np.int64)}
    (want,) = ort.InferenceSession(tiny_bert, providers=["CPUExecutionProvider"]).run(None, feeds)
    for name in ("jit", "library", "cli"):
        np.testing.assert_allclose(np.load(user / f"{name}.npy"), want, rtol=1e-4, atol=1e-5,
                                   err_msg=name)

    # What the installed module loads: no libLLVM, nothing unresolved, nothing from a build tree.
    (module,) = glob.glob(os.path.join(venv, "lib", "python*", "site-packages", "onnxc", "_onnxc*.so"))
    ldd = run(["ldd", module], env=env).stdout
    assert "libLLVM" not in ldd and "not found" not in ldd, ldd
    assert REPO not in ldd and "/build" not in ldd, ldd


def signal_caught(pid, number):
    """Whether the process has a handler of its own for the signal (/proc/PID/status, SigCgt)."""
    with open(f"/proc/{pid}/status") as f:
        caught = next(line for line in f if line.startswith("SigCgt:")).split()[1]
    return bool(int(caught, 16) >> (number - 1) & 1)


def assert_ctrl_c_ends_the_command(onnxc, in_user):
    """Ctrl-C ends the console command at once, as it ends the executable: killed by SIGINT, not a
    KeyboardInterrupt raised after the C++ call returns. The signal goes once the command has
    handed SIGINT back to its default (python/onnxc/_cli.py), which is when it runs the tool."""
    bench = subprocess.Popen([onnxc, "bench", "tiny_bert.onnx", "--time", "30", "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **in_user)
    try:
        while bench.poll() is None and signal_caught(bench.pid, signal.SIGINT):
            time.sleep(0.05)
        bench.send_signal(signal.SIGINT)
        out, err = bench.communicate(timeout=60)
    finally:
        bench.kill()
    assert bench.returncode == -signal.SIGINT, (bench.returncode, out, err)
    assert "KeyboardInterrupt" not in err and out == "", (out, err)
