"""onnxc.ray_serve (python/onnxc/ray_serve.py) on a local Ray cluster of two nodes, one CPU each, on
this machine (ray.cluster_utils.Cluster), with two replicas of tests/models' random-weight GPT-2
with its cache (hf_gpt2_past, vocabulary 384), compiled once into a model folder with a byte-level
BPE tokenizer written here. Runs in build/ray-venv (setup_ray_venv.sh), the build's module on
PYTHONPATH.

Checks, through Ray's HTTP proxy and the pinned openai client: greedy completions and a streamed
chat give the text Model.generate gives alone; a bad request, a wrong key and an unknown model get
the local server's 400, 401 and 404 bodies. Then the faults: one replica's actor is killed
(ray.kill) while clients keep streaming completions; every request that was not in flight on the
killed replica succeeds with the right text, Ray brings a replica back, and the killed replica's
server process ends with it. Last, one replica's server process is killed: the health check marks
the replica unhealthy and Ray replaces it. Every wait is bounded; the cluster is shut down at the end.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import httpx
import openai
import pytest

# Before Ray is imported: no usage report (no network here), and every node of the cluster on
# loopback. Ray's switch for single-machine clusters makes it take 127.0.0.1 as each node's address
# (and connect there) instead of this machine's interface address: no traffic leaves loopback.
os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
import ray  # noqa: E402
from ray import serve  # noqa: E402
from ray.cluster_utils import Cluster  # noqa: E402

import onnxc  # noqa: E402
import onnxc.ray_serve  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
ONNXC = os.environ.get("ONNXC")
KEY = "ray-test-key"
MODEL = "decoder"
APP = "onnxc-test"
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")
PROMPTS = ["the quick brown fox", "hello world", "once upon a time there was a compiler"]
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "hello", "world", "once", "upon", "time",
         "there", "was", "compiler", "that", "served", "many", "clients", "at", "models", "is", "fun"]
VOCAB = 384
# Every wait on Ray is bounded by this many seconds.
DEADLINE_S = 90


def byte_alphabet():
    """GPT-2's byte-level alphabet: each byte as a printable character (printable Latin-1 bytes as
    themselves, the others moved past 255 in order)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = 0
    alphabet = []
    for byte in range(256):
        if byte in printable:
            alphabet.append(chr(byte))
        else:
            alphabet.append(chr(256 + extra))
            extra += 1
    return alphabet


def write_tokenizer(path):
    """A byte-level BPE tokenizer.json of VOCAB entries: the 256 bytes, merges that spell WORDS
    (each with its leading space, as GPT-2's do), and <|endoftext|> last."""
    alphabet = byte_alphabet()
    vocab = {char: i for i, char in enumerate(alphabet)}
    merges = []
    space = alphabet[ord(" ")]
    for word in WORDS:
        token = space
        for char in word:
            merged = token + char
            if merged not in vocab and len(vocab) < VOCAB - 1:
                merges.append(f"{token} {char}")
                vocab[merged] = len(vocab)
            token = merged
    eos = len(vocab)
    vocab["<|endoftext|>"] = eos
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": eos, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}],
        "normalizer": None, "pre_tokenizer": byte_level, "post_processor": None, "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "vocab": vocab,
                  "merges": merges},
    }
    with open(path, "w") as f:
        json.dump(tokenizer, f)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """The model folder every replica serves: model.so, tokenizer.json, tokenizer_config.json."""
    if not ONNXC:
        pytest.fail("ONNXC must name the onnxc tool (ctest sets it)")
    source = os.path.join(MODEL_DIR, "hf_gpt2_past_op17.onnx")
    if not os.path.exists(source):
        pytest.fail(f"{source} is not built (ctest -R models/build)")
    path = tmp_path_factory.mktemp("ray") / MODEL
    path.mkdir()
    subprocess.run([ONNXC, "compile", source, "-o", str(path / "model.so")], check=True, capture_output=True,
                   timeout=600)
    write_tokenizer(path / "tokenizer.json")
    with open(path / "tokenizer_config.json", "w") as f:
        json.dump({"chat_template": CHAT_TEMPLATE}, f)
    return str(path)


