"""Several models in one process, several threads on one model, compiles in parallel, and the GIL
released while a model runs.

At the pass level (ONNXC_MODEL_CHECKS=passes, tests/models/model_checks.py: the sanitizer builds)
only the threads sharing one model run: the bindings and the runtime under ASan from several
threads. Races are the TSan leg's (onnxc_concurrency_tests: a model, a session or a pool shared),
and the rest compiles more models to run their uninstrumented kernels."""

import os
import sys
import threading

import numpy as np

import onnxc
from conftest import assert_close, bert_feeds, onnxruntime_outputs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "models"))
from model_checks import skip_at_pass_level  # noqa: E402

normal_build_only = skip_at_pass_level("ONNXC_MODEL_CHECKS=passes: more models compiled to run their kernels "
                                       "(uninstrumented); races are the TSan leg's, and "
                                       "test_threads_share_one_model keeps the bindings' threads under ASan")


def gpt_feeds(batch, seq, seed, vocab):
    rng = np.random.default_rng(seed)
    return {"input_ids": rng.integers(0, vocab, size=(batch, seq), dtype=np.int64)}


def run_threads(count, body):
    """Runs body(index) on `count` threads started together; re-raises the first failure."""
    errors = []
    start = threading.Barrier(count)

    def worker(index):
        try:
            start.wait()
            body(index)
        except BaseException as e:  # noqa: B902 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


@normal_build_only
def test_two_models_in_one_process(tiny_bert, gpt):
    gpt_path, entry = gpt
    vocab = entry["inputs"][0]["generator"]["high"]
    bert_model, gpt_model = onnxc.compile(tiny_bert), onnxc.compile(gpt_path)
    assert [i.name for i in gpt_model.inputs] == ["input_ids"]
    for step in range(3):
        bf = bert_feeds(2, 6 + step, seed=step)
        gf = gpt_feeds(1, 5 + step, seed=step, vocab=vocab)
        assert_close(bert_model.run(None, bf)[0], onnxruntime_outputs(tiny_bert, bf)[0], "bert")
        assert_close(gpt_model.run(None, gf)[0], onnxruntime_outputs(gpt_path, gf)[0], "gpt")


def test_threads_share_one_model(tiny_bert):
    model = onnxc.compile(tiny_bert, threads=1)
    cases = [bert_feeds(1 + i % 2, 3 + i, seed=i) for i in range(8)]
    want = [model.run(None, feeds)[0] for feeds in cases]

    def body(index):
        for round_ in range(5):
            case = (index + round_) % len(cases)
            np.testing.assert_array_equal(model.run(None, cases[case])[0], want[case])

    run_threads(4, body)


@normal_build_only
def test_threads_on_two_models_and_compiles_in_parallel(tiny_bert, gpt):
    gpt_path, entry = gpt
    vocab = entry["inputs"][0]["generator"]["high"]
    models = [None, None]

    def compile_one(index):
        models[index] = onnxc.compile([tiny_bert, gpt_path][index], threads=2)

    run_threads(2, compile_one)
    bf, gf = bert_feeds(2, 7, seed=11), gpt_feeds(2, 7, seed=12, vocab=vocab)
    want = [onnxruntime_outputs(tiny_bert, bf)[0], onnxruntime_outputs(gpt_path, gf)[0]]

    def body(index):
        model, feeds = models[index % 2], [bf, gf][index % 2]
        for _ in range(4):
            assert_close(model.run(None, feeds)[0], want[index % 2], f"thread {index}")

    run_threads(4, body)


@normal_build_only
def test_the_gil_is_released_while_a_model_runs(tiny_bert):
    """With a switch interval that never expires, another Python thread gets the GIL only when this
    one gives it up: the worker, woken before the runs, sees `inside` set only if Model.run
    releases the GIL while the compiled code runs (otherwise it runs at join, after the runs). No
    timing is measured: the handover points decide. A released GIL is only a chance for the
    worker (on a loaded machine the main thread may take it back before the worker is scheduled),
    so the runs go on until the worker has run, up to a bound no scheduler misses."""
    model = onnxc.compile(tiny_bert, threads=1)
    feeds = bert_feeds(8, 32, seed=1)  # the example has 32 positions
    model.run(None, feeds)  # the first run builds its plan
    state = {"inside": False, "seen": None}
    go = threading.Event()

    def worker():
        go.wait()
        state["seen"] = state["inside"]

    previous = sys.getswitchinterval()
    sys.setswitchinterval(1000.0)
    try:
        thread = threading.Thread(target=worker)
        thread.start()
        state["inside"] = True
        go.set()
        for _ in range(2000):
            model.run(None, feeds)
            if state["seen"] is not None:
                break
        state["inside"] = False
        thread.join()
    finally:
        sys.setswitchinterval(previous)
    assert state["seen"] is True, "no other Python thread ran while the model ran: the GIL was held"
