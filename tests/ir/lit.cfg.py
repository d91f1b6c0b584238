# lit configuration of the IR text tests: `onnxc`, `FileCheck` and `not` are
# on PATH for RUN lines; %s is the .ir file, %t a scratch path.
import os

import lit.formats

config.name = "onnxc-ir"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".ir"]
# The tests are in one subfolder per purpose (attention/, cleanup/, ...),
# mirroring passes/. Inputs/ holds the second files of tests (models, C
# programs), not tests.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]

if not hasattr(config, "onnxc_tools_dir"):
    lit_config.fatal("run the IR tests from the build folder (ctest, or lit on <build>/tests/ir)")

config.test_source_root = config.onnxc_test_source_dir
config.test_exec_root = config.onnxc_test_build_dir

# Each ctest entry runs a lit of its own, and each lit rewrites the whole
# .lit_test_times.txt when it ends: two ending at once can leave a cut line,
# which every later lit then fails to read (a traceback, not a test result).
# The file only orders tests, so a damaged one is dropped before lit reads it.
_times = os.path.join(config.test_exec_root, ".lit_test_times.txt")
try:
    with open(_times) as _file:
        _damaged = any(len(_line.split(maxsplit=1)) != 2 for _line in _file if _line.strip())
    if _damaged:
        os.remove(_times)
except OSError:
    pass
config.environment["PATH"] = os.pathsep.join(
    [config.onnxc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
)

# %python runs helper scripts that need numpy: the repository's venv (made by
# scripts/setup.sh) when present, else the interpreter running lit.
import sys

repo = os.path.dirname(os.path.dirname(config.onnxc_test_source_dir))
venv_python = os.path.join(repo, ".venv", "bin", "python")
config.substitutions.append(("%python", venv_python if os.path.exists(venv_python) else sys.executable))
config.substitutions.append(("%repo", repo))
# %inputs: the second files of tests (Inputs/), from a test in any subfolder.
config.substitutions.append(("%inputs", os.path.join(config.onnxc_test_source_dir, "Inputs")))
# %sanitize_cflags: a C program linking a model.so of a sanitized build needs
# the sanitizers' runtimes that library was linked against.
sanitize = getattr(config, "onnxc_sanitize", "")
config.substitutions.append(
    ("%sanitize_cflags", f"-fsanitize={sanitize} -fno-sanitize-recover=all" if sanitize else ""))
# A process that is not itself sanitized (Python) cannot dlopen a sanitized build's model.so:
# `%if !sanitized %{ ... %}` leaves such a RUN line out there.
if sanitize:
    config.available_features.add("sanitized")
# %onnxc_version: the version CMake's project() gives, which --version prints.
config.substitutions.append(("%onnxc_version", getattr(config, "onnxc_version", "")))