@pytest.fixture(scope="module")
def reference(folder):
    """Greedy text of the same folder alone, in this process (Model.generate)."""
    model = onnxc.load(folder, threads=1)
    return lambda prompt, tokens: model.generate(prompt, max_new_tokens=tokens, add_special_tokens=False)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, condition, deadline_s=DEADLINE_S, detail=None):
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        value = condition()
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"{what}: not within {deadline_s} s" + (f" ({detail()})" if detail else ""))


def replica_actors():
    """The replicas' actor names (Ray Serve names each replica actor; no dashboard needed)."""
    return sorted(a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                  if a["namespace"] == "serve" and a["name"].startswith(f"SERVE_REPLICA::{APP}#"))


def servers(folder):
    """pid -> command line of every `onnxc serve` process serving this test's folder."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                args = f.read().decode(errors="replace").split("\0")
        except OSError:
            continue
        if "onnxc" in args and "serve" in args and folder in args:
            found[int(entry)] = args
    return found


def actor_state(name):
    """The state of the actor of this name in Ray's actor table ("ALIVE", "DEAD", ...), or None."""
    states = [a["State"] for a in ray._private.state.actors().values() if a.get("Name") == name]
    return states[-1] if states else None


def running_replicas():
    status = serve.status().applications.get(APP)
    if status is None or str(status.status) not in ("RUNNING", "ApplicationStatus.RUNNING"):
        return 0
    deployment = status.deployments["onnxc"]
    return deployment.replica_states.get("RUNNING", 0) if str(deployment.status).endswith("HEALTHY") else 0


@pytest.fixture(scope="module")
def cluster(folder):
    node = {"num_cpus": 1, "object_store_memory": 80 << 20}
    nodes = Cluster(initialize_head=True, head_node_args=dict(node, include_dashboard=False))
    try:
        nodes.add_node(**node)
        ray.init(address=nodes.address, log_to_driver=False)
        assert nodes.address.startswith("127.0.0.1:"), nodes.address
        port = free_port()
        # One proxy: on one machine the nodes' proxies would share the port.
        serve.start(proxy_location="HeadOnly", http_options={"host": "127.0.0.1", "port": port})
        # One CPU per replica and per node: Ray places one replica on each node. Two rows each: Ray's
        # proxy sends a replica no more (max_ongoing_requests), so 4 clients reach both nodes.
        application = onnxc.ray_serve.app(folder, num_replicas=2, num_cpus=1, api_key=KEY, max_total_tokens=256,
                                          max_prompt_tokens=64, max_batch=2, health_check_period_s=1,
                                          health_check_timeout_s=10)
        serve.run(application, name=APP, route_prefix="/")
        yield f"http://127.0.0.1:{port}"
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()
            nodes.shutdown()


def client(url, key=KEY):
    return openai.OpenAI(base_url=url + "/v1", api_key=key, max_retries=0, timeout=60)


def test_two_replicas_on_two_nodes(cluster, folder):
    assert len(replica_actors()) == 2
    nodes = {a["Address"]["NodeID"] for a in ray._private.state.actors().values()
             if a["Name"] in replica_actors() and a["State"] == "ALIVE"}
    assert len(nodes) == 2, "the two replicas should be on the two nodes (one CPU each)"
    assert len(servers(folder)) == 2


def test_completions_match_generate(cluster, reference):
    answers = set()
    for prompt in PROMPTS * 2:
        raw = client(cluster).completions.with_raw_response.create(model=MODEL, prompt=prompt, max_tokens=12,
                                                                   temperature=0)
        answers.add(raw.headers.get(onnxc.ray_serve.REPLICA_HEADER))
        completion = raw.parse()
        assert completion.choices[0].text == reference(prompt, 12), prompt
        assert completion.usage.completion_tokens == 12
    assert None not in answers and len(answers) >= 1


