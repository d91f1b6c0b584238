"""onnxc serve on loopback, through the openai client (pinned in scripts/requirements.txt).

The decoder is tests/models' random-weight LLaMA with its cache and position ids (hf_llama_past,
vocabulary 384), compiled once, with a byte-level BPE tokenizer trained here on a few sentences
(tokenizers, offline); the encoder is hf_bert, served for /v1/embeddings. Checks: completions
(whole and streamed) give what `onnxc generate` gives alone; chat completions are the completions
of the prompt the chat template renders (against jinja2); concurrent requests (threads, prompts
of different lengths joining one running batch) each get the tokens they get alone; a full queue
answers 429 at once; no key 401; malformed requests 400 naming the field; a client that hangs up
frees its row; /metrics parses; /v1/models; embeddings against numpy on onnxruntime's outputs.
"""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODEL_DIR = os.path.abspath(os.environ.get("ONNXC_MODEL_DIR") or os.path.join(REPO, "build", "models"))
ONNXC = os.environ.get("ONNXC")
KEY = "test-key-123"
# A chat template of the usual shape (roles in markers, then the assistant's turn), for /v1/chat.
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")

openai = pytest.importorskip("openai")
httpx = pytest.importorskip("httpx")
pytestmark = pytest.mark.skipif(not ONNXC, reason="ONNXC (the onnxc binary) is not set")


def compile_model(name, folder):
    path = os.path.join(MODEL_DIR, f"{name}.onnx")
    if not os.path.exists(path):
        pytest.skip(f"{path} is not built (ctest -R models/build)")
    os.makedirs(folder, exist_ok=True)
    library = os.path.join(folder, "model.so")
    subprocess.run([ONNXC, "compile", path, "-o", library], check=True, capture_output=True, timeout=600)
    return library


