#!/usr/bin/env python3
"""abcid under the read-side attacks, before and after.

For each patch set: `feth devnet up --fresh` (one validator, 200 ms
`timeout_commit`), wait for 30 blocks, then

1. feeHistory: abcid's peak RSS (`VmHWM` of /proc/PID/status) before and
   after one `eth_feeHistory` of 1,024 blocks with 400,000 reward percentiles
   (~3 MB body); when that one is refused as geth refuses it (a bounded
   build), also four bodies just under the 16 MiB limit.
2. read load: an idle window of SECONDS s, then a window of SECONDS s with 16
   clients each looping a maximal `eth_call` (no `to`: the init code
   `JUMPDEST PUSH1 0 JUMP` loops until its 30 M gas run out). From abcid's
   `block committed` lines of each window: blocks, mean block interval
   (CometBFT header times) and `commit_ms` p50 / p90 / max.

then `feth devnet down`. abcid is the one next to FETH (`feth devnet` starts
the abcid beside it unless FETH_ABCID names another), so the same script
measures an old build (e.g. main's `target/debug/feth`) and a new one.

Usage: python3 scripts/abcid-attacks.py [FETH] [PATCH_SETS] [SECONDS]
(defaults: target/debug/feth, "all,-snapshot-reads;all", 20). PATCH_SETS is
a ';'-separated list of `--patches` values. Prints one JSON line per patch
set and a Markdown table.
"""
import json, os, re, subprocess, sys, tempfile, threading, time, urllib.error, urllib.request
from datetime import datetime
from devnet_state import process_pid

FETH = sys.argv[1] if len(sys.argv) > 1 else "target/debug/feth"
PATCH_SETS = (sys.argv[2] if len(sys.argv) > 2 else "all,-snapshot-reads;all").split(";")
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 20.0
WEB3_PORT = 52545
PORTS = ["--rpc-port", "52657", "--p2p-port", "52656", "--abci-port", "52658",
         "--web3-port", str(WEB3_PORT), "--profiler-port", "52060",
         "--metrics-port", "52661", "--cometbft-metrics-port", "52660"]
WEB3 = f"http://127.0.0.1:{WEB3_PORT}"
LINE = re.compile(r"height=(\d+).*commit_ms=([\d.]+) block_time=(\S+)")
CLIENTS = 16
MAX_CALL = {"data": "0x5b600056", "gas": hex(30_000_000)}


def feth(args):
    return subprocess.run([FETH] + args, check=True, capture_output=True, text=True)


def post(body, timeout=120):
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(WEB3, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read())


def height():
    return int(post({"jsonrpc": "2.0", "id": 1, "method": "eth_blockNumber", "params": []})["result"], 16)


def peak_rss_mib(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def fee_history(pid):
    before = peak_rss_mib(pid)
    percentiles = [i / 4000 for i in range(400_000)]
    body = {"jsonrpc": "2.0", "id": 1, "method": "eth_feeHistory",
            "params": ["0x400", "latest", percentiles]}
    answer = post(body)
    message = answer.get("error", {}).get("message", "answered")
    refused = message.startswith("invalid reward percentile")
    after = peak_rss_mib(pid)
    out = {"rss_before_mib": round(before, 1), "rss_after_400k_mib": round(after, 1),
           "400k": message[:80]}
    if refused:
        head = '{"jsonrpc":"2.0","id":1,"method":"eth_feeHistory","params":["0x400","latest",[0'
        tail = "]]}"
        zeros = ((16 << 20) - len(head) - len(tail)) // 2
        big = (head + ",0" * zeros + tail).encode()
        for _ in range(4):
            try:
                post(big)
            except urllib.error.HTTPError as refused_body:
                # A body limit under 16 MiB (geth's 5 MiB) refuses it unread.
                out["16mib"] = f"HTTP {refused_body.code}"
                break
        out["rss_after_16mib_mib"] = round(peak_rss_mib(pid), 1)
    return out


def window_lines(log, offset):
    with open(log) as f:
        f.seek(offset)
        text = f.read()
        end = f.tell()
    rows = []
    for m in LINE.finditer(text):
        t = datetime.fromisoformat(m.group(3).replace("Z", "+00:00")[:26] + "+00:00")
        rows.append((int(m.group(1)), float(m.group(2)), t.timestamp()))
    return rows, end


def summary(rows):
    if len(rows) < 2:
        return {"blocks": len(rows)}
    commits = sorted(r[1] for r in rows)
    pick = lambda q: commits[min(len(commits) - 1, int(q * len(commits)))]
    interval = (rows[-1][2] - rows[0][2]) / (len(rows) - 1) * 1000
    return {"blocks": len(rows), "interval_ms": round(interval, 1),
            "commit_ms_p50": pick(0.5), "commit_ms_p90": pick(0.9), "commit_ms_max": commits[-1]}


def read_load(log, offset, seconds):
    stop = time.time() + seconds
    counts = [0] * CLIENTS

    def client(i):
        body = {"jsonrpc": "2.0", "id": i, "method": "eth_call", "params": [MAX_CALL, "latest"]}
        while time.time() < stop:
            try:
                post(body, timeout=60)
                counts[i] += 1
            except OSError:
                time.sleep(0.1)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows, end = window_lines(log, offset)
    return summary(rows), sum(counts), end


def case(patches):
    with tempfile.TemporaryDirectory() as d:
        home = os.path.join(d, "net")
        feth(["devnet", "up", "--fresh", "--dir", home, "--timeout-commit", "200ms",
              "--patches", patches] + PORTS)
        try:
            while height() < 30:
                time.sleep(0.5)
            pid = process_pid(home, "abcid")
            log = os.path.join(home, "logs", "abcid.log")
            fees = fee_history(pid)
            offset = os.path.getsize(log)
            time.sleep(SECONDS)
            idle, offset = window_lines(log, offset)
            loaded, calls, _ = read_load(log, offset, SECONDS)
            return {"patches": patches, "fee_history": fees, "idle": summary(idle),
                    "loaded": loaded, "calls_answered": calls}
        finally:
            feth(["devnet", "down", "--dir", home])


def main():
    results = []
    for patches in PATCH_SETS:
        r = case(patches)
        print(json.dumps(r), flush=True)
        results.append(r)
    print(f"\nFETH={FETH}, {SECONDS:.0f} s windows, {CLIENTS} clients looping a 30 M-gas eth_call\n")
    print("| patches | peak RSS before → after 400k percentiles (→ 4 × 16 MiB) | idle: interval ms, commit_ms p50/p90/max | loaded: interval ms, commit_ms p50/p90/max | calls answered |")
    print("|---|---|---|---|---|")
    for r in results:
        f, i, l = r["fee_history"], r["idle"], r["loaded"]
        rss = f"{f['rss_before_mib']} → {f['rss_after_400k_mib']} MiB"
        if "rss_after_16mib_mib" in f:
            rss += f" (→ {f['rss_after_16mib_mib']} MiB)"
        cell = lambda s: f"{s.get('interval_ms')}, {s.get('commit_ms_p50')}/{s.get('commit_ms_p90')}/{s.get('commit_ms_max')}"
        print(f"| `{r['patches']}` | {rss} | {cell(i)} | {cell(l)} | {r['calls_answered']} |")


if __name__ == "__main__":
    main()
