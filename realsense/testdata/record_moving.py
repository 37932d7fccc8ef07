"""Record a short multi-frame session with the real librealsense2.

A software device (the pattern of Intel's test-record-software-device.py)
with a 640x480 Z16 depth sensor and a 640x480 BGR8 colour sensor, wrapped in
librealsense's recorder. Frame k (numbers 1..N) shows a green disk of
radius 15 px at (200 + 10k, 240) at 300 mm on a grey background at 600 mm.
librealsense 2.59 writes ROS 2 (.db3) recordings; older ones write .bag.

Usage: python3 record_moving.py OUT.db3 N
"""
import sys

import numpy as np
import pyrealsense2 as rs

W, H = 640, 480


def intrinsics():
    i = rs.intrinsics()
    i.width, i.height = W, H
    i.ppx, i.ppy, i.fx, i.fy = 320.0, 240.0, 400.0, 400.0
    i.model = rs.distortion.none
    i.coeffs = [0.0] * 5
    return i


def stream(kind, uid, bpp, fmt):
    v = rs.video_stream()
    v.type, v.index, v.uid = kind, 0, uid
    v.width, v.height, v.fps, v.bpp, v.fmt = W, H, 30, bpp, fmt
    v.intrinsics = intrinsics()
    return v


def main():
    path, n = sys.argv[1], int(sys.argv[2])
    dev = rs.software_device()
    depth_sensor = dev.add_sensor("Depth")
    color_sensor = dev.add_sensor("Color")
    depth_profile = depth_sensor.add_video_stream(stream(rs.stream.depth, 0, 2, rs.format.z16))
    color_profile = color_sensor.add_video_stream(stream(rs.stream.color, 1, 3, rs.format.bgr8))
    depth_sensor.add_read_only_option(rs.option.depth_units, 0.001)
    recorder = rs.recorder(path, dev)
    depth_sensor.open(depth_profile)
    color_sensor.open(color_profile)
    queue = rs.frame_queue(100)
    depth_sensor.start(queue)
    color_sensor.start(queue)
    yy, xx = np.ogrid[:H, :W]
    for k in range(n):
        depth = np.full((H, W), 600, np.uint16)
        color = np.full((H, W, 3), 110, np.uint8)
        disk = (xx - (200 + 10 * k)) ** 2 + (yy - 240) ** 2 <= 15 ** 2
        color[disk] = (40, 200, 40)
        depth[disk] = 300
        for sensor, profile, img, bpp in ((depth_sensor, depth_profile, depth, 2),
                                          (color_sensor, color_profile, color, 3)):
            f = rs.software_video_frame()
            f.pixels = img
            f.stride, f.bpp = W * bpp, bpp
            f.timestamp = k * 1000.0 / 30
            f.domain = rs.timestamp_domain.hardware_clock
            f.frame_number = k + 1
            f.profile = profile.as_video_stream_profile()
            if bpp == 2:
                f.depth_units = 0.001
            sensor.on_video_frame(f)
    for s in (depth_sensor, color_sensor):
        s.stop()
        s.close()
    del recorder  # closes the file
    print("recorded", n, "frames to", path)


if __name__ == "__main__":
    main()