def test_streamed_chat_matches_generate(cluster, reference):
    messages = [{"role": "user", "content": "hello world"}]
    pieces, finish = [], None
    for chunk in client(cluster).chat.completions.create(model=MODEL, messages=messages, max_tokens=10,
                                                         temperature=0, stream=True):
        if chunk.choices:
            pieces.append(chunk.choices[0].delta.content or "")
            finish = chunk.choices[0].finish_reason or finish
    assert "".join(pieces) == reference("<|user|>hello world\n<|assistant|>", 10)
    assert finish == "length"
    streamed = "".join(c.choices[0].text for c in client(cluster).completions.create(
        model=MODEL, prompt=PROMPTS[0], max_tokens=8, temperature=0, stream=True))
    assert streamed == reference(PROMPTS[0], 8)


def test_errors_pass_through(cluster):
    with pytest.raises(openai.BadRequestError) as bad:
        client(cluster).completions.create(model=MODEL, prompt="hello", max_tokens=0)
    assert bad.value.status_code == 400 and bad.value.body["param"] == "max_tokens", bad.value.body
    with pytest.raises(openai.AuthenticationError) as unauthorized:
        client(cluster, key="wrong").completions.create(model=MODEL, prompt="hello", max_tokens=2)
    assert unauthorized.value.status_code == 401
    with pytest.raises(openai.NotFoundError) as missing:
        client(cluster).completions.create(model="no-such-model", prompt="hello", max_tokens=2)
    assert missing.value.body["code"] == "model_not_found", missing.value.body
    health = httpx.get(cluster + "/health", timeout=30)
    assert health.status_code == 200 and health.json() == {"status": "ok"}


def stream_completion(url, prompt, tokens):
    """One streamed completion over HTTP: (replica that answered or None, text, error or None)."""
    body = {"model": MODEL, "prompt": prompt, "max_tokens": tokens, "temperature": 0, "stream": True}
    replica, text = None, []
    try:
        with httpx.stream("POST", url + "/v1/completions", json=body, timeout=60,
                          headers={"Authorization": f"Bearer {KEY}"}) as answer:
            replica = answer.headers.get(onnxc.ray_serve.REPLICA_HEADER)
            if answer.status_code != 200:
                return replica, "", f"status {answer.status_code}: {answer.read()[:300]!r}"
            done = False
            for line in answer.iter_lines():
                if line == "data: [DONE]":
                    done = True
                elif line.startswith("data: "):
                    text.append(json.loads(line[6:])["choices"][0]["text"])
            if not done:
                return replica, "".join(text), "the stream ended without [DONE]"
    except httpx.HTTPError as error:
        return replica, "".join(text), repr(error)
    return replica, "".join(text), None


