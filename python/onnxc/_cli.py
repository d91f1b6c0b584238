"""The `onnxc` command of the wheel (its console script) and `python -m onnxc`: the command line of
tools/onnxc, linked into the extension module (onnxc._onnxc.main), so the package carries one copy
of the compiler and the command is the same tool as the build's `onnxc` executable."""

import os
import signal
import sys
import threading

from . import _onnxc


def main(argv=None):
    """Runs `onnxc ARGS...` (argv defaults to sys.argv) and exits with its status."""
    args = sys.argv[1:] if argv is None else list(argv)
    # The process is the tool's now: signals act as they do on the executable. Ctrl-C ends it
    # (Python's handler would only raise KeyboardInterrupt after the C++ call returns), and a
    # closed pipe (`onnxc dump m.onnx | head`) ends it quietly, where Python ignores SIGPIPE.
    for name in ("SIGINT", "SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    # What Python buffered goes out before the tool writes to the same descriptors.
    sys.stdout.flush()
    sys.stderr.flush()
    _stop_with_parent()
    status = _onnxc.main(["onnxc", *args])
    sys.exit(status)


def _stop_with_parent():
    """Under onnxc.serve (python/onnxc/_serve.py): stops this process (SIGTERM, the server's orderly
    stop) when the parent's end of the pipe named by ONNXC_SERVE_PARENT_PIPE closes, which happens
    however the parent ends. The tool runs without the GIL, so this thread can wait beside it."""
    fd = os.environ.pop("ONNXC_SERVE_PARENT_PIPE", None)
    if fd is None:
        return

    def watch():
        try:
            os.read(int(fd), 1)
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="onnxc-parent-watch", daemon=True).start()
