#!/usr/bin/env python3
"""abcid under issue 45's subscription and receipt floods, measured.

1. Subscriptions (`--timeout-commit 500ms`): a burst of 150 transfers
   (`feth send --count 150`, which waits for their receipts) with no
   subscriber, then again after one client opened as many
   `newPendingTransactions` subscriptions as abcid grants it: 10,240 asked on
   one WebSocket, then 10,240 more on each of two other connections. Each
   connection's notifications are read as they come. Printed: the
   subscriptions granted and each connection's refusals (their distinct
   messages), abcid's CPU seconds
   (`utime + stime` of /proc/PID/stat) and the wall time of each burst, and
   the notifications read.
2. Receipts (`--timeout-commit 2s`, so blocks are big): 500 funded senders
   load the chain at 3,000 tx/s for 15 s; the biggest block and a block of
   at most 5 transfers (`feth send --count 5` after the load) are found.
   Printed: the median of 200 `eth_getTransactionReceipt` calls of each
   block's last transaction (client side, HTTP on loopback), then four
   batches of 1,000 receipts of the big block sent at once while a prober
   asks `eth_blockNumber` every 20 ms: the batches' wall time, abcid's CPU
   seconds and the worst probe.

Usage: python3 scripts/abcid-floods.py [FETH] [PATCHES]
(defaults: target/debug/feth, `all`). abcid is the one next to FETH. One
JSON line per vector, then a summary. Every devnet is on 127.0.0.1 and is
taken down at the end.
"""
import base64, json, os, socket, statistics, struct, subprocess, sys, tempfile, threading, time
import urllib.request
from devnet_state import process_pid

FETH = sys.argv[1] if len(sys.argv) > 1 else "target/debug/feth"
PATCHES = sys.argv[2] if len(sys.argv) > 2 else "all"
WEB3_PORT = 52545
PORTS = ["--rpc-port", "52657", "--p2p-port", "52656", "--abci-port", "52658",
         "--web3-port", str(WEB3_PORT), "--profiler-port", "52060",
         "--metrics-port", "52661", "--cometbft-metrics-port", "52660"]
WEB3 = f"http://127.0.0.1:{WEB3_PORT}"
TICKS = os.sysconf("SC_CLK_TCK")
SUBSCRIBE = {"jsonrpc": "2.0", "method": "eth_subscribe", "params": ["newPendingTransactions"]}


def feth(args):
    return subprocess.run([FETH] + args, check=True, capture_output=True, text=True)


