"""Command-line mistakes and missing inputs (issue 13, items 4 and 6).

A forgotten input is an error naming it, in `onnxc run` (every backend, .onnx, .ir and .so)
and in the runtime's C API (too few inputs, a NULL data pointer, fewer bytes than the dims
need); `--shape` stays the way to ask for generated values, and `onnxc bench` generates the
inputs it is not given. The messages name what the user did: a folder where a model belongs,
an .npy given as the model, an -o into a folder that does not exist (not an internal temporary
file), options that cannot apply to a compiled .so (refused, exit 2, rather than ignored);
--print-ir-after-all stays off stdout when stdout is not where the IR goes.

run_bad_inputs.py calls cases(...); the models are written here, as text IR.
"""

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Optional

import numpy as np

REPO = Path(__file__).resolve().parents[2]

MASKED_IR = """graph @masked(%input_ids: i64[batch, seq], %attention_mask: i64[batch, seq]) -> (%y: i64[batch, seq]) {
  %y = Mul(%input_ids, %attention_mask)
  return %y
}
"""

# Runs masked.so through the C API in one of four ways; a failed run prints
# the session's error as one `error:` line and exits 1.
C_API_PROGRAM = r"""
#include "masked.h"
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "ok";
  int64_t ids[10], mask[10];
  for (int i = 0; i < 10; ++i) {
    ids[i] = i;
    mask[i] = i % 2;
  }
  onnxc_tensor inputs[2] = {{ids, ONNXC_I64, 2, {2, 5}, sizeof ids},
                            {mask, ONNXC_I64, 2, {2, 5}, sizeof mask}};
  onnxc_tensor output = {0};
  int32_t count = 2;
  if (strcmp(mode, "missing") == 0)
    count = 1;
  else if (strcmp(mode, "null") == 0)
    inputs[1].data = NULL;
  else if (strcmp(mode, "short") == 0)
    inputs[1].size_bytes = sizeof mask - 8;
  onnxc_session *session = onnxc_session_create(onnxc_model_masked(), 1);
  if (!session) {
    fprintf(stderr, "error: %s\n", onnxc_last_error());
    return 1;
  }
  int failed = onnxc_session_run(session, inputs, count, &output, 1) != 0;
  if (failed)
    fprintf(stderr, "error: %s\n", onnxc_session_error(session));
  else
    printf("y[9] = %lld\n", (long long)((const int64_t *)output.data)[9]);
  onnxc_session_destroy(session);
  return failed;
}
"""


def cases(onnxc: str, out: Path, scratch: Path, Case, error_line_problem) -> list:
    folder = Path(tempfile.mkdtemp(prefix="cli_", dir=scratch))
    model = folder / "masked.ir"
    model.write_text(MASKED_IR)
    ids = folder / "ids.npy"
    np.save(ids, np.arange(10, dtype=np.int64).reshape(2, 5))
    library = folder / "masked.so"
    built = subprocess.run([onnxc, "compile", str(model), "-o", str(library)],
                           capture_output=True, text=True, timeout=120)
    if built.returncode != 0:
        return [Case("compile masked.ir for the command-line cases", ["false"], mode="custom",
                     check=lambda r: f"compile failed: {built.stderr.strip()[:200]!r}")]

    def error(label, argv, names=(), keywords=(), code=1, absent=(), strip=()) -> "Case":
        """One `error:` line with `names` and `keywords`, exit `code`, none of `absent`."""
        expected = Case("", [], list(names), list(keywords), strip=list(strip))

        def check(result) -> Optional[str]:
            if result.code != code:
                return f"exit code {result.code}, expected {code}: {result.stderr.strip()[:200]!r}"
            problem = error_line_problem(expected, result)
            if problem:
                return problem
            for pattern in absent:
                if re.search(pattern, result.stderr, re.IGNORECASE):
                    return f"error line says {pattern!r}: {result.stderr.strip()[:200]!r}"
            return None
        return Case(label, [str(a) for a in argv], mode="custom", check=check)

    def succeeds(label, argv, check: Optional[Callable] = None) -> "Case":
        def judge(result) -> Optional[str]:
            if result.code != 0:
                return f"exit code {result.code}, expected 0: {result.stderr.strip()[:200]!r}"
            return check(result) if check else None
        return Case(label, [str(a) for a in argv], mode="custom", check=judge)

    found = missing_input_cases(onnxc, folder, model, library, ids, error, succeeds)
    found += c_api_cases(folder, library, error, succeeds)
    found += stale_message_cases(onnxc, folder, model, library, ids, error, succeeds)
    return found


