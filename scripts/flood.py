#!/usr/bin/env python3
"""flood.py ADDR [idle|slowloris] [N] [SECONDS]: N connections to the metrics
server at ADDR (host:port), idle or sending a request header one byte a
second (slowloris), each one the server closes dialed again within a
second, while /healthz and /status.json are asked once a second on fresh
connections. Prints, per path, the answers by status (a 503 from the
server's connection limit apart from the link's health) and the polls
dropped (reset, EOF, timeout), with the answer times. Needs `ulimit -n`
above N."""
import socket, sys, threading, time, urllib.request, urllib.error

addr, mode = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "idle")
n, secs = int(sys.argv[3]) if len(sys.argv) > 3 else 20000, float(sys.argv[4]) if len(sys.argv) > 4 else 60
host, port = addr.rsplit(":", 1)
socks, sent, stop, redials = [], set(), threading.Event(), [0]

def dial():
    s = socket.socket()
    s.setblocking(False)
    try:
        s.connect((host, int(port)))
    except BlockingIOError:
        pass
    except OSError:
        s.close(); return None
    return s

def closed(s):
    try:
        return s.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True

def flood():
    for i in range(n):
        if stop.is_set():
            return
        socks.append(dial())
    while not stop.wait(1.0):  # redial what the server closed; a byte a second on each slow one
        for i, s in enumerate(socks):
            if s is None or closed(s):
                if s is not None:
                    s.close()
                socks[i] = dial(); sent.discard(i); redials[0] += 1
                continue
            if mode == "slowloris":
                try:
                    s.send(b"a" if i in sent else b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: a")
                    sent.add(i)
                except OSError:
                    pass

def poll(path, out):
    while not stop.is_set():
        t0 = time.monotonic()
        try:
            with urllib.request.urlopen(f"http://{addr}{path}", timeout=10) as r:
                r.read(); out.append(("answered", r.status, time.monotonic() - t0))
        except urllib.error.HTTPError as e:
            body = e.read().decode(errors="replace")
            code = "503 limit" if "too many" in body else e.code
            out.append(("answered", code, time.monotonic() - t0))
        except Exception as e:
            why = getattr(e, "reason", e)
            out.append(("dropped", f"{type(e).__name__}: {why}"[:60], time.monotonic() - t0))
        stop.wait(max(0, 1 - (time.monotonic() - t0)))

res = {"/healthz": [], "/status.json": []}
th = [threading.Thread(target=flood)] + [threading.Thread(target=poll, args=(p, r)) for p, r in res.items()]
for t in th: t.start()
time.sleep(secs); stop.set()
for t in th: t.join()
for p, r in res.items():
    ans = [x for x in r if x[0] == "answered"]
    codes = {}
    for x in r: codes[x[1]] = codes.get(x[1], 0) + 1
    ts = sorted(x[2] for x in ans) or [0]
    print(f"{mode} {n}: {p}: {len(ans)}/{len(r)} answered {codes}, answer time p50 {ts[len(ts)//2]*1e3:.0f} ms max {ts[-1]*1e3:.0f} ms")
print(f"{mode} {n}: redialed {redials[0]} connections the server closed")
for s in socks:
    if s is not None: s.close()
