#!/usr/bin/env python3
"""Peak memory of `modelpin daemon` for the worst OTLP bodies `/v1/traces` refuses and accepts.

Each case gets a fresh daemon (one pin on the simulator, audited once at start), so each reading
of `VmHWM` (the peak resident set since start) is that case's alone. A case posts its body once,
then from 8 connections at once; both peaks are printed with the idle footprint and the answers.

Cases, protobuf built here by hand:
- `resource_spans`: 4 MiB of empty `resource_spans` entries (two bytes each, 2 M of them, no span);
- `attributes`: one span holding 1 M empty attributes (2 MiB);
- `worst accepted`: as many empty `resource_spans` as fit the decoded-size limit (read back from
  the refusal above, which names how many entries it counted);
- `json 200k`: OTLP/JSON of 200,000 `{}` spans;
- `json 46k genai`: OTLP/JSON of 46,000 GenAI spans, as many as 4 MiB holds;
- `protobuf 50k genai`: 50,000 GenAI spans in protobuf, the most kept from one request.

Run from the repository root (MODELPIN_BIN, CARGO_TARGET_DIR and NO_BUILD as in daemon_bench):

    python3 bench/hostile_bodies/run.py
"""
import json
import os
import re
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from daemon_bench import Project  # noqa: E402


def varint(n):
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field(number, payload):
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def in_one_scope(spans):
    return field(1, field(2, b"".join(field(2, s) for s in spans)))


def genai_span():
    model = field(1, b"gen_ai.request.model") + field(2, field(1, b"model-000"))
    return field(9, model)


def peak_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def post(port, body, content_type):
    """Status and body of one POST; a refusal may close the connection before the whole body is
    sent (429 mid-body), so the answer is read whatever sending did."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        head = (f"POST /v1/traces HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n")
        try:
            s.sendall(head.encode() + body)
        except OSError:
            pass
        raw = b""
        try:
            while chunk := s.recv(65536):
                raw += chunk
        except OSError:
            pass
    head, _, text = raw.partition(b"\r\n\r\n")
    status = int(head.split()[1]) if head else 0
    return status, text


def case(name, body, content_type):
    with Project("modelpin-hostile-", 1, "0 0 0 1 1 *") as p:
        if not p.wait_for_audits(1, limit=60):
            sys.exit("the start-up audit did not finish")
        time.sleep(1)
        idle = peak_kib(p.daemon.pid)
        status, text = post(p.port, body, content_type)
        one = peak_kib(p.daemon.pid)
        statuses = []
        threads = [threading.Thread(target=lambda: statuses.append(post(p.port, body, content_type)[0]))
                   for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        eight = peak_kib(p.daemon.pid)
        counts = {s: statuses.count(s) for s in sorted(set(statuses))}
        print(f"| {name} | {len(body) / 2**20:.2f} | {status} | {idle / 1024:.1f} | {one / 1024:.1f} | "
              f"{eight / 1024:.1f} ({', '.join(f'{n}× {s}' for s, n in counts.items())}) |", flush=True)
        return text


def main():
    print("| body | MiB sent | answer | idle peak MiB | after one | after 8 at once |")
    print("| --- | --- | --- | --- | --- | --- |")
    refusal = case("4 MiB of empty resource_spans", b"\x0a\x00" * (2 << 20), "application/x-protobuf")
    case("1 M empty attributes in one span", in_one_scope([b"\x4a\x00" * (1 << 20)]), "application/x-protobuf")
    counted = int(re.search(rb"\((\d+) entries", refusal).group(1))
    case(f"worst accepted: {counted - 1:,} empty resource_spans (to the limit)",
         b"\x0a\x00" * (counted - 1), "application/x-protobuf")
    spans = ",".join(["{}"] * 200_000)
    case("JSON, 200,000 empty spans",
         f'{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{spans}]}}]}}]}}'.encode(), "application/json")
    span = json.dumps({"attributes": [{"key": "gen_ai.request.model", "value": {"stringValue": "model-000"}}]})
    spans = ",".join([span] * 46_000)
    case("JSON, 46,000 GenAI spans (as many as fit 4 MiB)",
         f'{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{spans}]}}]}}]}}'.encode(), "application/json")
    case("protobuf, 50,000 GenAI spans", in_one_scope([genai_span()] * 50_000), "application/x-protobuf")


if __name__ == "__main__":
    main()
