#!/usr/bin/env python3
"""Committed TPS and block time of 1 vs N validators at several link
latencies, everything on this machine (a model of a network, not one).

For each case: `feth devnet up --fresh` (1 validator, or N validators with
--latency L), `feth fund` 200 accounts, `feth load` closed loop for
DURATION s spread over every node's web3 endpoint, then `feth devnet down`.
Block time comes from CometBFT's header times (ns) of the load's window on
v0; CPU is user+system seconds of every cometbft, abcid and toxiproxy
process (from /proc) and of `feth load` itself, over the load's run.

Usage: python3 scripts/devnet-tps.py [FETH] [VALIDATORS] [DURATION]
(defaults: target/release/feth, 4, 30). Prints one JSON line per case and a
Markdown table.
"""
import json, os, subprocess, sys, tempfile, time, resource
from datetime import datetime
from devnet_state import process_pid

FETH = sys.argv[1] if len(sys.argv) > 1 else "target/release/feth"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 4
DURATION = sys.argv[3] if len(sys.argv) > 3 else "30"
TICK = os.sysconf("SC_CLK_TCK")
BASE = ["--rpc-port", "46657", "--p2p-port", "46656", "--abci-port", "46658",
        "--web3-port", "48545", "--profiler-port", "46060"]


def run(args, **kw):
    return subprocess.run([FETH] + args, check=True, capture_output=True, text=True, **kw)


def cpu(pid):
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except OSError:
        return 0.0


def pids(status):
    nodes = status.get("nodes") or [status]
    out = {"cometbft": [], "abcid": [], "toxiproxy": []}
    for n in nodes:
        for name in ("cometbft", "abcid"):
            out[name].append(process_pid(n["dir"], name))
    net = os.path.join(status["dir"], "network.json")
    if os.path.exists(net):
        out["toxiproxy"].append(json.load(open(net))["toxiproxy_pid"])
    return out


def header_ns(rpc, h):
    t = json.loads(subprocess.run(["curl", "-s", f"{rpc}/block?height={h}"], capture_output=True).stdout)
    text = t["result"]["block"]["header"]["time"]  # 2024-01-01T00:00:00.123456789Z
    secs, frac = text.rstrip("Z").split(".")
    return int(datetime.fromisoformat(secs + "+00:00").timestamp()) * 10**9 + int(frac.ljust(9, "0")[:9])


def case(validators, latency):
    d = tempfile.mkdtemp(prefix="feth-tps-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    args = ["devnet", "up", "--dir", d, "--fresh", "--json"] + BASE
    if validators > 1:
        args += ["--validators", str(validators), "--latency", f"{latency}ms"]
    status = json.loads(run(args).stdout)
    try:
        nodes = status.get("nodes") or [status]
        web3 = ",".join(n["web3"] for n in nodes)
        keys = os.path.join(d, "keys.txt")
        run(["fund", "--network", nodes[0]["web3"], "--count", "200", "--amount", "1eth",
             "--out", keys, "--root-key", status["root_key"], "--seed", "tps"])
        procs = pids(status)
        before = {k: sum(cpu(p) for p in v) for k, v in procs.items()}
        agent0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.time()
        out = run(["load", "--network", web3, "--keys", keys, "--duration", DURATION, "--json"])
        wall = time.time() - start
        agent1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        after = {k: sum(cpu(p) for p in v) for k, v in procs.items()}
        report = json.loads(out.stdout)
        c = report["chain"]
        rpc = nodes[0]["rpc"]
        span = header_ns(rpc, c["last_block"]) - header_ns(rpc, c["first_block"] - 1)
        blocks = c["last_block"] - c["first_block"] + 1
        agent = (agent1.ru_utime + agent1.ru_stime) - (agent0.ru_utime + agent0.ru_stime)
        share = {k: round((after[k] - before[k]) / wall, 2) for k in before}
        share["agent"] = round(agent / wall, 2)
        return {"validators": validators, "latency_ms": latency, "committed_tps": round(c["committed_tps"], 1),
                "block_time_ms": round(span / blocks / 1e6), "blocks": blocks, "included": report["totals"]["included"],
                "cores_used": share, "wall_s": round(wall, 1)}
    finally:
        run(["devnet", "down", "--dir", d])
        subprocess.run(["rm", "-rf", d])


rows = [case(1, 0)] + [case(N, lat) for lat in (0, 50, 150)]
for r in rows:
    print(json.dumps(r))
print("\n| validators | link latency | committed TPS | block time | cores: cometbft / abcid / toxiproxy / agent |")
print("|---|---|---|---|---|")
for r in rows:
    s = r["cores_used"]
    lat = "none (no links)" if r["validators"] == 1 else f"{r['latency_ms']} ms"
    print(f"| {r['validators']} | {lat} | {r['committed_tps']} | {r['block_time_ms']} ms | "
          f"{s['cometbft']} / {s['abcid']} / {s['toxiproxy']} / {s['agent']} |")
