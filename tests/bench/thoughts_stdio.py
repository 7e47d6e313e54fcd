"""Records N sequentialthinking events into a data directory through any thinkledger binary.

python3 tests/bench/thoughts_stdio.py BINARY DATA_DIR N: 64 lanes over one stdio connection,
each a chain of 50-thought sessions (thought 1 opens a session, the rest name its handle), the
same text as the benches' `common::thought_args`; prints events/s. A release server records a
1,000,000-event ledger in minutes, where the debug benches' in-process writer takes far longer:
THINKLEDGER_BENCH_SOURCE of the postgres bench's part (c) then starts nodes on a copy of it.
"""
import json, subprocess, sys, time
binary, data_dir, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
LANES, CHAIN = 64, 50
p = subprocess.Popen([binary, "--data-dir", data_dir, "serve"], stdin=subprocess.PIPE,
                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
def send(o): p.stdin.write((json.dumps(o) + "\n").encode())
def recv(): return json.loads(p.stdout.readline())
send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
recv()
send({"jsonrpc": "2.0", "method": "notifications/initialized"})
def args(number, session):
    a = {"thought": f"Step {number}: weigh the evidence gathered so far, state the open question, "
         "and decide what to check next before committing to an answer.",
         "nextThoughtNeeded": number < CHAIN, "thoughtNumber": number, "totalThoughts": CHAIN}
    if session: a["sessionId"] = session
    return a
lanes = {}  # request id -> (lane, number)
state = [(1, None)] * LANES  # per lane: next thought number, session handle
sent = got = 0
def submit(lane):
    global sent
    number, session = state[lane]
    sent += 1
    lanes[sent] = (lane, number)
    send({"jsonrpc": "2.0", "id": sent, "method": "tools/call",
          "params": {"name": "sequentialthinking", "arguments": args(number, session)}})
t0 = time.perf_counter()
for lane in range(min(LANES, n)): submit(lane)
while got < n:
    r = recv()
    if "id" not in r: continue
    got += 1
    lane, number = lanes.pop(r["id"])
    result = r.get("result", {})
    assert not result.get("isError"), r
    session = result["structuredContent"]["sessionId"]
    state[lane] = (1, None) if number >= CHAIN else (number + 1, session)
    if sent < n: submit(lane)
took = time.perf_counter() - t0
p.stdin.close(); p.wait()
print(f"{n} events in {took:.1f} s: {n / took:.0f}/s")
