"""Run the seed tutorial's Python AZ client against a scene and time it.

The client is extracted from the seed document at run time (it is not part of
this repository), pointed at the scene's address, paced at the period asked
(0: back to back), stopped after N exchanges, and timed from the creation of
each exchange's socket to its close: the whole exchange, as the bridge's own
client is timed. Prints one JSON object.

usage: python3 seedclient.py SEED_FILE HOST:PORT N [PERIOD_S]
"""
import builtins
import json
import re
import socket as _socket
import sys
import time
import types


class Done(BaseException):
    """Raised by the print hook after N exchanges; the seed's bare excepts
    never see it, as it is raised outside their try bodies."""


def main():
    seed, addr, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    period = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    host, port = addr.rsplit(":", 1)
    with open(seed, encoding="utf-8", errors="replace") as f:
        text = f.read()
    blocks = re.findall(r"<code python>\n(.*?)</code>", text, re.S)
    src = next((b for b in blocks if "struct.pack('<BBff'" in b), None)
    if src is None:
        sys.exit("no AZ client in " + seed)
    src, k = re.subn(r"\('localhost',\s*33211\)", "(%r, %d)" % (host, int(port)), src)
    src, m = re.subn(r"loop_duration = [0-9.]+", "loop_duration = %r" % period, src)
    if k != 1 or m != 1:
        sys.exit("the seed's client changed: address or period not found")

    rtts, lines = [], []
    counts = {"good": 0, "bad": 0, "other": 0}

    class TimedSocket(_socket.socket):
        def __init__(self, *a, **kw):
            self._t0 = time.perf_counter_ns()
            super().__init__(*a, **kw)

        def close(self):
            super().close()
            rtts.append(time.perf_counter_ns() - self._t0)

    shim = types.ModuleType("socket")
    shim.__dict__.update(_socket.__dict__)
    shim.socket = TimedSocket

    def hook(*args, **kw):
        line = " ".join(str(a) for a in args)
        if len(lines) < 5:
            lines.append(line)
        if line.startswith("sockect time="):
            counts["good"] += 1
        elif "bad data" in line:
            counts["bad"] += 1
        else:
            counts["other"] += 1
            lines.append(line)
        if counts["good"] + counts["bad"] >= n:
            raise Done()

    sys.modules["socket"] = shim
    sys.argv = ["simple_robot_control.py", "0.5", "-0.5"]
    env = {"__name__": "__seed__", "print": hook}
    start = time.perf_counter()
    try:
        exec(compile(src, "seed:simple_robot_control.py", "exec"), env)
    except Done:
        pass
    finally:
        sys.modules["socket"] = _socket
    seconds = time.perf_counter() - start
    builtins.print(json.dumps({"rtt_ns": rtts[:counts["good"] + counts["bad"]], "lines": lines[:20], "seconds": seconds, **counts}))


main()
