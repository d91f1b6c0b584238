"""onnxc.ray_serve: onnxc models on Ray Serve, behind the OpenAI-compatible API (docs/RAY.md).

Each replica runs onnxc's own engine: `onnxc.serve` starts the C++ server (continuous batching,
sessions and tokenizers outside the GIL) on the replica's loopback, and the replica's ingress
forwards every request to it: the body and the Authorization header go through, the answer comes
back with its status and body, and server-sent events stream through unchanged. Ray does
placement, routing, autoscaling and restarts; nothing of that is redone here. A health check ties
the replica to its server: a server that has exited or stopped answering makes the replica
unhealthy, and Ray replaces it.

    from ray import serve
    import onnxc.ray_serve
    serve.run(onnxc.ray_serve.app("/models/gpt2", num_replicas=2))       # http://127.0.0.1:8000/v1

or, from the command line, Ray's builder pattern:

    serve run onnxc.ray_serve:app_builder model=/models/gpt2 num_replicas=2

Needs Ray Serve (`pip install onnxc[ray]`); `import onnxc` alone never imports Ray.
"""

import os

import aiohttp
from ray import serve
from starlette.responses import JSONResponse, Response, StreamingResponse

import onnxc

__all__ = ["app", "app_builder", "OnnxcDeployment"]

#: The request headers the local server reads; the rest are the proxy's business.
_FORWARDED_REQUEST_HEADERS = ("authorization", "content-type", "accept")
#: Response headers that describe one hop's connection, not the answer: Ray's proxy sets its own.
_HOP_HEADERS = ("connection", "keep-alive", "transfer-encoding", "content-length", "date", "server")
#: The response header naming the replica that answered (Ray's replica id), for logs and tests.
REPLICA_HEADER = "x-onnxc-replica"


def _error(status, message, code):
    """An answer in OpenAI's error shape, as the local server writes its own."""
    body = {"error": {"message": message, "type": "server_error", "param": None, "code": code}}
    return JSONResponse(body, status_code=status)


@serve.deployment(name="onnxc", health_check_period_s=10, health_check_timeout_s=30)
class OnnxcDeployment:
    """One replica: an `onnxc serve` process on 127.0.0.1 and a forwarder to it."""

    def __init__(self, models, server_options, health_timeout_s=10.0):
        # port 0: replicas that share a node each get a free port.
        self._server = onnxc.serve(*models, host="127.0.0.1", port=0, **server_options)
        self._health_timeout_s = float(health_timeout_s)
        self._session = None
        try:
            self._replica = serve.get_replica_context().replica_id.unique_id
        except Exception:  # Constructed outside a replica (a unit test): no id to report.
            self._replica = ""

    def _client(self):
        # Created on first use, in the replica's event loop, which aiohttp binds it to. No total
        # timeout: the local server applies its own (--timeout, 408), and streams last long.
        if self._session is None:
            connector = aiohttp.TCPConnector(limit=0)
            self._session = aiohttp.ClientSession(connector=connector, auto_decompress=False,
                                                  timeout=aiohttp.ClientTimeout(total=None, connect=10))
        return self._session

    def _headers(self, upstream):
        headers = {name: value for name, value in upstream.headers.items() if name.lower() not in _HOP_HEADERS}
        if self._replica:
            headers[REPLICA_HEADER] = self._replica
        return headers

    async def __call__(self, request):
        url = self._server.url + request.url.path
        if request.url.query:
            url += "?" + request.url.query
        headers = {name: value for name, value in request.headers.items()
                   if name.lower() in _FORWARDED_REQUEST_HEADERS}
        body = await request.body()
        try:
            upstream = await self._client().request(request.method, url, data=body, headers=headers,
                                                    allow_redirects=False)
        except aiohttp.ClientError as error:
            # Not the client's fault and not a model's answer: the health check will replace this replica.
            return _error(503, f"replica {self._replica}: its onnxc server did not answer ({error})",
                          "server_unavailable")
        headers = self._headers(upstream)
        if upstream.content_type != "text/event-stream":
            try:
                data = await upstream.read()
            finally:
                upstream.release()
            return Response(data, status_code=upstream.status, headers=headers)
        return StreamingResponse(self._relay(upstream), status_code=upstream.status, headers=headers)

    @staticmethod
    async def _relay(upstream):
        """The events as the server writes them. A client that hangs up cancels this generator
        (Ray cancels the request), and closing the connection makes the server free the row."""
        finished = False
        try:
            async for chunk in upstream.content.iter_any():
                yield chunk
            finished = True
        finally:
            if finished:
                upstream.release()
            else:
                upstream.close()

    async def check_health(self):
        """Ray's health check: the replica is as healthy as its server."""
        if not self._server.running():
            raise RuntimeError(f"onnxc serve exited with status {self._server.process.returncode}")
        timeout = aiohttp.ClientTimeout(total=self._health_timeout_s)
        try:
            async with self._client().get(self._server.url + "/health", timeout=timeout) as answer:
                if answer.status != 200:
                    raise RuntimeError(f"onnxc serve answered /health with {answer.status}")
        except (aiohttp.ClientError, TimeoutError) as error:
            raise RuntimeError(f"onnxc serve did not answer /health: {error!r}") from None

    def __del__(self):
        # Ray's graceful shutdown of the replica (scale-down, redeploy, serve shutdown).
        server = getattr(self, "_server", None)
        if server is not None:
            server.stop()


def _server_options(threads, api_key, tokenizer, chat_template, max_batch, max_queue, max_prompt_tokens,
                    max_total_tokens, timeout, log_prompts):
    options = {"threads": threads, "max_batch": max_batch, "max_queue": max_queue,
               "max_prompt_tokens": max_prompt_tokens, "max_total_tokens": max_total_tokens,
               "timeout": timeout, "log_prompts": log_prompts}
    for name, value in (("api_key", api_key), ("tokenizer", tokenizer), ("chat_template", chat_template)):
        if value is not None:
            options[name] = os.fspath(value)
    return options


