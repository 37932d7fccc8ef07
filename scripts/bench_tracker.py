#!/usr/bin/env python3
"""Compare the pure-Go marker tracker with emioapi's OpenCV pipeline.

The Go test TestWriteFrames (realsense/tracker/frames_test.go) writes the
benchmark scenes of docs/realsense.md §10 (848x480: clean, emio, stress) as
raw frames. This script times emioapi's per-frame tracking on them with
OpenCV on one thread (cvtColor BGR2HSV, inRange on HSV and on depth,
bitwise_and, findContours RETR_EXTERNAL/CHAIN_APPROX_SIMPLE, contourArea >
100, moment centroids, depth at the centroid or the median of the filled
contour's non-zero depths, pixel to mm deprojection), runs the Go
BenchmarkFrame (Tracker.Process) on the same scenes, and prints per scene
the OpenCV and Go medians, their ratio, and whether both found the same
markers (px, py, area, depth). It then times each Process call
(TestFrameTimes, --tail-frames frames per scene after 10 untimed, the
garbage collector running as usual) and prints the Go tracker's p99 and max
per frame and max/p99, on the wall clock, on the thread's CPU clock (which
leaves out the time other processes held the core) and on the wall clock of
the frames during which the thread was never switched out ("run", with how
many frames were), each the median of --count runs, with the load average
before and after. A wall-clock max far above p99 while "run" stays close is
the time other work held the core, not the tracker's.

Usage, from anywhere in the repository:

    python3 scripts/bench_tracker.py [--frames 200] [--warmup 10]
                                     [--benchtime 2s] [--count 5]
                                     [--tail-frames 1000]

It needs Go and python3 with OpenCV and numpy; without cv2 it says how to
install it and exits 0, or 1 under CI (CI=true), where OpenCV is installed
and its absence means the comparison did not run.
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import emio_reference  # beside this script

SCENES = ["clean", "emio", "stress"]
W, H = 848, 480
# emioapi's default parameters and the bridge's depth range
# (docs/realsense.md §8.2), as DefaultParams and BridgeDepthMin/Max.
PARAMS = {"hue_l": 36, "hue_h": 90, "sat_l": 138, "sat_h": 255, "value_l": 35, "value_h": 255,
          "erosion_size": 0, "area": 100}
DEPTH_MIN, DEPTH_MAX = 0, 1000
# The intrinsics of frameConfig in realsense/tracker/frames_test.go.
PPX, PPY, FX, FY = 424.5, 240.25, 421.75, 421.75

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = "./realsense/tracker/"


def write_frames(d):
    env = dict(os.environ, BRIDGE_TRACKER_FRAMES=d)
    subprocess.run(
        ["go", "test", "-count=1", "-run", "^TestWriteFrames$", PKG],
        cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)


def load(d, name, np):
    bgr = np.fromfile(os.path.join(d, name + ".bgr"), dtype=np.uint8).reshape(H, W, 3)
    depth = np.fromfile(os.path.join(d, name + ".z16"), dtype="<u2").reshape(H, W)
    go = []
    with open(os.path.join(d, name + ".markers")) as f:
        for line in f:
            px, py, area, dz = line.split()
            go.append((int(px), int(py), float(area), float(dz)))
    return bgr, depth, go


def track(cv2, np, frame, depth):
    """emioapi's process_frame tracking on one scene frame."""
    return emio_reference.track(cv2, np, frame, depth, PARAMS, DEPTH_MIN, DEPTH_MAX, (PPX, PPY, FX, FY))


def time_opencv(cv2, np, frame, depth, frames, warmup):
    for _ in range(warmup):
        track(cv2, np, frame, depth)
    ts = []
    for _ in range(frames):
        t0 = time.perf_counter()
        track(cv2, np, frame, depth)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def time_go(benchtime, count):
    r = subprocess.run(
        ["go", "test", "-run", "^$", "-bench", "^BenchmarkFrame$",
         "-benchtime", benchtime, "-count", str(count), PKG],
        cwd=REPO, check=True, capture_output=True, text=True)
    runs = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^BenchmarkFrame/(\w+)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op", line)
        if m:
            runs.setdefault(m.group(1), []).append(float(m.group(2)) / 1e6)
    return {k: statistics.median(v) for k, v in runs.items()}


