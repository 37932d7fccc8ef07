#!/usr/bin/env python3
"""http_load.py ADDR [CLIENTS] [SECONDS] [PATHS]: CLIENTS keep-alive clients
(default 500), each asking the server at ADDR (host:port) for the next of
PATHS (comma-separated; default every endpoint of the status page and the
metrics server: /, /status.json, /healthz, /metrics and the first camera
thumbnail /status.json names) as fast as it answers, for SECONDS (default
60). A client whose connection is closed dials again. Prints the answers by
path and status, the failures (reset, EOF, timeout) and the request rate,
so a run of the loops beside it shows what serving costs them
(scripts/http_cost.sh)."""
import collections, http.client, json, sys, threading, time

addr = sys.argv[1]
clients = int(sys.argv[2]) if len(sys.argv) > 2 else 500
secs = float(sys.argv[3]) if len(sys.argv) > 3 else 60
host, port = addr.rsplit(":", 1)


def default_paths():
    paths = ["/", "/status.json", "/healthz", "/metrics"]
    try:
        c = http.client.HTTPConnection(host, int(port), timeout=5)
        c.request("GET", "/status.json")
        r = c.getresponse()
        body = r.read()
        if r.status == 200:
            for link in json.loads(body).get("links", []):
                cam = link.get("camera") or {}
                if cam.get("thumbnail"):
                    paths.append("/" + cam["thumbnail"].lstrip("/"))
                    break
    except (OSError, ValueError, http.client.HTTPException):
        pass
    return paths


paths = sys.argv[4].split(",") if len(sys.argv) > 4 else default_paths()
stop = threading.Event()
lock = threading.Lock()
answers = collections.Counter()
failures = collections.Counter()


def client(i):
    conn = None
    k = i
    while not stop.is_set():
        path = paths[k % len(paths)]
        k += 1
        try:
            if conn is None:
                conn = http.client.HTTPConnection(host, int(port), timeout=10)
            conn.request("GET", path)
            r = conn.getresponse()
            r.read()
            with lock:
                answers[(path, r.status)] += 1
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
            if r.status == 503:
                stop.wait(float(r.getheader("Retry-After", "1")))
        except (OSError, http.client.HTTPException) as e:
            with lock:
                failures[(path, type(e).__name__)] += 1
            if conn is not None:
                conn.close()
            conn = None
            stop.wait(0.1)
    if conn is not None:
        conn.close()


threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
t0 = time.monotonic()
for t in threads:
    t.start()
stop.wait(secs)
stop.set()
for t in threads:
    t.join(timeout=15)
took = time.monotonic() - t0
total = sum(answers.values())
print(f"{clients} clients, {took:.0f} s, {total} answers ({total / took:.0f}/s), {sum(failures.values())} failures")
for (path, status), n in sorted(answers.items()):
    print(f"  {path:<24} {status}  {n}")
for (path, kind), n in sorted(failures.items()):
    print(f"  {path:<24} {kind}  {n}")