def post(body, timeout=120):
    request = urllib.request.Request(WEB3, data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return json.loads(answer.read())


def call(method, params):
    return post({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})["result"]


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class WebSocket:
    """The least of RFC 6455 a JSON-RPC client needs: text frames out
    (masked), whole frames in."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                           "Sec-WebSocket-Version: 13\r\n\r\n").encode())
        self.buf = bytearray()
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, _, rest = bytes(self.buf).partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise RuntimeError(f"no WebSocket: {head[:200]!r}")
        self.buf = bytearray(rest)

    def _fill(self):
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise EOFError("closed")
        self.buf += chunk

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        out = bytes(self.buf[:n])
        del self.buf[:n]
        return out

    def send(self, obj):
        data = json.dumps(obj).encode()
        mask = os.urandom(4)
        n = len(data)
        if n < 126:
            head = bytes([0x81, 0x80 | n])
        elif n < 65536:
            head = bytes([0x81, 0x80 | 126]) + struct.pack(">H", n)
        else:
            head = bytes([0x81, 0x80 | 127]) + struct.pack(">Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(head + mask + masked)

    def recv(self):
        while True:
            b0, b1 = self._take(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._take(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._take(8))[0]
            payload = self._take(n)
            op = b0 & 0x0F
            if op == 8:
                raise EOFError("closed by the server")
            if op in (0, 1, 2):
                return json.loads(payload)


def subscribe_many(ws, count):
    """Asks `count` subscriptions, 500 at a time; (granted, the refusals'
    distinct messages)."""
    granted, refusals = 0, set()
    for start in range(0, count, 500):
        n = min(500, count - start)
        for i in range(n):
            ws.send(dict(SUBSCRIBE, id=start + i))
        for _ in range(n):
            answer = ws.recv()
            if "result" in answer:
                granted += 1
            else:
                refusals.add(answer.get("error", {}).get("message"))
    return granted, sorted(refusals)


def drain(ws, seen):
    try:
        while True:
            if ws.recv().get("method") == "eth_subscription":
                seen[0] += 1
    except (EOFError, OSError):
        pass


def burst(status, pid, seen):
    """Sends 150 transfers and waits for them; (abcid CPU s, wall s)."""
    cpu0, t0 = cpu_seconds(pid), time.time()
    feth(["send", "--network", WEB3, "--key-file", status["root_key"], "--count", "150"])
    # Notifications still queued are abcid's work too: until they stop.
    last = -1
    while seen[0] != last:
        last = seen[0]
        time.sleep(0.5)
    return round(cpu_seconds(pid) - cpu0, 2), round(time.time() - t0, 2)


def subscriptions(status, pid):
    quiet = burst(status, pid, [0])
    sockets, granted, refusals, seen = [], 0, [], [0]
    for _ in range(3):
        try:
            ws = WebSocket(WEB3_PORT)
        except (RuntimeError, OSError) as refused:
            refusals.append([str(refused)[:160]])
            continue
        sockets.append(ws)
        g, r = subscribe_many(ws, 10_240)
        granted += g
        refusals.append(r)
        threading.Thread(target=drain, args=(ws, seen), daemon=True).start()
    flooded = burst(status, pid, seen)
    for ws in sockets:
        ws.sock.close()
    return {"vector": "subscriptions", "asked": 3 * 10_240, "granted": granted,
            "refusals": refusals, "quiet_cpu_s": quiet[0], "quiet_wall_s": quiet[1],
            "flooded_cpu_s": flooded[0], "flooded_wall_s": flooded[1],
            "notifications_read": seen[0]}


def biggest_and_small(top):
    best = (0, None)
    for n in range(1, top + 1):
        block = call("eth_getBlockByNumber", [hex(n), False])
        if len(block["transactions"]) > best[0]:
            best = (len(block["transactions"]), block)
    return best[1]


def median_receipt_ms(tx, calls=200):
    times = []
    for _ in range(calls):
        t0 = time.perf_counter()
        assert call("eth_getTransactionReceipt", [tx]) is not None
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 3)


def batches_under_probe(pid, hashes):
    stop, worst = threading.Event(), [0.0]

    def probe():
        while not stop.is_set():
            t0 = time.perf_counter()
            call("eth_blockNumber", [])
            worst[0] = max(worst[0], time.perf_counter() - t0)
            time.sleep(0.02)

    def batch(part):
        body = [{"jsonrpc": "2.0", "id": i, "method": "eth_getTransactionReceipt", "params": [h]}
                for i, h in enumerate(part)]
        answers = post(body)
        assert all(a.get("result") for a in answers), "every receipt answered"

    prober = threading.Thread(target=probe)
    prober.start()
    cpu0, t0 = cpu_seconds(pid), time.time()
    parts = [hashes[i * 1000:(i + 1) * 1000] for i in range(4)]
    workers = [threading.Thread(target=batch, args=(p,)) for p in parts]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall, cpu = time.time() - t0, cpu_seconds(pid) - cpu0
    stop.set()
    prober.join()
    return {"batches_wall_s": round(wall, 2), "batches_cpu_s": round(cpu, 2),
            "worst_probe_ms": round(worst[0] * 1000, 1)}


def receipts(status, pid, home):
    keys = os.path.join(home, "keys.txt")
    feth(["fund", "--network", WEB3, "--count", "500", "--amount", "1eth", "--out", keys,
          "--root-key", status["root_key"], "--seed", "floods"])
    feth(["load", "--network", WEB3, "--keys", keys, "--rate", "3000", "--duration", "15",
          "--quiet"])
    feth(["send", "--network", WEB3, "--key-file", status["root_key"], "--count", "5"])
    top = int(call("eth_blockNumber", []), 16)
    big = biggest_and_small(top)
    small = call("eth_getBlockByNumber", [hex(top), False])
    while not small["transactions"]:
        small = call("eth_getBlockByNumber", [hex(int(small["number"], 16) - 1), False])
    out = {"vector": "receipts", "big_block_txs": len(big["transactions"]),
           "small_block_txs": len(small["transactions"]),
           "receipt_ms_big": median_receipt_ms(big["transactions"][-1]),
           "receipt_ms_small": median_receipt_ms(small["transactions"][-1])}
    hashes = (big["transactions"] * 4)[:4000]
    out.update(batches_under_probe(pid, hashes))
    return out


def devnet(timeout_commit, measure):
    with tempfile.TemporaryDirectory(dir="/dev/shm") as d:
        home = os.path.join(d, "net")
        status = json.loads(feth(["devnet", "up", "--fresh", "--json", "--dir", home,
                                  "--timeout-commit", timeout_commit, "--patches", PATCHES]
                                 + PORTS).stdout)
        try:
            while int(call("eth_blockNumber", []), 16) < 5:
                time.sleep(0.5)
            pid = process_pid(home, "abcid")
            return measure(status, pid, d)
        finally:
            feth(["devnet", "down", "--dir", home])


def main():
    sub = devnet("500ms", lambda status, pid, _: subscriptions(status, pid))
    print(json.dumps(sub), flush=True)
    rec = devnet("2s", receipts)
    print(json.dumps(rec), flush=True)
    print(f"\nFETH={FETH}, patches {PATCHES}")
    print(f"subscriptions: {sub['granted']} of {sub['asked']} granted (refused: {sub['refusals']}); "
          f"150 transfers cost abcid {sub['quiet_cpu_s']} CPU-s / {sub['quiet_wall_s']} s "
          f"without subscribers, {sub['flooded_cpu_s']} CPU-s / {sub['flooded_wall_s']} s "
          f"with them ({sub['notifications_read']} notifications read)")
    print(f"receipts: {rec['receipt_ms_big']} ms in a {rec['big_block_txs']}-transaction block, "
          f"{rec['receipt_ms_small']} ms in a {rec['small_block_txs']}-transaction block; "
          f"4 batches of 1,000: {rec['batches_wall_s']} s, {rec['batches_cpu_s']} CPU-s, "
          f"worst eth_blockNumber {rec['worst_probe_ms']} ms")


if __name__ == "__main__":
    main()