def time_go_frames(frames, count):
    """{(clock, scene): {"p50": [...], "p99": [...], "max": [...]}} in ms, one
    entry per run of TestFrameTimes."""
    env = dict(os.environ, BRIDGE_TRACKER_TIMES=str(frames))
    r = subprocess.run(
        ["go", "test", "-v", "-run", "^TestFrameTimes$", "-count", str(count), PKG],
        cwd=REPO, env=env, check=True, capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        if line.startswith("frametimes "):
            row = json.loads(line.split(" ", 1)[1])
            d = out.setdefault((row["clock"], row["scene"]), {"p50": [], "p99": [], "max": [], "ratio": [], "switched": []})
            if row["p99_ms"] <= 0:
                continue  # no frame ran unswitched
            d["switched"].append(row.get("switched_frames", 0))
            d["p50"].append(row["median_ms"])
            d["p99"].append(row["p99_ms"])
            d["max"].append(row["max_ms"])
            d["ratio"].append(row["max_ms"] / row["p99_ms"])
    return out


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "n/a"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=200, help="timed OpenCV frames per scene")
    ap.add_argument("--warmup", type=int, default=10, help="untimed OpenCV frames first")
    ap.add_argument("--benchtime", default="2s", help="go test -benchtime")
    ap.add_argument("--count", type=int, default=5, help="go test -count (the median is kept)")
    ap.add_argument("--tail-frames", type=int, default=1000, help="timed Go frames per scene and run for p99 and max")
    args = ap.parse_args()
    try:
        import cv2
        import numpy as np
    except ImportError as e:
        print(f"bench_tracker: OpenCV for Python is not available ({e}); install it with\n"
              "  pip install opencv-python-headless numpy\n"
              "or\n"
              "  apt-get install python3-opencv\n"
              "and run this script again.")
        return 1 if os.environ.get("CI") == "true" else 0
    cv2.setNumThreads(1)
    load_before = load_average()

    with tempfile.TemporaryDirectory(prefix="bench_tracker_") as d:
        write_frames(d)
        scenes = {name: load(d, name, np) for name in SCENES}
    rows, same_all = [], True
    for name in SCENES:
        frame, depth, go = scenes[name]
        cv, ncont = track(cv2, np, frame, depth)
        cvm = [(x, y, a, dz) for x, y, a, dz, _, _ in cv]
        same = cvm == go
        same_all &= same
        ms = time_opencv(cv2, np, frame, depth, args.frames, args.warmup)
        rows.append([name, ncont, len(cv), same, ms, cvm, go])
    gos = time_go(args.benchtime, args.count)
    tails = time_go_frames(args.tail_frames, args.count)
    load_after = load_average()

    print(f"OpenCV {cv2.__version__} (1 thread, median of {args.frames} frames) vs Go "
          f"BenchmarkFrame (Tracker.Process, median of {args.count} runs), {W}x{H}")
    print(f"{'scene':8} {'contours':>8} {'markers':>7} {'OpenCV ms':>10} {'Go ms':>8} {'ratio':>7}  same markers")
    for name, ncont, nm, same, ms, cvm, go in rows:
        g = gos.get(name)
        gs = f"{g:8.3f}" if g is not None else f"{'n/a':>8}"
        ratio = f"{ms / g:6.1f}x" if g else f"{'n/a':>7}"
        print(f"{name:8} {ncont:8d} {nm:7d} {ms:10.3f} {gs} {ratio}  {'yes' if same else 'NO'}")
    print(f"Go per frame (TestFrameTimes, {args.tail_frames} frames per scene after 10 untimed, GC on; "
          f"median of {args.count} runs): p50, p99, max in ms, and max/p99")
    print(f"{'scene':8} {'clock':5} {'p50':>7} {'p99':>7} {'max':>8} {'max/p99':>7}")
    for name in SCENES:
        for clock in ("wall", "cpu", "run"):
            d = tails.get((clock, name))
            if d is None or not d["p50"]:
                continue
            med = {k: statistics.median(v) for k, v in d.items()}
            note = (f"  ({med['switched']:.0f} of {args.tail_frames} frames switched out, left out)"
                    if clock == "run" else "")
            print(f"{name:8} {clock:5} {med['p50']:7.3f} {med['p99']:7.3f} {med['max']:8.3f} {med['ratio']:6.2f}x{note}")
    print(f"load average (1, 5, 15 min) before {load_before}, after {load_after}, on {os.cpu_count()} CPUs")
    for name, _, _, same, _, cvm, go in rows:
        if not same:
            print(f"{name}: OpenCV markers (px, py, area, depth) {cvm}")
            print(f"{name}: Go markers                          {go}")
    print("both found the same markers (px, py, area, depth) on every scene" if same_all
          else "MISMATCH: OpenCV and Go markers differ (see above)")
    return 0 if same_all else 1


if __name__ == "__main__":
    sys.exit(main())
