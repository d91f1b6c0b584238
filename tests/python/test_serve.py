"""onnxc.serve: the server from Python (python/onnxc/_serve.py) on the README's tiny BERT, served as
an encoder: it starts on a free port and says where, the API key reaches it through the environment,
its embeddings are the mean-pooled, normalized outputs Model.run gives, a model it cannot serve
raises onnxc.Error with the server's message, and stop() ends the process."""

import json
import urllib.error
import urllib.request

import numpy as np
import pytest

import onnxc


def request(url, body=None, key=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    data = json.dumps(body).encode() if body is not None else None
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers), timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_serve_embeddings_key_and_stop(tiny_bert):
    ids = [[1, 7, 42, 9, 2], [1, 5, 2]]
    with onnxc.serve(tiny_bert, port=0, api_key="s3cret", threads=1) as server:
        assert server.url.startswith("http://127.0.0.1:") and server.base_url == server.url + "/v1"
        assert request(server.url + "/health")[0] == 200
        assert request(server.url + "/v1/models")[0] == 401
        status, models = request(server.url + "/v1/models", key="s3cret")
        assert status == 200 and [m["id"] for m in models["data"]] == ["tiny_bert"]
        status, answer = request(server.base_url + "/embeddings", {"model": "tiny_bert", "input": ids}, key="s3cret")
        assert status == 200, answer
        model = onnxc.compile(tiny_bert, threads=1)
        for item, row in zip(answer["data"], ids):
            feed = {name: np.array([row if name == "input_ids" else [1 if "mask" in name else 0] * len(row)],
                                   np.int64) for name in (i.name for i in model.inputs)}
            states = model.run(None, feed)[0][0]
            pooled = states.mean(axis=0)
            np.testing.assert_allclose(item["embedding"], pooled / np.linalg.norm(pooled), rtol=1e-5, atol=1e-6)
        assert server.stop() == 0
        assert not server.running()


def test_serve_refuses_in_one_line(tmp_path):
    missing = tmp_path / "missing.so"
    with pytest.raises(onnxc.Error, match="missing.so"):
        onnxc.serve(missing, port=0)
    with pytest.raises(TypeError, match="at least one model"):
        onnxc.serve()
    with pytest.raises(ValueError, match="max_batch"):
        onnxc.serve(missing, max_batch=0)


def test_server_ends_with_its_parent(tiny_bert):
    """A server outlives no parent, however the parent ends: here SIGKILL, which runs no cleanup
    (a Ray replica's actor killed; onnxc.ray_serve relies on this)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    code = ("import onnxc, sys, time; s = onnxc.serve(sys.argv[1], port=0, threads=1); "
            "print(s.process.pid, flush=True); time.sleep(120)")
    parent = subprocess.Popen([sys.executable, "-c", code, tiny_bert], stdout=subprocess.PIPE, text=True)
    try:
        child = int(parent.stdout.readline())
        assert os.path.exists(f"/proc/{child}")
    finally:
        parent.kill()
        parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{child}/stat") as f:
                # A zombie (state Z) has ended: init reaps it once its parent is gone.
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        time.sleep(0.1)
    os.kill(child, signal.SIGKILL)
    raise AssertionError("the server kept running after its parent was killed")
