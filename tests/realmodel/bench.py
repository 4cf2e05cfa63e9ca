#!/usr/bin/env python3
"""Speed of serve.py: start time, calls per second for 1-token answers, tokens per second for
64-token answers, resident memory. Standard library only; runs under any Python 3:

  python3 tests/realmodel/bench.py --python "$MODELPIN_LLAMA_PYTHON" --models "$MODELPIN_MODELS"
"""

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_ID = "smollm2-135m-instruct"


def post(url, body):
    req = urllib.request.Request(url, json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--python", default=os.environ.get("MODELPIN_LLAMA_PYTHON"))
    p.add_argument("--models", default=os.environ.get("MODELPIN_MODELS"))
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--long", type=int, default=5)
    p.add_argument("--threads", type=int, default=1, help="llama.cpp threads (serve.py --threads)")
    args = p.parse_args()
    if not args.python or not args.models:
        sys.exit("set MODELPIN_LLAMA_PYTHON and MODELPIN_MODELS (source .ci/real-model.sh)")

    started = time.monotonic()
    server = subprocess.Popen(
        [args.python, os.path.join(HERE, "serve.py"), "--models", args.models,
         "--model-id", MODEL_ID, "--port", "0", "--threads", str(args.threads)],
        stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline()
    ready = time.monotonic() - started
    port = line.rsplit(":", 1)[1].strip()
    base = f"http://127.0.0.1:{port}"
    print(f"start (3 models loaded, listening): {ready:.2f} s; RSS {rss_mib(server.pid):.0f} MiB")
    try:
        for variant in ["base", "family", "requant"]:
            post(base + "/admin/variant", {"variant": variant})
            one = {"model": MODEL_ID, "max_tokens": 1, "logprobs": True, "top_logprobs": 5,
                   "messages": [{"role": "user", "content": "Say hello."}]}
            post(base + "/v1/chat/completions", one)
            t = time.monotonic()
            for _ in range(args.calls):
                post(base + "/v1/chat/completions", one)
            rate = args.calls / (time.monotonic() - t)
            t = time.monotonic()
            for i in range(args.calls):
                fresh = dict(one, messages=[{"role": "user", "content": f"Say hello to {i}."}])
                post(base + "/v1/chat/completions", fresh)
            fresh_rate = args.calls / (time.monotonic() - t)
            long = {"model": MODEL_ID, "max_tokens": 64, "temperature": 1,
                    "messages": [{"role": "user", "content": "Tell me a long story about a cat."}]}
            tokens = 0
            t = time.monotonic()
            for _ in range(args.long):
                tokens += post(base + "/v1/chat/completions", long)["usage"]["completion_tokens"]
            speed = tokens / (time.monotonic() - t)
            print(f"{variant:8} 1-token calls: {rate:.1f}/s same prompt, {fresh_rate:.1f}/s new "
                  f"prompts; up-to-64-token answers: "
                  f"{speed:.1f} tokens/s ({tokens} tokens in {args.long} calls)")
        print(f"RSS after: {rss_mib(server.pid):.0f} MiB")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