def test_killed_replica_loses_only_its_requests(cluster, folder, reference):
    before = replica_actors()
    assert len(before) == 2
    victim = before[0]
    victim_id = victim.rsplit("#", 1)[1]
    expected = {prompt: reference(prompt, 24) for prompt in PROMPTS}
    results, stop = [], threading.Event()

    def client_loop(index):
        # Bounded in count and time: at most 200 requests, and it stops when told.
        for count in range(200):
            if stop.is_set():
                return
            prompt = PROMPTS[(index + count) % len(PROMPTS)]
            start = time.monotonic()
            replica, text, error = stream_completion(cluster, prompt, 24)
            results.append((start, time.monotonic(), replica, prompt, text, error))

    clients = [threading.Thread(target=client_loop, args=(i,)) for i in range(4)]
    for thread in clients:
        thread.start()
    try:
        wait_for("requests on both replicas before the kill",
                 lambda: len({r[2] for r in results if r[2]}) == 2, 30, detail=lambda: results[-4:])
        killed_at = time.monotonic()
        ray.kill(ray.get_actor(victim, namespace="serve"))
        # ray.kill returns before the actor is gone: requests routed to it until then were in flight on it.
        wait_for("the killed actor to die", lambda: victim not in replica_actors() or actor_state(victim) == "DEAD")
        dead_at = time.monotonic()
        answered_after = lambda: [r for r in results if r[0] > dead_at and r[5] is None]  # noqa: E731
        wait_for("requests answered after the kill", lambda: len(answered_after()) >= 12, 30)
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in clients)

    for start, end, replica, prompt, text, error in results:
        if error is None:
            assert text == expected[prompt], (replica, prompt)
            continue
        # A failure must be a request in flight on the killed replica: answered by it (its header),
        # or sent before the kill and never answered.
        in_flight = start < dead_at and end > killed_at and replica in (victim_id, None)
        assert in_flight, f"lost a request not in flight on the killed replica: {replica} {error}"
    failed = [r for r in results if r[5] is not None]
    assert len(failed) <= len(clients), failed
    on_victim = sum(1 for r in results if r[2] == victim_id)
    print(f"\nkilled replica {victim_id}: {len(results)} requests, {on_victim} answered by it, {len(failed)} "
          f"lost in flight on it ({', '.join(sorted({r[5][:60] for r in failed}))}), "
          f"{len(answered_after())} answered after it died")
    assert all(r[2] != victim_id for r in answered_after())

    # Ray replaces the replica (a new actor), and the killed one's server ended with it.
    wait_for("a new replica", lambda: len(replica_actors()) == 2 and victim not in replica_actors())
    wait_for("the application running with two replicas", lambda: running_replicas() == 2)
    wait_for("the killed replica's server to end", lambda: len(servers(folder)) == 2, 30)
    completion = client(cluster).completions.create(model=MODEL, prompt=PROMPTS[1], max_tokens=6, temperature=0)
    assert completion.choices[0].text == reference(PROMPTS[1], 6)


def test_dead_server_makes_replica_unhealthy(cluster, folder, reference):
    wait_for("two replicas", lambda: running_replicas() == 2)
    before_actors, before_servers = replica_actors(), servers(folder)
    assert len(before_servers) == 2
    victim = min(before_servers)
    os.kill(victim, signal.SIGKILL)
    # The health check (every second here) fails, and Ray replaces that replica with a new one.
    wait_for("the replica of the dead server replaced",
             lambda: len(replica_actors()) == 2 and len(set(replica_actors()) - set(before_actors)) == 1)
    wait_for("the application running with two replicas", lambda: running_replicas() == 2)
    after = wait_for("two servers again", lambda: servers(folder) if len(servers(folder)) == 2 else None, 30)
    assert victim not in after
    completion = client(cluster).completions.create(model=MODEL, prompt=PROMPTS[2], max_tokens=6, temperature=0)
    assert completion.choices[0].text == reference(PROMPTS[2], 6)


def test_import_onnxc_leaves_ray_out():
    code = "import sys, onnxc; print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_app_builder_arguments(folder):
    built = onnxc.ray_serve.app_builder({"model": folder, "min_replicas": "1", "max_replicas": "3",
                                         "max_batch": "4", "num_cpus": "1"})
    assert isinstance(built, serve.Application)
    with pytest.raises(ValueError, match="needs model=PATH"):
        onnxc.ray_serve.app_builder({})
    with pytest.raises(ValueError, match="unknown argument.*replicas"):
        onnxc.ray_serve.app_builder({"model": folder, "replicas": "2"})
    with pytest.raises(ValueError, match="max_batch='many' is not a number"):
        onnxc.ray_serve.app_builder({"model": folder, "max_batch": "many"})
    with pytest.raises(ValueError, match="num_replicas or autoscaling"):
        onnxc.ray_serve.app(folder, num_replicas=2, autoscaling=True)
