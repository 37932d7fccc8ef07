#!/usr/bin/env python3
"""Generates contour_ref.txt.gz, the OpenCV reference of the contour tests.

Usage: python3 gen_contours.py [OUTDIR]   (default: the directory of this script)

Needs opencv-python-headless and numpy. For each mask it runs
cv2.findContours(mask, RETR_EXTERNAL, CHAIN_APPROX_SIMPLE) and, per contour,
cv2.contourArea and cv2.moments. The gzip-compressed text (mtime 0) holds:

    mask NAME W H SOURCE     SOURCE is "scene:SCENE:ARRAY" (an array of a
                             testdata/scene_*.bin.gz) or "rows" (then H lines
                             of W characters, '#' foreground, '.' background)
    contour NPOINTS AREA M00 M10 M01
    points X Y X Y ...       (every contour's vertices, in OpenCV's order)
    end

Floats are Python repr of the float64 values (shortest round-trip form).
"""
import gzip
import json
import os
import struct
import sys

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
SCENES = ["blobs", "noise", "lines", "bounds"]
ARRAYS = ["open_0", "open_1", "open_3", "open_5", "dmask_default"]


def scene_array(scene, array):
    with gzip.open(os.path.join(HERE, "scene_%s.bin.gz" % scene), "rb") as f:
        b = f.read()
    hl = struct.unpack("<I", b[:4])[0]
    h = json.loads(b[4:4 + hl])
    data = b[4 + hl:]
    for a in h["arrays"]:
        if a["name"] == array:
            raw = data[a["offset"]:a["offset"] + a["size"]]
            return np.frombuffer(raw, np.uint8).reshape(h["height"], h["width"]).copy()
    raise KeyError(array)


def synthetic():
    out = []

    def add(name, m):
        out.append((name, m.astype(np.uint8) * 255))

    add("single", np.array([[1]]))
    add("empty", np.zeros((3, 4)))
    add("full", np.ones((5, 7)))
    m = np.zeros((9, 11))
    m[4, 5] = 1
    m[0, 0] = 1
    m[8, 10] = 1
    m[0, 10] = 1
    add("pixels", m)
    m = np.zeros((20, 24))
    m[2:18, 2:20] = 1
    m[5:15, 5:17] = 0  # a hole
    m[8:12, 8:12] = 1  # a blob in the hole
    m[9:11, 9:11] = 0
    add("nested", m)
    m = np.zeros((16, 16))
    for i in range(12):
        m[2 + i, 1 + i] = 1  # diagonal chain
        m[13 - i, 3 + i] = 1 if i % 3 else 0
    add("diagonals", m)
    m = np.zeros((12, 30))
    m[0, :] = 1
    m[:, 0] = 1
    m[11, 5:25] = 1
    m[3:9, 29] = 1
    m[5, 10:20] = 1
    add("borders", m)
    m = np.zeros((10, 10))
    m[2, 2] = m[3, 3] = m[3, 1] = m[4, 2] = 1  # a diamond around a hole
    m[6, 6] = m[7, 7] = 1
    m[6, 8] = 1
    add("diamond", m)
    m = np.zeros((30, 40), np.uint8)
    cv2.circle(m, (20, 15), 11, 1, -1)
    cv2.circle(m, (20, 15), 5, 0, -1)
    cv2.circle(m, (20, 15), 2, 1, -1)
    cv2.line(m, (0, 29), (39, 0), 1, 1)
    add("ring", m)
    rng = np.random.default_rng(7)
    for i, (hh, ww, p) in enumerate([(17, 23, 0.3), (24, 31, 0.5), (40, 40, 0.7), (9, 64, 0.45)]):
        add("random%d" % i, rng.random((hh, ww)) < p)
    return out


def fmt(x):
    return repr(float(x))


def describe(lines, name, m, source):
    h, w = m.shape
    lines.append("mask %s %d %d %s" % (name, w, h, source))
    if source == "rows":
        for r in m:
            lines.append("".join("#" if v else "." for v in r))
    cs, _ = cv2.findContours(m, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    for c in cs:
        mo = cv2.moments(c)
        lines.append("contour %d %s %s %s %s" % (len(c), fmt(cv2.contourArea(c)), fmt(mo["m00"]), fmt(mo["m10"]), fmt(mo["m01"])))
        lines.append("points " + " ".join("%d %d" % (p[0][0], p[0][1]) for p in c))
    lines.append("end")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    lines = ["opencv " + cv2.__version__]
    for name, m in synthetic():
        describe(lines, name, m, "rows")
    for s in SCENES:
        for a in ARRAYS:
            describe(lines, "%s_%s" % (s, a), scene_array(s, a), "scene:%s:%s" % (s, a))
    with open(os.path.join(out, "contour_ref.txt.gz"), "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=9) as z:
        z.write(("\n".join(lines) + "\n").encode())


if __name__ == "__main__":
    main()