def missing_input_cases(onnxc, folder, model, library, ids, error, succeeds) -> list:
    given = ["--input", f"input_ids={ids}"]
    found = []
    for label, target, backend in (("jit", model, []), ("ref", model, ["--backend=ref"]),
                                   ("so", library, [])):
        found.append(error(f"run masked ({label}) without attention_mask",
                           [onnxc, "run", target, *given, *backend], ["'attention_mask'"],
                           [r"not given", r"--shape attention_mask=2x5"],
                           strip=[str(ids), str(target)]))
        found.append(error(f"run masked ({label}) without any input",
                           [onnxc, "run", target, *backend],
                           ["'input_ids'", "'attention_mask'"], [r"not given"],
                           strip=[str(target)]))
        found.append(succeeds(f"run masked ({label}) with attention_mask asked for by --shape "
                              "(control)",
                              [onnxc, "run", target, *given, "--shape", "attention_mask=2x5",
                               *backend]))
    # bench's contract: one --shape sizes every input, the rest are generated.
    for label, target in (("jit", model), ("so", library)):
        found.append(succeeds(f"bench masked ({label}) generates the inputs not given",
                              [onnxc, "bench", target, "--shape", "input_ids=2x5", "--iters",
                               "1", "--warmup", "1"]))
    return found


def c_api_cases(folder, library, error, succeeds) -> list:
    compiler = shutil.which("cc")
    if not compiler:
        return []
    source, program = folder / "c_api.c", folder / "c_api"
    source.write_text(C_API_PROGRAM)
    sanitize = os.environ.get("ONNXC_SANITIZE", "")
    flags = [f"-fsanitize={sanitize}", "-fno-sanitize-recover=all"] if sanitize else []
    built = subprocess.run([compiler, "-std=c11", "-Wall", "-Werror", *flags,
                            f"-I{REPO / 'runtime' / 'include'}", f"-I{folder}", str(source),
                            str(library), f"-Wl,-rpath,{folder}", "-o", str(program)],
                           capture_output=True, text=True)
    if built.returncode != 0:
        return [error("build the C API program", ["false"], ["cc failed: " + built.stderr[:200]])]
    return [succeeds("C API: both inputs (control)", [program, "ok"],
                     lambda r: None if "y[9] = 9" in r.stdout else f"stdout {r.stdout!r}"),
            error("C API: one input of two", [program, "missing"],
                  ["'attention_mask' is missing"], [r"2 inputs", r"1 was given"]),
            error("C API: NULL data", [program, "null"], ["input 'attention_mask'"],
                  [r"NULL"]),
            error("C API: fewer bytes than the dims need", [program, "short"],
                  ["input 'attention_mask'"], [r"size_bytes is 72", r"needs 80"])]


def print_ir_off_stdout(output: Path) -> Callable:
    def check(result) -> Optional[str]:
        if result.stdout.strip():
            return f"stdout is not empty: {result.stdout[:200]!r}"
        if "IR after" not in result.stderr:
            return f"no IR dumps on stderr: {result.stderr[:200]!r}"
        text = output.read_text() if output.exists() else ""
        if not text.startswith("graph @") or "IR after" in text:
            return f"{output.name} is not just the final IR: {text[:200]!r}"
        return None
    return check


def compile_stdout_is_one_line(result) -> Optional[str]:
    lines = result.stdout.splitlines()
    if len(lines) != 1 or not lines[0].startswith("compiled "):
        return f"stdout is not the one 'compiled' line: {result.stdout[:300]!r}"
    return None if "IR after" in result.stderr else f"no IR dumps on stderr: {result.stderr[:200]!r}"


