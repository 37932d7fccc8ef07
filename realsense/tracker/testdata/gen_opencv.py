#!/usr/bin/env python3
"""Generates the OpenCV reference data of the tracker package's tests.

Usage: python3 gen_opencv.py [OUTDIR]   (default: the directory of this script)

Needs opencv-python-headless and numpy. Writes:

hsv_all.sha256
    SHA-256 of the HSV image cv2.cvtColor(COLOR_BGR2HSV) gives for all 2^24
    BGR colours, 3 bytes (H, S, V) per colour, colours in the order of the
    index b<<16 | g<<8 | r (b is the outer loop, then g, r the inner loop).

scene_NAME.bin.gz
    One synthetic scene (seeded numpy RNG), gzip-compressed with mtime 0:
    a 4-byte little-endian header length, a JSON header, then the arrays the
    header lists (name, dtype u8 or u16le, shape, offset from the end of the
    header, size in bytes):
      bgr      H×W×3 BGR8 input
      depth    H×W Z16 depth in mm
      hsv      cv2.cvtColor(bgr, COLOR_BGR2HSV)
      mask     cv2.inRange(hsv, lower, upper), emioapi's default bounds
      dmask    mask AND cv2.inRange(depth, depth_lo, depth_hi) (the bridge's 0–1000)
      dmask_default  the same with emioapi's default depth range 2–430
      erode_E, dilate_E, open_E for erosion sizes E in 0, 1, 3, 5, on dmask,
               as emioapi: kernel cv2.getStructuringElement(MORPH_RECT,
               (2E+1, 2E+1), (E, E)), cv2.erode(..., iterations=3), then
               cv2.dilate(..., iterations=3) for the opening.
"""
import gzip
import hashlib
import json
import os
import struct
import sys

import cv2
import numpy as np

W, H = 320, 240
LOWER = np.array([36, 138, 35], np.uint8)
UPPER = np.array([90, 255, 255], np.uint8)
SIZES = (0, 1, 3, 5)


def hsv_all_hash():
    idx = np.arange(1 << 24, dtype=np.uint32)
    img = np.empty((4096, 4096, 3), np.uint8)
    flat = img.reshape(-1, 3)
    flat[:, 0] = (idx >> 16) & 255
    flat[:, 1] = (idx >> 8) & 255
    flat[:, 2] = idx & 255
    hsv = cv2.cvtColor(img, cv2.COLOR_BGR2HSV)
    return hashlib.sha256(hsv.tobytes()).hexdigest()


def green(rng, n):
    """n noisy marker greens (BGR), some of them outside the thresholds."""
    base = np.array([40, 200, 40], np.int32)
    return np.clip(base + rng.normal(0, 30, (n, 3)), 0, 255).astype(np.uint8)


def disk(img, rng, cx, cy, r):
    cv2.circle(img, (int(cx), int(cy)), int(r), (40, 200, 40), -1)
    m = np.zeros(img.shape[:2], np.uint8)
    cv2.circle(m, (int(cx), int(cy)), int(r), 255, -1)
    ys, xs = np.nonzero(m)
    img[ys, xs] = green(rng, len(ys))


def depth_image(rng, holes=True):
    d = (400 + rng.integers(-30, 30, (H, W))).astype(np.int32)
    # Values at and around every bound: 0, 2, 430 and 1000.
    specials = np.array([0, 1, 2, 3, 429, 430, 431, 999, 1000, 1001, 65535])
    pick = rng.random((H, W)) < 0.15
    d[pick] = rng.choice(specials, pick.sum())
    d[10:60, 200:300] = 1500  # out of range for the bridge
    if holes:
        for _ in range(6):
            x, y = rng.integers(0, W), rng.integers(0, H)
            cv2.circle(d, (int(x), int(y)), int(rng.integers(3, 15)), 0, -1)
    return d.astype(np.uint16)


def scene_blobs(rng):
    img = np.clip(110 + rng.normal(0, 12, (H, W, 3)), 0, 255).astype(np.uint8)
    for cx, cy, r in [(60, 60, 20), (150, 70, 16), (250, 150, 12), (90, 180, 8), (180, 200, 4)]:
        disk(img, rng, cx, cy, r)
    cv2.circle(img, (200, 110), 18, (40, 40, 220), -1)  # red: never a marker
    for cx, cy, r in [(0, 0, 10), (W - 1, 120, 9), (160, H - 1, 7), (W - 1, H - 1, 12), (0, 130, 5)]:
        disk(img, rng, cx, cy, r)  # touching the border
    d = depth_image(rng)
    # Clean solid blocks that survive large erosions; two touch the border.
    for x0, y0, x1, y1 in [(0, 150, 70, 240), (250, 60, 320, 115), (100, 100, 170, 160)]:
        img[y0:y1, x0:x1] = (40, 200, 40)
        d[y0:y1, x0:x1] = 400
    img[120:130, 130:140] = (40, 40, 220)  # a hole in the middle block
    return img, d


