"""Print, as JSON, what pyrealsense2 reads from a .bag recording.

Usage: python3 playback_reference.py FILE.bag

Output: the colour and depth intrinsics of the started pipeline, the depth scale of the
recording's depth sensor, and the frame numbers, timestamps and a few pixel values of the
framesets played back once (not looped, not in real time). The Go tests compare the binding's
results with these.
"""

import json
import sys

import pyrealsense2 as rs


def intrinsics(profile):
    i = profile.as_video_stream_profile().get_intrinsics()
    return {
        "width": i.width,
        "height": i.height,
        "ppx": i.ppx,
        "ppy": i.ppy,
        "fx": i.fx,
        "fy": i.fy,
        "model": int(i.model),
        "coeffs": list(i.coeffs),
    }


def main():
    pipe = rs.pipeline()
    cfg = rs.config()
    cfg.enable_device_from_file(sys.argv[1], repeat_playback=False)
    cfg.enable_stream(rs.stream.color)
    cfg.enable_stream(rs.stream.depth)
    prof = pipe.start(cfg)
    dev = prof.get_device()
    dev.as_playback().set_real_time(False)
    out = {"framesets": []}
    for s in prof.get_streams():
        if s.stream_type() == rs.stream.color:
            out["color"] = intrinsics(s)
            out["color_format"] = int(s.format())
        elif s.stream_type() == rs.stream.depth:
            out["depth"] = intrinsics(s)
            out["depth_format"] = int(s.format())
    for sensor in dev.query_sensors():
        if sensor.is_depth_sensor():
            out["depth_scale"] = sensor.as_depth_sensor().get_depth_scale()
            break
    while True:
        ok, fs = pipe.try_wait_for_frames(2000)
        if not ok:
            break
        d, c = fs.get_depth_frame(), fs.get_color_frame()
        if not d or not c:
            continue
        dd = memoryview(d.get_data()).tolist()
        cd = memoryview(c.get_data()).tolist()
        w, h = d.get_width(), d.get_height()
        out["framesets"].append({
            "depth_number": d.get_frame_number(),
            "color_number": c.get_frame_number(),
            "depth_timestamp": d.get_timestamp(),
            "depth_units": d.get_units(),
            "depth_center": int(dd[h // 2][w // 2]),
            "depth_sum": int(sum(int(v) for row in dd for v in row)),
            "color_center_rgb": [int(v) for v in cd[h // 2][w // 2]],
        })
    pipe.stop()
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
