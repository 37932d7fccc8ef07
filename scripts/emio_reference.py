"""emioapi's per-frame marker tracking, with OpenCV and numpy: the reference
the Go tracker is compared with (realsense/tracker/tracker_opencv_test.go)
and timed against (scripts/bench_tracker.py).

The core of DepthCamera.process_frame (docs/realsense.md §8.2): HSV
threshold, depth threshold, opening with erosion_size, external contours,
contourArea > area, moment centroid, depth at the centroid or the median of
the non-zero depths inside the filled contour, deprojection with the depth
intrinsics, then the calibrated pose R·p + t when given.
"""


def track(cv2, np, frame, depth, params, dmin, dmax, intr, R=None, t=None):
    """Returns ([(px, py, area, depth, camera_point, world_point)], contours).

    params is emioapi's cameraparameter.json as a dict; intr is
    (ppx, ppy, fx, fy); world_point is None without R and t.
    """
    p = params
    hsv = cv2.cvtColor(frame, cv2.COLOR_BGR2HSV)
    mask = cv2.inRange(hsv, np.array([p["hue_l"], p["sat_l"], p["value_l"]]),
                       np.array([p["hue_h"], p["sat_h"], p["value_h"]]))
    mask = cv2.bitwise_and(mask, cv2.inRange(depth, dmin, dmax))
    e = p["erosion_size"]
    if e > 0:
        k = cv2.getStructuringElement(cv2.MORPH_RECT, (2 * e + 1, 2 * e + 1), (e, e))
        mask = cv2.erode(mask, k, iterations=3)
        mask = cv2.dilate(mask, k, iterations=3)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    ppx, ppy, fx, fy = intr
    out = []
    for c in contours:
        area = cv2.contourArea(c)
        if area <= p["area"]:
            continue
        m = cv2.moments(c)
        if m["m00"] != 0:
            cx, cy = int(m["m10"] / m["m00"]), int(m["m01"] / m["m00"])
        else:
            cx, cy = 0, 0
        dz = depth[cy, cx]
        if dz == 0:
            cm = np.zeros(mask.shape, np.uint8)
            cv2.drawContours(cm, [c], -1, 255, -1)
            vals = depth[(cm == 255) & (depth > 0)]
            dz = np.median(vals) if len(vals) else 0
        dz = float(dz)
        pc = np.array([(cx - ppx) / fx * dz, (cy - ppy) / fy * dz, dz])  # pixels_to_mm
        pw = None
        if R is not None:
            pw = R @ pc
            pw += t
        out.append((cx, cy, float(area), dz, pc, pw))
    return out, len(contours)