def scene_noise(rng):
    img = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    for cx, cy, r in [(70, 70, 20), (220, 120, 14), (140, 190, 9)]:
        disk(img, rng, cx, cy, r)
    d = depth_image(rng)
    d[:, :] = np.where(rng.random((H, W)) < 0.5, d, 0)
    return img, d


def scene_lines(rng):
    img = np.clip(90 + rng.normal(0, 20, (H, W, 3)), 0, 255).astype(np.uint8)
    for i in range(12):
        p0 = (int(rng.integers(0, W)), int(rng.integers(0, H)))
        p1 = (int(rng.integers(0, W)), int(rng.integers(0, H)))
        cv2.line(img, p0, p1, (40, 200, 40), int(rng.integers(1, 4)))
    cv2.rectangle(img, (0, 0), (W - 1, H - 1), (30, 180, 30), 2)  # the whole border
    img[120, :] = (40, 200, 40)  # one full row
    img[:, 77] = (40, 200, 40)  # one full column
    for x in range(5, W, 7):
        img[5, x] = (40, 200, 40)  # isolated pixels
    d = depth_image(rng, holes=True)
    cv2.ellipse(img, (160, 0), (90, 50), 0, 0, 360, (40, 200, 40), -1)  # cut by the top border
    cv2.ellipse(d, (160, 0), (90, 50), 0, 0, 360, 400, -1)
    return img, d


def scene_bounds(rng):
    """Colours at and around every threshold, including hue wrap-around."""
    hsv = np.empty((H, W, 3), np.uint8)
    hsv[..., 0] = rng.choice([0, 1, 34, 35, 36, 37, 89, 90, 91, 92, 178, 179], (H, W))
    hsv[..., 1] = rng.choice([0, 136, 137, 138, 139, 254, 255], (H, W))
    hsv[..., 2] = rng.choice([0, 33, 34, 35, 36, 254, 255], (H, W))
    img = cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR)
    noise = rng.integers(-2, 3, img.shape)
    img = np.clip(img.astype(np.int32) + noise, 0, 255).astype(np.uint8)
    for cx, cy, r in [(50, 50, 25), (260, 190, 30)]:
        disk(img, rng, cx, cy, r)
    return img, depth_image(rng)


SCENES = [("blobs", scene_blobs, 1), ("noise", scene_noise, 2), ("lines", scene_lines, 3), ("bounds", scene_bounds, 4)]


def outputs(bgr, depth):
    hsv = cv2.cvtColor(bgr, cv2.COLOR_BGR2HSV)
    mask = cv2.inRange(hsv, LOWER, UPPER)
    dmask = cv2.bitwise_and(mask, cv2.inRange(depth, 0, 1000))
    dmask_default = cv2.bitwise_and(mask, cv2.inRange(depth, 2, 430))
    out = [("bgr", bgr), ("depth", depth), ("hsv", hsv), ("mask", mask), ("dmask", dmask), ("dmask_default", dmask_default)]
    for e in SIZES:
        k = cv2.getStructuringElement(cv2.MORPH_RECT, (2 * e + 1, 2 * e + 1), (e, e))
        er = cv2.erode(dmask, k, iterations=3)
        di = cv2.dilate(dmask, k, iterations=3)
        op = cv2.dilate(er, k, iterations=3)
        out += [("erode_%d" % e, er), ("dilate_%d" % e, di), ("open_%d" % e, op)]
    return out


def write_scene(path, name, arrays):
    header = {"name": name, "width": W, "height": H, "lower": LOWER.tolist(), "upper": UPPER.tolist(),
              "depth_lo": 0, "depth_hi": 1000, "depth_default_lo": 2, "depth_default_hi": 430,
              "opencv": cv2.__version__, "arrays": []}
    blobs, off = [], 0
    for n, a in arrays:
        if a.dtype == np.uint16:
            b, dt = a.astype("<u2").tobytes(), "u16le"
        else:
            b, dt = a.astype(np.uint8).tobytes(), "u8"
        header["arrays"].append({"name": n, "dtype": dt, "shape": list(a.shape), "offset": off, "size": len(b)})
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, sort_keys=True).encode()
    with open(path, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", mtime=0, compresslevel=9) as z:
        z.write(struct.pack("<I", len(h)))
        z.write(h)
        for b in blobs:
            z.write(b)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(out, "hsv_all.sha256"), "w") as f:
        f.write(hsv_all_hash() + "\n")
    for name, fn, seed in SCENES:
        rng = np.random.default_rng(seed)
        bgr, depth = fn(rng)
        write_scene(os.path.join(out, "scene_%s.bin.gz" % name), name, outputs(bgr, depth))


if __name__ == "__main__":
    main()
