"""onnxc.serve: the OpenAI-compatible server (`onnxc serve`, docs/SERVE.md) from Python.

The server runs as its own process, the package's command line (`python -m onnxc serve`): its
scheduler threads and sessions never wait on this interpreter's GIL, a crash of either side leaves
the other standing, and nothing is imported beyond the standard library.

    import onnxc
    with onnxc.serve("models/tiny-llama", port=0) as server:     # port 0: any free port
        print(server.url)                                          # http://127.0.0.1:41234
        ...                                                        # any OpenAI client at server.url + "/v1"
"""

import os
import queue
import re
import subprocess
import sys
import threading

from . import _onnxc

_LISTENING = re.compile(r"listening on (http://\S+)")


class Server:
    """A running `onnxc serve` process. `url` is its address ("http://127.0.0.1:PORT"); `stop()`
    ends it (SIGTERM: the requests under way end with an error) and `wait()` waits for it to end.
    As a context manager it stops on exit."""

    def __init__(self, process, url, log, parent_pipe):
        self.process = process
        self.url = url
        self._log = log
        # The write end of the pipe the server watches (see serve()): closed when it has stopped.
        self._parent_pipe = parent_pipe

    @property
    def base_url(self):
        """The OpenAI clients' base_url: url + "/v1"."""
        return self.url + "/v1"

    def running(self):
        return self.process.poll() is None

    def stop(self, timeout=30):
        """Stops the server and returns its exit status."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._close_pipe()
        return self.process.returncode

    def _close_pipe(self):
        if self._parent_pipe is not None:
            os.close(self._parent_pipe)
            self._parent_pipe = None

    def wait(self, timeout=None):
        """Waits for the server to end (Ctrl-C stops it) and returns its exit status."""
        try:
            return self.process.wait(timeout=timeout)
        except KeyboardInterrupt:
            return self.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def __repr__(self):
        return f"<onnxc.Server {self.url} {'running' if self.running() else 'stopped'}>"


def _option(value, name, kind=int, minimum=0):
    value = kind(value)
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return str(value)


def _arguments(models, host, port, tokenizer, chat_template, max_batch, max_queue, max_prompt_tokens,
               max_total_tokens, timeout, threads, log_prompts):
    if not models:
        raise TypeError("serve() needs at least one model: a folder, a model.so or an .onnx file")
    paths = []
    for model in models:
        path = os.fspath(model)
        paths.append(os.fsdecode(path) if isinstance(path, bytes) else path)
    args = [*paths, "--host", str(host), "--port", _option(port, "port"),
            "--max-batch", _option(max_batch, "max_batch", minimum=1), "--max-queue", _option(max_queue, "max_queue"),
            "--max-prompt-tokens", _option(max_prompt_tokens, "max_prompt_tokens", minimum=1),
            "--max-total-tokens", _option(max_total_tokens, "max_total_tokens", minimum=2),
            "--timeout", _option(timeout, "timeout", float), "--threads", _option(threads, "threads")]
    if tokenizer is not None:
        args += ["--tokenizer", os.fspath(tokenizer)]
    if chat_template is not None:
        args += ["--chat-template", os.fspath(chat_template)]
    if log_prompts:
        args.append("--log-prompts")
    return args


def serve(*models, host="127.0.0.1", port=8000, api_key=None, tokenizer=None, chat_template=None, max_batch=8,
          max_queue=64, max_prompt_tokens=1024, max_total_tokens=2048, timeout=300, threads=0, log_prompts=False,
          block=False, startup_timeout=600):
    """Starts `onnxc serve` on `models` (folders, model.so or .onnx files; docs/SERVE.md) and returns a
    Server once it listens. The options are the command's (`port=0` picks a free port: see
    `Server.url`). `api_key` (default: $ONNXC_API_KEY) is handed over in the environment, not on the
    command line where other users could read it. `block=True` serves until Ctrl-C instead of
    returning. A server that cannot start raises onnxc.Error with its message.

    The server ends with this process, however it ends: stopped, exited, or killed (a Ray replica's
    actor killed with SIGKILL; onnxc.ray_serve), so no server outlives the process that owns it."""
    args = _arguments(models, host, port, tokenizer, chat_template, max_batch, max_queue, max_prompt_tokens,
                      max_total_tokens, timeout, threads, log_prompts)
    env = dict(os.environ)
    if api_key is not None:
        env["ONNXC_API_KEY"] = str(api_key)
    # The child watches the read end of a pipe whose only writer is this process: at end of file,
    # when this process has closed it or died, the child stops itself (python/onnxc/_cli.py). A
    # signal on the parent's death (PR_SET_PDEATHSIG) would fire when the thread that started the
    # child ends, and Ray runs a replica's constructor on a pool thread.
    watch_read, watch_write = os.pipe()
    env["ONNXC_SERVE_PARENT_PIPE"] = str(watch_read)
    try:
        process = subprocess.Popen([sys.executable, "-m", "onnxc", "serve", *args], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env,
                                   pass_fds=(watch_read,))
    except BaseException:
        os.close(watch_write)
        raise
    finally:
        os.close(watch_read)
    lines = queue.Queue()
    log = []

    def forward_stderr():
        # The server's messages still reach this process's stderr; the last ones explain a failure.
        for line in process.stderr:
            log.append(line)
            del log[:-20]
            sys.stderr.write(line)

    def read_stdout():
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=forward_stderr, daemon=True).start()
    threading.Thread(target=read_stdout, daemon=True).start()
    server = Server(process, None, log, watch_write)
    try:
        while True:
            line = lines.get(timeout=startup_timeout)
            if line is None:
                process.wait()
                server._close_pipe()
                message = "".join(log).strip().splitlines()
                raise _onnxc.Error(message[-1].removeprefix("error: ") if message else
                                   f"onnxc serve exited with status {process.returncode} before listening")
            match = _LISTENING.search(line)
            if match:
                break
    except queue.Empty:
        process.kill()
        process.wait()
        server._close_pipe()
        raise _onnxc.Error(f"onnxc serve did not listen within {startup_timeout} s") from None
    server.url = match.group(1)
    if block:
        server.wait()
    return server
