#!/usr/bin/env python3
"""Whether two replicas of llama-cpp-python's own server draw alike: two fresh, unmodified
`python -m llama_cpp.server` processes on the same model file are sent the same sequence of
one-token calls at temperature 1, first without a `seed` (as a client keeping OpenAI's defaults
sends them), then each call with a fresh random seed, as modelpin sends them. Prints how many
of the calls the two replicas answered with the same token: with a seed per call the draws
are independent, and that row is what independent draws give.

  source .ci/real-model.sh
  python3 bench/seed_streams.py

Standard library only.
"""

import argparse
import json
import os
import random
import socket
import subprocess
import time
import urllib.request

PROMPTS = ["Name a country.", "Name a city.", "Name a flower."]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(python, model):
    port = free_port()
    child = subprocess.Popen(
        [python, "-m", "llama_cpp.server", "--model", model, "--model_alias", "m",
         "--host", "127.0.0.1", "--port", str(port), "--n_threads", "1", "--n_ctx", "2048"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return child, port
        except OSError:
            time.sleep(0.3)
    child.kill()
    raise SystemExit("the server did not answer within 180 s")


def first_token(port, prompt, seed):
    body = {"model": "m", "messages": [{"role": "user", "content": prompt}], "max_tokens": 1,
            "temperature": 1.0}
    if seed is not None:
        body["seed"] = seed
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions",
                                     json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as r:
        return json.load(r)["choices"][0]["message"]["content"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--python", default=os.environ.get("MODELPIN_LLAMA_PYTHON"))
    parser.add_argument("--models", default=os.environ.get("MODELPIN_MODELS"))
    parser.add_argument("--calls", type=int, default=60)
    args = parser.parse_args()
    if not args.python or not args.models:
        raise SystemExit("set MODELPIN_LLAMA_PYTHON and MODELPIN_MODELS (source .ci/real-model.sh)")
    model = os.path.join(args.models, "smollm2-q4_1.gguf")
    (a, port_a), (b, port_b) = start(args.python, model), start(args.python, model)
    try:
        print("| calls | same token on both replicas |")
        print("|---|---|")
        draw = random.SystemRandom()
        for label, seeded in (("unseeded", False), ("a fresh seed each", True)):
            same = 0
            for i in range(args.calls):
                prompt = PROMPTS[i % len(PROMPTS)]
                seeds = (draw.randrange(1 << 31), draw.randrange(1 << 31)) if seeded else (None, None)
                same += first_token(port_a, prompt, seeds[0]) == first_token(port_b, prompt, seeds[1])
            print(f"| {args.calls}, {label} | {same} |")
    finally:
        a.kill()
        b.kill()


if __name__ == "__main__":
    main()
