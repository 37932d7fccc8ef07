// Package tracker is the pixel stage of the Emio marker tracker, in pure Go and
// bit-exact with what emioapi computes with OpenCV (docs/realsense.md §8–§9):
//
//   - HSV converts 8-bit BGR to 8-bit HSV exactly as OpenCV's
//     cvtColor(COLOR_BGR2HSV) on 8-bit images (RGB2HSV_b: integer arithmetic
//     with hsv_shift = 12 and the sdiv/hdiv division tables; hue 0–179,
//     saturation and value 0–255);
//   - InRange is cv2.inRange on an HSV image (inclusive bounds, 0/255 mask),
//     with emioapi's default green thresholds in DefaultRange;
//   - AndDepth applies the depth range mask (cv2.inRange on Z16 depth in raw
//     millimetre units, inclusive) and ANDs it into a mask, as emioapi does;
//   - Threshold fuses the three with a 2^24-bit colour table (docs/realsense.md
//     §11): depth first, then one bit lookup per in-range pixel;
//   - Morph is emioapi's opening: cv2.erode then cv2.dilate with a
//     (2e+1)×(2e+1) rectangle anchored at its centre and 3 iterations each,
//     with OpenCV's default morphology border (the outside of the image never
//     erodes and never dilates). At erosion size e = 0 it is a copy.
//
// Every per-frame method works on caller-owned, tightly packed buffers (width
// × height pixels, no row padding) and allocates nothing.
package tracker

import "errors"

// ErrSize reports a width, height or buffer length that does not fit.
var ErrSize = errors.New("tracker: bad size")
