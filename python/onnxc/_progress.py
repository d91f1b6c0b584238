"""Progress of onnxc.compile: the events the compiler reports, and the default tqdm bar."""

import collections
import contextlib
import sys

#: One step of a compile, as `compile(progress=...)` sees it. `stage` is one of "load", "passes",
#: "lower", "optimize", "codegen", "link", "done", in that order; `detail` says what within it (the
#: pass, the op lowered, LLVM's function, the file); `done` of `total` steps (`total` 0: not known
#: in advance, as for LLVM's optimizer); `bytes` the size written ("done" of a library, else 0).
CompileProgress = collections.namedtuple("CompileProgress", "stage detail done total bytes")


def _in_notebook():
    """Whether this runs in a Jupyter kernel (where tqdm.auto draws a widget)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except AttributeError:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class _TqdmBar:
    """One tqdm bar per stage, replaced when the stage changes and gone when the compile ends."""

    def __init__(self, tqdm):
        self._tqdm = tqdm
        self._bar = None
        self._stage = None

    def __call__(self, event):
        if event.stage == "done":
            self.close()
            return
        if event.stage != self._stage:
            self.close()
            self._stage = event.stage
            self._bar = self._tqdm(total=event.total or None, desc=f"onnxc {event.stage}",
                                   unit="step", leave=False, file=sys.stderr)
        if event.total and self._bar.total != event.total:
            self._bar.total = event.total
        self._bar.n = event.done
        self._bar.set_postfix_str(event.detail[:40], refresh=False)
        self._bar.refresh()

    def close(self):
        if self._bar is not None:
            self._bar.close()
        self._bar = None
        self._stage = None


def _default_progress():
    """A tqdm bar when tqdm is installed and someone is watching (a terminal or a notebook)."""
    notebook = _in_notebook()
    stderr_is_terminal = getattr(sys.stderr, "isatty", lambda: False)()
    if not (notebook or stderr_is_terminal):
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return _TqdmBar(tqdm)


@contextlib.contextmanager
def progress_reporter(progress):
    """What the compiler module calls at each step (stage, detail, done, total, bytes), or None,
    for compile's `progress` argument: None is the default bar, False nothing, else a callable
    taking a CompileProgress. A bar is closed however the compile ends."""
    if progress is False:
        yield None
        return
    if progress is None:
        progress = _default_progress()
        if progress is None:
            yield None
            return
    elif not callable(progress):
        raise TypeError(f"progress must be callable, None or False, got {type(progress).__name__}")

    def report(stage, detail, done, total, nbytes):
        progress(CompileProgress(stage, detail, done, total, nbytes))

    try:
        yield report
    finally:
        if isinstance(progress, _TqdmBar):
            progress.close()