def _autoscaling_config(autoscaling, max_batch):
    """Ray's autoscaling_config; True gives 1 to 4 replicas, scaling out when the replicas hold on
    average as many requests as one has rows."""
    if autoscaling is None or autoscaling is False:
        return None
    config = {"min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": max_batch}
    if autoscaling is not True:
        config.update(dict(autoscaling))
    return config


def app(model, *, num_replicas=None, autoscaling=None, num_cpus=1, threads=None, api_key=None, tokenizer=None,
        chat_template=None, max_batch=8, max_queue=64, max_prompt_tokens=1024, max_total_tokens=2048, timeout=300,
        log_prompts=False, max_ongoing_requests=None, name="onnxc", **deployment_options):
    """A Ray Serve application serving `model` (a folder, model.so or .onnx, as `onnxc serve` takes
    it, or a list of them) on the OpenAI-compatible API: pass it to `serve.run`.

    `model` must be at the same path on every node that runs a replica. `num_replicas` fixes the
    count (default 1); `autoscaling` instead lets Ray scale it: True, or a dict of Ray's
    autoscaling_config fields (min_replicas, max_replicas, target_ongoing_requests,
    upscale_delay_s, ...), over defaults of 1 to 4 replicas and a target of `max_batch` requests
    per replica. Each replica reserves `num_cpus` CPUs and its server runs `threads` threads (default
    `num_cpus`). `max_ongoing_requests` caps what Ray sends one replica at once; by default
    `max_batch`, the rows its server runs, so that Ray's router (which prefers a replica on its own
    node while that one accepts) sends the next request to another replica rather than into a busy
    one's queue, and holds what no replica can take (Ray's `max_queued_requests` bounds that, with
    503). `api_key` (default: the replicas' $ONNXC_API_KEY) and the limits are the
    server's options (docs/SERVE.md). Other keywords are Ray's deployment options
    (ray_actor_options, health_check_period_s, max_replicas_per_node, ...)."""
    models = [model] if isinstance(model, (str, bytes, os.PathLike)) else list(model)
    if not models:
        raise ValueError("app() needs at least one model: a folder, a model.so or an .onnx file")
    models = [os.fsdecode(os.fspath(m)) for m in models]
    if num_replicas is not None and autoscaling not in (None, False):
        raise ValueError("give num_replicas or autoscaling, not both: autoscaling sets the replica count")
    if float(num_cpus) <= 0:
        raise ValueError(f"num_cpus must be > 0, got {num_cpus}")
    threads = max(1, int(float(num_cpus))) if threads is None else int(threads)
    options = _server_options(threads, api_key, tokenizer, chat_template, max_batch, max_queue,
                              max_prompt_tokens, max_total_tokens, timeout, log_prompts)
    actor_options = dict(deployment_options.pop("ray_actor_options", None) or {})
    actor_options.setdefault("num_cpus", float(num_cpus))
    deployment_options["ray_actor_options"] = actor_options
    deployment_options["max_ongoing_requests"] = int(max_batch if max_ongoing_requests is None
                                                      else max_ongoing_requests)
    scaling = _autoscaling_config(autoscaling, int(max_batch))
    if scaling is not None:
        deployment_options["autoscaling_config"] = scaling
    else:
        deployment_options["num_replicas"] = 1 if num_replicas is None else int(num_replicas)
    return OnnxcDeployment.options(name=name, **deployment_options).bind(models, options)


#: app_builder's arguments and their types: what `serve run ... key=value` and a RayService's `args` may set.
_BUILDER_ARGS = {"num_replicas": int, "min_replicas": int, "max_replicas": int, "target_ongoing_requests": float,
                 "num_cpus": float, "threads": int, "tokenizer": str, "chat_template": str, "max_batch": int,
                 "max_queue": int, "max_prompt_tokens": int, "max_total_tokens": int, "timeout": float,
                 "max_ongoing_requests": int, "name": str}
_AUTOSCALING_ARGS = ("min_replicas", "max_replicas", "target_ongoing_requests")


def app_builder(args):
    """Ray's application builder: `serve run onnxc.ray_serve:app_builder model=PATH[,PATH...] [key=value
    ...]`, or a RayService's `import_path: onnxc.ray_serve:app_builder` with `args`. The keys are
    app()'s keywords; min_replicas, max_replicas or target_ongoing_requests turn autoscaling on. The
    API key is not an argument (it would show in process lists and configs): set ONNXC_API_KEY in
    the replicas' environment."""
    args = dict(args)
    model = args.pop("model", None)
    if not model:
        raise ValueError("onnxc.ray_serve:app_builder needs model=PATH (a folder, model.so or .onnx; "
                         "several separated by commas)")
    models = model.split(",") if isinstance(model, str) else list(model)
    unknown = sorted(set(args) - set(_BUILDER_ARGS))
    if unknown:
        raise ValueError(f"onnxc.ray_serve:app_builder: unknown argument(s) {', '.join(unknown)}; "
                         f"known: model, {', '.join(_BUILDER_ARGS)}")
    keywords = {}
    for key, value in args.items():
        try:
            keywords[key] = _BUILDER_ARGS[key](value)
        except (TypeError, ValueError):
            raise ValueError(f"onnxc.ray_serve:app_builder: {key}={value!r} is not "
                             f"{'a number' if _BUILDER_ARGS[key] is not str else 'text'}") from None
    autoscaling = {key: keywords.pop(key) for key in _AUTOSCALING_ARGS if key in keywords}
    return app(models, autoscaling=autoscaling or None, **keywords)
