"""Serve a GGUF model with llama.cpp's own HTTP server (PyPI `xllamacpp`) on 127.0.0.1.

Usage: python serve.py MODEL.gguf [PORT] [SLOTS]

Picks a free port when PORT is absent or 0; SLOTS (default 1) is how many requests the server
computes at once (each slot gets 2048 tokens of context); prints one line `listening <port>` on stdout once
the server answers (chat with tools through `chatml-tools.jinja` beside this file), then serves until its standard input closes (the parent test process ended
or closed the pipe), and exits. Embeddings are enabled (`/v1/embeddings`) beside chat.
"""

import os
import socket
import sys
import threading
import time
import urllib.request

import xllamacpp


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    model = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "0" else free_port()
    slots = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    params = xllamacpp.CommonParams()
    params.model.path = model
    params.hostnames = ["127.0.0.1"]
    params.port = port
    params.n_ctx = 2048 * slots
    params.n_parallel = slots
    params.use_jinja = True
    params.ui = False
    params.offline = True
    params.embedding = True
    # Mean pooling: /v1/embeddings refuses the model's own pooling ("none") as not OpenAI-like.
    params.pooling_type = xllamacpp.llama_pooling_type.LLAMA_POOLING_TYPE_MEAN
    params.warmup = False
    # Every request computed from its own prompt alone. With llama.cpp's prompt cache (a slot's
    # KV cache reused for a shared prefix, and idle slots' states kept in RAM and restored), a
    # temperature-0 chat once answered differently after other requests, embeddings among them,
    # had run on the same slot; the tests' prompts are short, so recomputing costs little.
    params.cache_prompt = False
    params.cache_idle_slots = False
    params.cache_ram_mib = 0
    # ChatML with a tools section (see the template's header): plain chats render as SmolLM2's
    # own template does when they start with a system message.
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "chatml-tools.jinja"), encoding="utf-8") as f:
        params.chat_template = f.read()
    server = xllamacpp.Server(params)
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                break
        except Exception:
            if time.monotonic() > deadline:
                print("failed: the server did not answer within 60 s", flush=True)
                os._exit(1)
            time.sleep(0.1)
    print(f"listening {port}", flush=True)
    watcher = threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True)
    watcher.start()
    watcher.join()
    del server


if __name__ == "__main__":
    main()
