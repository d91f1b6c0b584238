"""Install onnxc into a temporary prefix, move the prefix, and use it from there as a user would
(issue 13, item 2):

1. `cmake --install BUILD --prefix P`, then P is renamed, so nothing baked at build time can point
   into it. The compiler must take the prefix's runtime archive, not the build tree's (which it
   would find too): with the prefix's archive broken, the compile fails naming it.
2. From the moved prefix, `onnxc compile tiny.onnx -o tiny.so` with PATH stripped of every C/C++
   compiler driver (an empty folder and nothing else): the link runs lld inside onnxc. The same
   with ONNXC_LINKER=driver fails with one line naming the missing driver.
3. A fresh C program is compiled with `cc` against the installed include/ only, linked with
   tiny.so, run, and its output compared with numpy's relu(x . W + b).
4. A CMake project uses find_package(onnxc) (compiling the model with onnxc::onnxc at build time);
   pkg-config --cflags onnxc builds the program too, and pkg-config --libs links a model object
   (`--emit=obj`) with the installed runtime archive.

Usage: relocate.py BUILD_DIR (the test's cwd is a scratch folder; everything is made under it).
"""

import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH, IN, OUT = 3, 4, 3


def run(command, **kwargs):
    """Runs `command`, failing the test with its output when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        sys.exit(f"FAILED: {' '.join(command)}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def weights():
    rng = np.random.default_rng(13)
    return (rng.standard_normal((IN, OUT)).astype(np.float32),
            rng.standard_normal(OUT).astype(np.float32))


def write_tiny_model(path):
    """y = relu(x . W + b), x: f32[batch, 4]."""
    w, b = weights()
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "W"], ["xw"]),
         helper.make_node("Add", ["xw", "b"], ["pre"]),
         helper.make_node("Relu", ["pre"], ["y"])],
        "tiny_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", IN])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", OUT])],
        initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)


def expected_output():
    w, b = weights()
    x = (np.arange(BATCH * IN, dtype=np.float32) * 0.25 - 1.0).reshape(BATCH, IN)
    return np.maximum(x @ w + b, 0.0)


def check_program_output(stdout, what):
    got = np.array([float(line) for line in stdout.split()], dtype=np.float32).reshape(BATCH, OUT)
    np.testing.assert_allclose(got, expected_output(), rtol=1e-5, atol=1e-6, err_msg=what)


def no_compiler_env(scratch):
    """The environment with PATH holding only an empty folder: no c++, g++, clang++ or cc."""
    empty = os.path.join(scratch, "empty-bin")
    os.makedirs(empty, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("CXX", "ONNXC_CXX", "ONNXC_LINKER", "CC")}
    env["PATH"] = empty
    return env


def main():
    build = os.path.abspath(sys.argv[1])
    scratch = tempfile.mkdtemp(prefix="onnxc-install-", dir=os.getcwd())
    try:
        installed = os.path.join(scratch, "prefix")
        run(["cmake", "--install", build, "--prefix", installed])
        moved = os.path.join(scratch, "moved-prefix")
        os.rename(installed, moved)
        for relative in ("bin/onnxc", "lib/libonnxc_runtime.a", "include/onnxc/onnxc.h",
                         "include/onnxc/model_abi.h", "lib/cmake/onnxc/onnxcConfig.cmake",
                         "lib/cmake/onnxc/onnxcConfigVersion.cmake", "lib/pkgconfig/onnxc.pc",
                         "lib/libonnxc_text.so", "include/onnxc/onnxc_tokenizer.h"):
            assert os.path.exists(os.path.join(moved, relative)), f"not installed: {relative}"
        # Only onnxc's files: not the Python module, not the tests.
        assert not os.path.exists(os.path.join(moved, "onnxc")), os.listdir(moved)

        model = os.path.join(scratch, "tiny.onnx")
        write_tiny_model(model)
        out = os.path.join(scratch, "out")
        os.makedirs(out)
        onnxc = os.path.join(moved, "bin", "onnxc")
        env = no_compiler_env(scratch)
        run([onnxc, "compile", model, "-o", os.path.join(out, "tiny.so")], env=env, cwd=out)
        # The archive linked is the moved prefix's (not the build tree's, which still exists): with
        # it unreadable as an archive, the link fails naming it.
        archive = os.path.join(moved, "lib", "libonnxc_runtime.a")
        os.rename(archive, archive + ".saved")
        with open(archive, "w") as f:
            f.write("not an archive\n")
        broken = subprocess.run([onnxc, "compile", model, "-o", os.path.join(out, "broken.so")],
                                capture_output=True, text=True, cwd=out, env=env)
        os.replace(archive + ".saved", archive)
        assert broken.returncode == 1 and archive in broken.stderr, broken.stderr
        # The moved tool finds the tokenizers' library beside it (RPATH $ORIGIN/../lib).
        vocab = '{"model": {"type": "WordLevel", "vocab": {"hi": 0, "there": 1}, "unk_token": "hi"}, ' \
                '"pre_tokenizer": {"type": "WhitespaceSplit"}}'
        with open(os.path.join(scratch, "tokenizer.json"), "w") as f:
            f.write(vocab)
        tokenized = subprocess.run([onnxc, "tokenize", scratch, "--text", "there hi you"],
                                   capture_output=True, text=True, env=env)
        assert tokenized.returncode == 0 and tokenized.stdout == "1,0,0\n", tokenized
        header = open(os.path.join(out, "tiny.h")).read()
        includes = [line for line in header.splitlines() if line.startswith("#include")]
        assert includes == ['#include "onnxc/onnxc.h"'], includes

        # The driver asked for and absent: one line naming what is missing.
        refused = subprocess.run([onnxc, "compile", model, "-o", os.path.join(out, "other.so")],
                                 capture_output=True, text=True, cwd=out,
                                 env=dict(env, ONNXC_LINKER="driver"))
        assert refused.returncode == 1, refused
        assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1, refused.stderr
        assert "no C++ compiler driver found" in refused.stderr, refused.stderr
        assert not os.path.exists(os.path.join(out, "other.so"))

        # A fresh C program: the installed headers and the generated one, nothing else.
        program = os.path.join(out, "consumer")
        run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-I" + os.path.join(moved, "include"),
             "-I" + out, os.path.join(HERE, "consumer.c"), os.path.join(out, "tiny.so"),
             "-Wl,-rpath," + out, "-o", program])
        check_program_output(run([program], cwd="/").stdout, "C program against the moved prefix")
        needed = run(["readelf", "-d", os.path.join(out, "tiny.so")]).stdout
        print("tiny.so needs:", " ".join(line.split()[-1] for line in needed.splitlines()
                                         if "(NEEDED)" in line))

        # pkg-config, relative to the .pc file: still right after the move.
        pc_env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(moved, "lib", "pkgconfig"))
        cflags = run(["pkg-config", "--cflags", "onnxc"], env=pc_env).stdout.split()
        assert os.path.realpath(cflags[0][2:]) == os.path.realpath(os.path.join(moved, "include")), cflags
        pc_program = os.path.join(out, "consumer-pc")
        run(["cc", "-std=c11", *cflags, "-I" + out, os.path.join(HERE, "consumer.c"),
             os.path.join(out, "tiny.so"), "-Wl,-rpath," + out, "-o", pc_program])
        check_program_output(run([pc_program]).stdout, "C program built with pkg-config's flags")

        # pkg-config --libs: the runtime archive, for a model object linked into a program directly.
        run([onnxc, "compile", model, "-o", os.path.join(out, "tiny_object.o"), "--emit=obj",
             "--name", "tiny"], env=env)
        libs = run(["pkg-config", "--libs", "onnxc"], env=pc_env).stdout.split()
        object_program = os.path.join(out, "consumer-object")
        run(["cc", "-std=c11", *cflags, "-I" + out, os.path.join(HERE, "consumer.c"),
             os.path.join(out, "tiny_object.o"), *libs, "-o", object_program])
        check_program_output(run([object_program]).stdout, "model object + pkg-config --libs")

        # find_package(onnxc) from a CMake project of its own.
        project = os.path.join(scratch, "consumer-project")
        os.makedirs(project)
        shutil.copy(os.path.join(HERE, "CMakeLists.consumer.txt"), os.path.join(project, "CMakeLists.txt"))
        shutil.copy(os.path.join(HERE, "consumer.c"), project)
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        run(["cmake", *generator, "-S", project, "-B", os.path.join(project, "build"),
             "-DCMAKE_PREFIX_PATH=" + moved, "-DMODEL=" + model, "-DEXPECTED_PREFIX=" + moved])
        run(["cmake", "--build", os.path.join(project, "build")])
        check_program_output(run([os.path.join(project, "build", "consumer")]).stdout,
                             "find_package(onnxc) project")
        print("installed, moved, compiled without a C++ compiler, linked and ran: ok")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