def train_tokenizer(path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=380, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    corpus = ["the quick brown fox jumps over the lazy dog", "hello world, serving models is fun",
              "once upon a time there was a compiler that served many clients at once"] * 20
    tokenizer.train_from_iterator(corpus, trainer)
    tokenizer.save(path)
    return tokenizer


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("serve")
    decoder = str(root / "decoder")
    compile_model("hf_llama_past_op17", decoder)
    tokenizer = train_tokenizer(os.path.join(decoder, "tokenizer.json"))
    with open(os.path.join(decoder, "tokenizer_config.json"), "w") as f:
        json.dump({"chat_template": CHAT_TEMPLATE}, f)
    encoder = str(root / "encoder")
    compile_model("hf_bert_op17", encoder)
    return {"decoder": decoder, "encoder": encoder, "tokenizer": tokenizer}


class Server:
    def __init__(self, *args, env=None):
        self.process = subprocess.Popen([ONNXC, "serve", *args, "--port", "0", "--threads", "1"],
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                        env=dict(os.environ, **(env or {})))
        line = self.process.stdout.readline()
        match = re.search(r"http://([\d.]+):(\d+)", line)
        if not match:
            self.process.kill()
            raise AssertionError("no address printed: " + line + self.process.stderr.read())
        self.url = f"http://{match.group(1)}:{match.group(2)}"

    def client(self, key=KEY, **kwargs):
        return openai.OpenAI(base_url=self.url + "/v1", api_key=key, max_retries=0, **kwargs)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise AssertionError("the server did not stop on SIGTERM within 10 s")
        # SIGTERM stops it in order (the listener's thread takes the signal): exit status 0.
        assert self.process.returncode == 0, self.process.stderr.read()


@pytest.fixture(scope="module")
def server(models):
    s = Server(models["decoder"], models["encoder"], "--api-key", KEY, "--max-batch", "4",
               "--max-prompt-tokens", "48", "--max-total-tokens", "96")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def narrow(models):
    """One row, one waiting request: the queue and the disconnect tests."""
    s = Server(models["decoder"], "--max-batch", "1", "--max-queue", "1", "--max-prompt-tokens", "16",
               "--max-total-tokens", "8192", env={"ONNXC_API_KEY": ""})
    yield s
    s.stop()


@pytest.fixture(scope="module")
def tight(models):
    """A short capacity (40 positions) under more clients than rows: rows join and leave all the
    time, and the shared sequence may reach the capacity (the generator then drops the padding all
    rows have; tests/unit's GeneratorJoin covers that step by step)."""
    s = Server(models["decoder"], "--max-batch", "3", "--max-prompt-tokens", "16", "--max-total-tokens", "40",
               env={"ONNXC_API_KEY": ""})
    yield s
    s.stop()


def generate_alone(models, ids, count):
    """`onnxc generate` (greedy) on the same library: the reference tokens."""
    out = subprocess.run([ONNXC, "generate", os.path.join(models["decoder"], "model.so"), "--prompt-ids",
                          ",".join(map(str, ids)), "--max-new-tokens", str(count), "--threads", "1"],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    return [int(t) for t in out.strip().split(",") if t]


PROMPTS = ["the quick brown fox", "hello", "once upon a time there was a compiler that served",
           "lazy dog jumps", "world, serving models is fun and the quick brown fox", "a"]


def test_models_health_and_auth(server):
    assert httpx.get(server.url + "/health").status_code == 200  # no key needed
    ids = sorted(model.id for model in server.client().models.list().data)
    assert ids == ["decoder", "encoder"]
    with pytest.raises(openai.AuthenticationError):
        server.client(key="wrong").models.list()
    response = httpx.post(server.url + "/v1/completions", json={"model": "decoder", "prompt": "hi"})
    assert response.status_code == 401
    assert response.json()["error"]["type"] == "authentication_error"


def test_completion_matches_generate_whole_and_streamed(server, models):
    tokenizer = models["tokenizer"]
    prompt = PROMPTS[0]
    ids = tokenizer.encode(prompt).ids
    want = tokenizer.decode(generate_alone(models, ids, 12))
    client = server.client()
    whole = client.completions.create(model="decoder", prompt=prompt, max_tokens=12, temperature=0)
    assert whole.choices[0].text == want
    assert whole.choices[0].finish_reason == "length"
    assert (whole.usage.prompt_tokens, whole.usage.completion_tokens) == (len(ids), 12)
    chunks = list(client.completions.create(model="decoder", prompt=prompt, max_tokens=12, temperature=0,
                                            stream=True))
    assert "".join(c.choices[0].text for c in chunks) == want
    assert chunks[-1].choices[0].finish_reason == "length"
    # The prompt as token ids gives the same.
    by_ids = client.completions.create(model="decoder", prompt=ids, max_tokens=12, temperature=0)
    assert by_ids.choices[0].text == want


def test_concurrent_requests_get_their_tokens_alone(server, models):
    client = server.client()
    lengths = [20, 9, 14, 24, 6, 17]

    def ask(i):
        return client.completions.create(model="decoder", prompt=PROMPTS[i], max_tokens=lengths[i],
                                          temperature=0).choices[0].text

    alone = [ask(i) for i in range(len(PROMPTS))]
    results = [None] * len(PROMPTS)

    def worker(i):
        results[i] = ask(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(PROMPTS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert results == alone
    tokenizer = models["tokenizer"]
    assert alone[1] == tokenizer.decode(generate_alone(models, tokenizer.encode(PROMPTS[1]).ids, 9))


def test_rows_joining_and_leaving_past_the_capacity_keep_their_tokens(server, tight):
    lengths = [20, 9, 14, 24, 6, 17]

    def ask(s, i, key=KEY):
        return s.client(key=key).completions.create(model="decoder", prompt=PROMPTS[i], max_tokens=lengths[i],
                                                    temperature=0).choices[0].text

    alone = [ask(server, i) for i in range(len(PROMPTS))]
    results = {}

    def worker(t):
        for round in range(3):
            i = (t + round) % len(PROMPTS)
            results[(t, round)] = (i, ask(tight, i, key="unused"))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 15
    for (i, text) in results.values():
        assert text == alone[i], i


def test_malformed_requests_are_400_naming_the_field(server):
    headers = {"Authorization": "Bearer " + KEY}
    url = server.url + "/v1/completions"

    def post(body, **kwargs):
        return httpx.post(url, headers=headers, content=body if isinstance(body, str) else json.dumps(body),
                          **kwargs)

    response = post('{"model": "decoder", "prompt": ')
    assert response.status_code == 400 and "not valid JSON" in response.json()["error"]["message"]
    for field, value in [("max_tokens", "ten"), ("temperature", "hot"), ("stream", 1), ("prompt", 3.5),
                         ("top_p", 2), ("n", 2), ("stop", 5)]:
        response = post({"model": "decoder", "prompt": "hi", field: value})
        assert response.status_code == 400, field
        error = response.json()["error"]
        assert error["param"] == field and field in error["message"], error
        assert error["type"] == "invalid_request_error"
    response = post({"model": "decoder", "prompt": "the " * 60})
    assert response.status_code == 400 and "--max-prompt-tokens" in response.json()["error"]["message"]
    response = post({"model": "decoder", "prompt": "hi", "max_tokens": 95})
    assert response.status_code == 400 and response.json()["error"]["param"] == "max_tokens"
    response = post({"model": "nope", "prompt": "hi"})
    assert response.status_code == 404 and response.json()["error"]["code"] == "model_not_found"
    response = post({"model": "decoder", "prompt": "x" * (2 << 20)})
    assert response.status_code == 413
    with pytest.raises(openai.BadRequestError) as raised:
        server.client().completions.create(model="decoder", prompt="hi", max_tokens=0)
    assert "max_tokens" in str(raised.value)
    for messages in [[], [{"role": "user"}], "hi"]:
        response = httpx.post(server.url + "/v1/chat/completions", headers=headers,
                              json={"model": "decoder", "messages": messages})
        assert response.status_code == 400 and response.json()["error"]["param"].startswith("messages")
    response = httpx.post(server.url + "/v1/chat/completions", headers=headers,
                          json={"model": "encoder", "messages": [{"role": "user", "content": "hi"}]})
    assert response.status_code == 400 and "encoder" in response.json()["error"]["message"]


def test_chat_is_the_completion_of_the_rendered_template(server):
    import jinja2
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "the quick brown fox"}]
    # transformers 4.40's apply_chat_template: jinja2 with trim_blocks and lstrip_blocks.
    prompt = jinja2.Environment(trim_blocks=True, lstrip_blocks=True).from_string(CHAT_TEMPLATE).render(
        messages=messages, add_generation_prompt=True)
    client = server.client()
    want = client.completions.create(model="decoder", prompt=prompt, max_tokens=10, temperature=0).choices[0].text
    chat = client.chat.completions.create(model="decoder", messages=messages, max_tokens=10, temperature=0)
    assert chat.object == "chat.completion"
    assert (chat.choices[0].message.role, chat.choices[0].message.content) == ("assistant", want)
    assert chat.choices[0].finish_reason == "length" and chat.usage.completion_tokens == 10
    chunks = list(client.chat.completions.create(model="decoder", messages=messages, max_tokens=10,
                                                 temperature=0, stream=True))
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == want
    assert chunks[-1].choices[0].finish_reason == "length"
    # Without max_tokens a chat may use what the limits leave after its prompt.
    rest = client.chat.completions.create(model="decoder", messages=messages, temperature=0)
    assert rest.usage.prompt_tokens + rest.usage.completion_tokens <= 96


def open_stream(url, max_tokens):
    """A streamed request on a raw socket; returns it once the first event arrived."""
    host, port = url.rsplit("//", 1)[1].split(":")
    body = json.dumps({"model": "decoder", "prompt": "the quick", "max_tokens": max_tokens,
                       "temperature": 0, "stream": True})
    sock = socket.create_connection((host, int(port)), timeout=30)
    sock.sendall((f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  f"Content-Length: {len(body)}\r\n\r\n{body}").encode())
    received = b""
    while b"data: " not in received:
        chunk = sock.recv(4096)
        assert chunk, "the stream closed before its first event"
        received += chunk
    return sock


def test_full_queue_is_429_at_once_and_a_gone_client_frees_its_row(narrow):
    # A long generation holds the one row (8000 tokens take seconds at this size).
    running = open_stream(narrow.url, 8000)
    answers = []
    waiting = threading.Thread(target=lambda: answers.append(httpx.post(
        narrow.url + "/v1/completions", json={"model": "decoder", "prompt": "a", "max_tokens": 2}, timeout=120)))
    waiting.start()
    deadline = time.monotonic() + 10
    while "onnxc_queue_depth 1" not in httpx.get(narrow.url + "/metrics").text:
        assert time.monotonic() < deadline, "the second request never queued"
        time.sleep(0.01)
    response = httpx.post(narrow.url + "/v1/completions", json={"model": "decoder", "prompt": "b"}, timeout=5)
    assert response.status_code == 429
    assert response.json()["error"]["code"] == "queue_full"
    # The streaming client hangs up: its row goes to the waiting request long before its
    # 8000 tokens would have been generated.
    running.close()
    waiting.join(timeout=60)
    assert not waiting.is_alive() and answers[0].status_code == 200
    metrics = httpx.get(narrow.url + "/metrics").text
    generated = int(re.search(r"^onnxc_generated_tokens_total (\d+)", metrics, re.M).group(1))
    assert generated < 6000, f"{generated} tokens: the hung-up stream kept its row"
    assert re.search(r"^onnxc_cancelled_total [1-9]", metrics, re.M)
    assert re.search(r"^onnxc_rejected_queue_full_total [1-9]", metrics, re.M)
    done = narrow.client(key="unused").completions.create(model="decoder", prompt="hello", max_tokens=3)
    assert done.usage.completion_tokens == 3


def test_metrics_parse(server):
    server.client().completions.create(model="decoder", prompt="hello", max_tokens=4, temperature=0)
    text = httpx.get(server.url + "/metrics", headers={"Authorization": "Bearer " + KEY}).text
    sample = re.compile(r'^[a-z_]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? -?[0-9.e+-]+$')
    values = {}
    for line in text.splitlines():
        if line.startswith("#"):
            assert re.match(r"^# (HELP|TYPE) [a-z_]+ ", line), line
            continue
        assert sample.match(line), line
        name, value = line.rsplit(" ", 1)
        values[name] = float(value)
    buckets = [v for k, v in values.items() if k.startswith("onnxc_time_to_first_token_seconds_bucket")]
    assert buckets == sorted(buckets) and buckets[-1] == values["onnxc_time_to_first_token_seconds_count"] > 0
    assert values["onnxc_generated_tokens_total"] >= 4
    assert values['onnxc_requests_total{endpoint="/v1/completions",status="200"}'] >= 1


def test_embeddings_match_onnxruntime(server):
    import onnxruntime as ort
    inputs = [[5, 17, 42, 99, 3], [7, 8]]
    response = server.client().embeddings.create(model="encoder", input=inputs)
    session = ort.InferenceSession(os.path.join(MODEL_DIR, "hf_bert_op17.onnx"), providers=["CPUExecutionProvider"])
    for item, ids in zip(response.data, inputs):
        feed = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, len(ids)), np.int64)}
        states = session.run(["last_hidden_state"], feed)[0][0]
        mask = feed["attention_mask"][0][:, None]
        pooled = (states * mask).sum(0) / mask.sum()
        want = pooled / max(np.linalg.norm(pooled), 1e-12)
        got = np.array(item.embedding, np.float32)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    assert response.usage.prompt_tokens == 7
    # The client asks for base64 by default; the float form gives the same numbers.
    floats = httpx.post(server.url + "/v1/embeddings", headers={"Authorization": "Bearer " + KEY},
                        json={"model": "encoder", "input": [inputs[0]], "encoding_format": "float"}).json()
    np.testing.assert_allclose(floats["data"][0]["embedding"], response.data[0].embedding, rtol=1e-6)
    with pytest.raises(openai.BadRequestError):
        server.client().embeddings.create(model="decoder", input=[[1, 2]])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
