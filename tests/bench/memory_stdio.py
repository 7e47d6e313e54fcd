"""Memory tools over stdio against any thinkledger binary, for side-by-side runs of two builds.

python3 tests/bench/memory_stdio.py BINARY N Q: one owner stores N memories (12-30 words
drawn from an 8,000-word Zipf vocabulary, 64 in flight), then Q retrieve_memories and Q
search_memories calls one at a time; prints stores/s and each tool's p50 and p95. The client is
the same for both builds, so only the difference between them is meaningful (docs/benchmarks.md,
"The house rebuilt").
"""
import json, subprocess, sys, tempfile, time, random, statistics
binary, n, q = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
d = tempfile.mkdtemp()
p = subprocess.Popen([binary, "--data-dir", d, "serve", "--toolsets", "all"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
def send(o): p.stdin.write((json.dumps(o) + "\n").encode())
def recv(): return json.loads(p.stdout.readline())
send({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"m","version":"1"}}}); recv()
send({"jsonrpc":"2.0","method":"notifications/initialized"})
rng = random.Random(7)
words = ["w%d" % i for i in range(8000)]
weights = [1/(i+1) for i in range(8000)]
def text(): return " ".join(rng.choices(words, weights, k=rng.randint(12, 30)))
t0 = time.perf_counter(); i = 1; inflight = 0; sent = 0; got = 0; ok = 0
while got < n:
    while sent < n and inflight < 64:
        send({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"store_memory","arguments":{"content":text(),"userId":"u1","sessionId":"s1","primarySector":"semantic"}}}); i += 1; sent += 1; inflight += 1
    r = recv(); got += 1; inflight -= 1
    if not r.get("result", {}).get("isError"): ok += 1
store_s = n / (time.perf_counter() - t0)
lat = {}
for tool in ["retrieve_memories", "search_memories"]:
    ls = []
    for k in range(q):
        a = {"userId":"u1","text":" ".join(rng.choices(words, weights, k=3))}
        s = time.perf_counter(); send({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":tool,"arguments":a}}); i += 1; recv(); ls.append((time.perf_counter()-s)*1000)
    ls.sort(); lat[tool] = (statistics.median(ls), ls[int(0.95*len(ls))-1])
p.stdin.close(); p.wait()
import shutil; shutil.rmtree(d, ignore_errors=True)
print(f"stores {store_s:.0f}/s ({ok}/{n} ok); retrieve p50 {lat['retrieve_memories'][0]:.2f} ms p95 {lat['retrieve_memories'][1]:.2f}; search p50 {lat['search_memories'][0]:.2f} ms p95 {lat['search_memories'][1]:.2f}")