def onnxc_h_names_the_accessor(result) -> Optional[str]:
    text = (REPO / "runtime" / "include" / "onnxc" / "onnxc.h").read_text()
    if "<model>_descriptor" in text:
        return "onnxc.h still tells users to call <model>_descriptor()"
    return None if "onnxc_model_<name>()" in text else "onnxc.h does not name onnxc_model_<name>()"


def stale_message_cases(onnxc, folder, model, library, ids, error, succeeds) -> list:
    directory = folder / "folder.onnx"
    directory.mkdir()
    found = []
    for command in (["run"], ["dump"], ["compile", "-o", folder / "d.so"], ["bench"],
                    ["inspect"]):
        found.append(error(f"{command[0]} a directory", [onnxc, command[0], directory,
                                                         *command[1:]],
                           [str(directory)], [r"is a directory"], absent=[r"no such file"],
                           strip=[str(directory)]))
    found.append(error("run --input x=a directory", [onnxc, "run", model, "--input",
                                                      f"input_ids={directory}", "--shape",
                                                      "attention_mask=2x5"],
                       ["'input_ids'", str(directory)], [r"is a directory"],
                       strip=[str(directory)]))
    found.append(error("dump masked.so", [onnxc, "dump", library], ["masked.so"],
                       [r"no graph", r"\.onnx or \.ir"], absent=[r"later issue"],
                       strip=[str(library)]))
    for command in ("run", "bench"):
        found.append(error(f"{command} ids.npy (an input given as the model)",
                           [onnxc, command, ids], [str(ids)], [r"\.so", r"--input"],
                           absent=[r"expected \.onnx or \.ir\)"], strip=[str(ids)]))
    found.append(error("dump ids.npy", [onnxc, "dump", ids], [str(ids)], [r"\.onnx or \.ir"],
                       strip=[str(ids)]))

    nowhere = folder / "no_such_dir"
    for label, argv, option in (
            ("compile -o into a missing folder",
             ["compile", model, "-o", nowhere / "m.so"], "-o"),
            ("compile --header into a missing folder",
             ["compile", model, "-o", folder / "h.so", "--header", nowhere / "m.h"], "--header"),
            ("compile --emit=obj -o into a missing folder",
             ["compile", model, "--emit=obj", "-o", nowhere / "m.o"], "-o"),
            ("dump -o into a missing folder", ["dump", model, "-o", nowhere / "m.ir"], "-o")):
        found.append(error(label, [onnxc, *argv], [option, str(nowhere)], [r"does not exist"],
                           absent=[r"\.tmp", r"internal"]))
    found.append(error("compile -o a directory", [onnxc, "compile", model, "-o", folder],
                       ["-o", str(folder)], [r"is a directory"], absent=[r"\.tmp"]))

    for options, shown in ((["-O0"], ["-O0"]), (["--stats"], ["--stats"]),
                           (["-O2", "--mcpu=x86-64", "--print-ir-after-all"],
                            ["-O2", "--mcpu=x86-64", "--print-ir-after-all"])):
        for command in ("run", "bench"):
            found.append(error(f"{command} masked.so {' '.join(options)}",
                               [onnxc, command, library, "--shape", "input_ids=2x5", "--shape",
                                "attention_mask=2x5", *options],
                               shown, [r"already compiled", r"onnxc compile"], code=2,
                               strip=[str(library)]))

    dumped = folder / "dumped.ir"
    found.append(succeeds("dump -o FILE --print-ir-after-all: the dumps go to stderr",
                          [onnxc, "dump", model, "-O1", "--print-ir-after-all", "-o", dumped],
                          print_ir_off_stdout(dumped)))
    found.append(succeeds("compile --print-ir-after-all: stdout keeps its one line",
                          [onnxc, "compile", model, "-o", folder / "printed.so",
                           "--print-ir-after-all"], compile_stdout_is_one_line))
    found.append(succeeds("onnxc.h names the accessor the header declares", ["true"],
                          onnxc_h_names_the_accessor))
    return found
