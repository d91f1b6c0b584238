"""Load test of `onnxc serve` on loopback: N concurrent streaming clients for a bounded time.

    .venv/bin/python benchmarks/serve/load.py [--clients 1,8] [--seconds 20] [--threads 2]

The model is benchmarks/generate/batch.py's GPT-2-small-sized decoder with position ids (random
weights, built into build/bench-models on first use), served with --threads, --max-batch rows and
--max-total-tokens 128 (prompts of at most 64 ids and 32 new tokens fit). Each client sends one streamed greedy completion after another (a prompt of
16 to 64 random ids, asking for a count of tokens drawn from --new-tokens, 16 to 48 by default) until
--seconds have passed; the run then stops by itself.
Every answer is checked: a 200 stream that ends with [DONE] and the tokens asked for, or a 429; any
other outcome is counted as lost. Printed per client count: requests, 429s, lost, aggregate tokens
per second, p50/p99 time to first token and p50/p99 time per later token, and the ratios of 8 clients
to 1 (issue 31's targets: 3x the tokens per second, at most 2x the first-token time). Then a
fault phase: clients that hang up mid-stream, malformed bodies and oversized ones; printed: whether
the server still answers, and its resident memory after the warm-up, after the load and after the
faults. Nothing is asserted: the machine is shared.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time

import httpx
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "benchmarks", "generate"))
sys.path.insert(0, os.path.join(REPO, "tests", "models"))


def percentile(values, q):
    return float(np.percentile(values, q)) if values else float("nan")


def client_loop(url, model, prompts, new_tokens, stop_at, stats, lock):
    """One client: streamed greedy completions back to back, each asking for a number of tokens drawn
    from the range `new_tokens` (low, high), until `stop_at`."""
    rng = np.random.default_rng(threading.get_ident() % 1000)
    with httpx.Client(timeout=120) as http:
        while time.monotonic() < stop_at:
            prompt = prompts[int(rng.integers(len(prompts)))]
            wanted = int(rng.integers(new_tokens[0], new_tokens[1] + 1))
            body = {"model": model, "prompt": prompt, "max_tokens": wanted, "temperature": 0, "stream": True}
            start = time.perf_counter()
            arrivals, done, status = [], False, None
            with http.stream("POST", url + "/v1/completions", json=body) as response:
                status = response.status_code
                if status == 200:
                    for line in response.iter_lines():
                        if line == "data: [DONE]":
                            done = True
                        elif line.startswith("data: "):
                            text = json.loads(line[6:])["choices"][0]["text"]
                            # No tokenizer: each token comes as " id".
                            arrivals.extend([time.perf_counter()] * len(text.split()))
            with lock:
                if status == 429:
                    stats["rejected"] += 1
                elif status == 200 and done and len(arrivals) == wanted:
                    stats["requests"] += 1
                    stats["tokens"] += len(arrivals)
                    stats["ttft"].append(arrivals[0] - start)
                    stats["per_token"].extend(np.diff(arrivals).tolist())
                else:
                    stats["lost"] += 1


def resident_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def faults(url, prompts):
    """Hung-up streams, malformed and oversized bodies; whether a normal request still succeeds."""
    import socket
    model = httpx.get(url + "/v1/models").json()["data"][0]["id"]
    host, port = url.rsplit("//", 1)[1].split(":")
    for i in range(40):
        body = json.dumps({"model": model, "prompt": prompts[i % len(prompts)], "max_tokens": 32, "stream": True})
        with socket.create_connection((host, int(port)), timeout=60) as sock:
            sock.sendall(f"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n\r\n{body}"
                         .encode())
            sock.recv(1)  # the response has begun: hang up
    with httpx.Client(timeout=60) as http:
        for i in range(40):
            http.post(url + "/v1/completions", content='{"model": "%s", "prompt": [1, 2' % model)
        for i in range(10):
            http.post(url + "/v1/completions", content=b"x" * (2 << 20))
        time.sleep(1)  # the cancelled rows leave at the scheduler's next steps
        answer = http.post(url + "/v1/completions", json={"model": model, "prompt": prompts[0], "max_tokens": 4})
    return answer.status_code == 200


def run_load(url, clients, seconds, prompts, new_tokens):
    model = httpx.get(url + "/v1/models").json()["data"][0]["id"]
    stats = {"requests": 0, "rejected": 0, "lost": 0, "tokens": 0, "ttft": [], "per_token": []}
    lock = threading.Lock()
    start = time.monotonic()
    threads = [threading.Thread(target=client_loop, args=(url, model, prompts, new_tokens, start + seconds, stats, lock))
               for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats["elapsed"] = time.monotonic() - start
    return stats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--onnxc", default=os.path.join(REPO, "build", "tools", "onnxc"))
    parser.add_argument("--models", default=os.path.join(REPO, "build", "bench-models"))
    parser.add_argument("--clients", default="1,8")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--new-tokens", default="16:48",
                        help="tokens each request asks for: N, or LOW:HIGH drawn per request (the default, "
                             "mean 32: clients that all ask for the same count finish and come back together, "
                             "a burst real traffic does not have)")
    parser.add_argument("--max-batch", type=int, default=8)
    args = parser.parse_args()
    counts = [int(c) for c in args.clients.split(",")]
    low, _, high = args.new_tokens.partition(":")
    new_tokens = (int(low), int(high or low))
    if not 1 <= new_tokens[0] <= new_tokens[1] <= 64:
        parser.error(f"--new-tokens {args.new_tokens}: want N or LOW:HIGH within 1..64 (the served --max-total-tokens "
                     "is 128 and prompts are up to 64 ids)")

    import batch
    model_path = batch.build_model(args.models)
    folder = os.path.join(args.models, "serve")
    os.makedirs(folder, exist_ok=True)
    library = os.path.join(folder, "model.so")
    if not os.path.exists(library) or os.path.getmtime(library) < os.path.getmtime(args.onnxc):
        subprocess.run([args.onnxc, "compile", model_path, "-o", library, "--logits=last"], check=True, capture_output=True)
    server = subprocess.Popen([args.onnxc, "serve", folder, "--port", "0", "--threads", str(args.threads),
                               "--max-batch", str(args.max_batch), "--max-queue", "256",
                               "--max-total-tokens", "128", "--max-prompt-tokens", "64"],
                              stdout=subprocess.PIPE, text=True)
    url = server.stdout.readline().strip().rsplit(" ", 1)[1]
    rng = np.random.default_rng(0)
    prompts = [rng.integers(0, 50000, int(n)).tolist() for n in rng.integers(16, 65, 32)]
    try:
        run_load(url, 1, 2, prompts, new_tokens)  # warm-up: the weights' pages, the plans
        memory = [("after the warm-up", resident_mib(server.pid))]
        results = {}
        for clients in counts:
            s = run_load(url, clients, args.seconds, prompts, new_tokens)
            results[clients] = s
            print(f"{clients:3d} clients, {s['elapsed']:.0f} s: {s['requests']} requests, {s['rejected']} 429, "
                  f"{s['lost']} lost; {s['tokens'] / s['elapsed']:7.1f} tokens/s; first token p50 "
                  f"{percentile(s['ttft'], 50) * 1e3:6.1f} ms p99 {percentile(s['ttft'], 99) * 1e3:6.1f} ms; "
                  f"per token p50 {percentile(s['per_token'], 50) * 1e3:6.2f} ms p99 "
                  f"{percentile(s['per_token'], 99) * 1e3:6.2f} ms", flush=True)
        memory.append(("after the load", resident_mib(server.pid)))
        answered = faults(url, prompts)
        memory.append(("after the faults", resident_mib(server.pid)))
        print(f"faults: 40 hung-up streams, 40 malformed and 10 oversized bodies; the server then answers: "
              f"{answered}; resident memory " + ", ".join(f"{when} {mib:.0f} MiB" for when, mib in memory))
        if 1 in results and len(results) > 1:
            one, most = results[1], results[max(counts)]
            rate = lambda s: s["tokens"] / s["elapsed"]
            print(f"{max(counts)} clients vs 1: {rate(most) / rate(one):.2f}x the tokens per second, "
                  f"{statistics.median(most['ttft']) / statistics.median(one['ttft']):.2f}x the median first-token time")
    finally:
        server.terminate()
        server.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())
