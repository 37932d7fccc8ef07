package sim

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/labbridge/bridge/realsense/tracker"
)

var (
	// ErrBuffer is returned by Render for a frame or marker buffer of the
	// wrong length.
	ErrBuffer = errors.New("sim: bad buffer size")
	// ErrMarker is returned by Render for a marker coordinate that is NaN or
	// ±Inf.
	ErrMarker = errors.New("sim: bad marker position")
)

// Camera limits: sizes a D4xx stream can have with margin, and noise levels
// up to which a rendered marker is guaranteed to pass emioapi's default HSV
// thresholds (docs/realsense.md §8.2) and a background pixel to fail them.
const (
	maxCameraSide   = 4096
	maxColourNoise  = 10
	maxDepthNoise   = 20
	maxDropout      = 0.5
	maxMarkerRadius = 100
	// maxRenderDepth (mm) is where a marker sphere is far below a pixel and
	// no longer drawn.
	maxRenderDepth = 1e6
	// bridgeDepthMax is the upper bound of the bridge's depth range (0–1000
	// mm): every background pixel stays within it, as on the real bench.
	bridgeDepthMax = 1000
)

// Rendering constants. The marker colour is emioapi's green (BGR 40, 200,
// 40, HSV 60/204/200) shaded by 0.75–1 with a light at the camera; with
// colour noise clipped to ±2.5σ, σ ≤ 10, every marker pixel keeps hue 36–90,
// saturation ≥ 138 and value ≥ 35. The background grey keeps its saturation
// below 138 under the same noise.
const (
	noiseClip   = 2.5
	shadeMin    = 0.75
	tileBits    = 14
	tilePixels  = 1 << tileBits // noise tile length; a power of two for cheap wrapping
	tileMask    = tilePixels - 1
	markerBlue  = 40
	markerGreen = 200
	markerRed   = 40
)

// Background BGR grey of the table and the walls behind the robot.
const (
	backBlue  = 105
	backGreen = 110
	backRed   = 115
)

// CameraConfig describes the virtual RealSense camera.
type CameraConfig struct {
	// Width and Height of both streams, pixels (1..4096).
	Width, Height int
	// FX, FY, PPX, PPY are the depth stream's pinhole intrinsics (pixels).
	// emioapi deprojects colour pixels with the depth intrinsics and no
	// distortion (docs/realsense.md §8.1), so the virtual camera renders
	// colour and depth with them: a tracker using them measures the true
	// positions, up to pixel quantisation.
	FX, FY, PPX, PPY float64
	// Pose is the rotation R (row major) from camera to world coordinates
	// and T the camera origin in world mm: world = R·p_cam + T, the pose
	// emioapi's calibration estimates (docs/realsense.md §8.4). Camera axes
	// are RealSense's: x right, y down, z forward along the optical axis.
	Pose [9]float64
	T    [3]float64
	// MarkerRadius is the radius of the marker spheres (mm).
	MarkerRadius float64
	// Noise is the σ of the colour noise (8-bit levels, 0..10), clipped to
	// ±2.5σ.
	Noise float64
	// DepthNoise is the σ of the depth noise (mm, 0..20), clipped to ±3σ.
	DepthNoise float64
	// Dropout is the fraction of pixels with an invalid (zero) depth, as a
	// D4xx reports where stereo matching fails (0..0.5).
	Dropout float64
	// TableY is the world height (mm) of the plane seen behind the robot,
	// the base it stands on.
	TableY float64
	// FarDepth (mm, 100..1000) is the depth of the pixels whose ray does not
	// meet the table within it: the walls of the lab. Background depth never
	// exceeds it, so the bridge's 0–1000 mm depth range keeps every pixel.
	FarDepth float64
	// Seed makes the noise reproducible: the same Seed, config and marker
	// positions give the same frames.
	Seed uint64
}

// D435 depth intrinsics of the repository's 640×480 recording (float32
// values, widened as librealsense reports them) and typical 848×480 ones.
const (
	d435FX640  = float64(float32(390.43146))
	d435PPX640 = float64(float32(331.38788))
	d435PPY640 = float64(float32(242.18735))
	d435FX848  = 426.0
	d435PPX848 = 424.0
	d435PPY848 = 240.0
)

// Default pose. The camera sits above the robot and to its +x side, 300 mm
// from a point of the workspace, looking down 45° and yawed 20° about the
// vertical. Markers (x ≈ −5, y −120..−220, z −60..120) are 230–345 mm away
// and the calibration board (y = −230) is in view 300–365 mm away, so both
// emioapi sides work: "top" uses the calibrated positions, and "plan"
// intersects pixel rays with the plane x = −5 (docs/realsense.md §8.3), which
// the optical axis meets at about 48° from its normal instead of edge-on.
const (
	defaultTargetX   = -5.0
	defaultTargetY   = -190.0
	defaultTargetZ   = 30.0
	defaultDistance  = 300.0
	defaultElevation = 45.0 // degrees above the target
	defaultAzimuth   = 20.0 // degrees from +x towards +z
)

// DefaultCamera is a D435 depth stream of width×height pixels (the recorded
// 640×480 intrinsics, typical ones at 848×480, the 640×480 ones scaled
// otherwise) at the default pose, with 8 mm marker spheres and mild noise.
func DefaultCamera(width, height int) CameraConfig {
	c := CameraConfig{
		Width: width, Height: height,
		MarkerRadius: 8,
		Noise:        4,
		DepthNoise:   1,
		Dropout:      0.02,
		TableY:       -303,
		FarDepth:     900,
		Seed:         1,
	}
	switch {
	case width == 848:
		c.FX, c.FY, c.PPX, c.PPY = d435FX848, d435FX848, d435PPX848, d435PPY848
	case width == 640 && height == 480:
		c.FX, c.FY, c.PPX, c.PPY = d435FX640, d435FX640, d435PPX640, d435PPY640
	default:
		s := float64(width) / 640
		c.FX, c.FY = d435FX640*s, d435FX640*s
		c.PPX = float64(width)/2 + (d435PPX640-320)*s
		c.PPY = float64(height)/2 + (d435PPY640-240)*s
	}
	el, az := defaultElevation*math.Pi/180, defaultAzimuth*math.Pi/180
	target := [3]float64{defaultTargetX, defaultTargetY, defaultTargetZ}
	eye := [3]float64{
		target[0] + defaultDistance*math.Cos(el)*math.Cos(az),
		target[1] + defaultDistance*math.Sin(el),
		target[2] + defaultDistance*math.Cos(el)*math.Sin(az),
	}
	// The default eye and target are valid, so LookAt cannot fail here.
	c.Pose, _ = LookAt(eye, target)
	c.T = eye
	return c
}

// LookAt returns the camera-to-world rotation (row major) of a camera at eye
// looking at target with the image's up towards world +y (image rows going
// down the world), for CameraConfig.Pose; T is eye. It fails when eye and
// target coincide or the view is vertical, where "up" is undefined.
func LookAt(eye, target [3]float64) ([9]float64, error) {
	var r [9]float64
	for i := range 3 {
		if !finite(eye[i]) || !finite(target[i]) {
			return r, fmt.Errorf("%w: look-at eye %v or target %v not finite", ErrConfig, eye, target)
		}
	}
	z := unit(sub(target, eye))
	x := unit(cross(z, [3]float64{0, 1, 0}))
	if !finite(z[0]) || !finite(x[0]) {
		return r, fmt.Errorf("%w: look-at from %v to %v is degenerate or vertical", ErrConfig, eye, target)
	}
	y := cross(z, x)
	for i := range 3 {
		r[3*i], r[3*i+1], r[3*i+2] = x[i], y[i], z[i]
	}
	return r, nil
}

func (c *CameraConfig) validate() error {
	switch {
	case c.Width < 1 || c.Width > maxCameraSide:
		return fmt.Errorf("%w: camera width = %d, want 1..%d", ErrConfig, c.Width, maxCameraSide)
	case c.Height < 1 || c.Height > maxCameraSide:
		return fmt.Errorf("%w: camera height = %d, want 1..%d", ErrConfig, c.Height, maxCameraSide)
	case !finite(c.FX) || c.FX <= 0:
		return fmt.Errorf("%w: camera fx = %v, want > 0", ErrConfig, c.FX)
	case !finite(c.FY) || c.FY <= 0:
		return fmt.Errorf("%w: camera fy = %v, want > 0", ErrConfig, c.FY)
	case !finite(c.PPX):
		return fmt.Errorf("%w: camera ppx = %v", ErrConfig, c.PPX)
	case !finite(c.PPY):
		return fmt.Errorf("%w: camera ppy = %v", ErrConfig, c.PPY)
	case !finite(c.MarkerRadius) || c.MarkerRadius <= 0 || c.MarkerRadius > maxMarkerRadius:
		return fmt.Errorf("%w: camera marker_radius = %v mm, want (0, %d]", ErrConfig, c.MarkerRadius, maxMarkerRadius)
	case !(c.Noise >= 0 && c.Noise <= maxColourNoise):
		return fmt.Errorf("%w: camera noise = %v, want 0..%d", ErrConfig, c.Noise, maxColourNoise)
	case !(c.DepthNoise >= 0 && c.DepthNoise <= maxDepthNoise):
		return fmt.Errorf("%w: camera depth_noise = %v mm, want 0..%d", ErrConfig, c.DepthNoise, maxDepthNoise)
	case !(c.Dropout >= 0 && c.Dropout <= maxDropout):
		return fmt.Errorf("%w: camera dropout = %v, want 0..%v", ErrConfig, c.Dropout, maxDropout)
	case !finite(c.TableY):
		return fmt.Errorf("%w: camera table_y = %v", ErrConfig, c.TableY)
	case !(c.FarDepth >= 100 && c.FarDepth <= bridgeDepthMax):
		return fmt.Errorf("%w: camera far_depth = %v mm, want 100..%d", ErrConfig, c.FarDepth, bridgeDepthMax)
	}
	for i, v := range c.T {
		if !finite(v) {
			return fmt.Errorf("%w: camera t[%d] = %v", ErrConfig, i, v)
		}
	}
	for i, v := range c.Pose {
		if !finite(v) {
			return fmt.Errorf("%w: camera pose[%d] = %v", ErrConfig, i, v)
		}
	}
	// R must be a rotation: a reflection or a scale would make the
	// calibration (a rigid Kabsch fit) unable to reproduce it.
	const tol = 1e-6
	r := &c.Pose
	for i := range 3 {
		for j := range 3 {
			d := r[i]*r[j] + r[3+i]*r[3+j] + r[6+i]*r[6+j] // (RᵀR)ij
			if i == j {
				d--
			}
			if math.Abs(d) > tol {
				return fmt.Errorf("%w: camera pose is not orthonormal ((RᵀR)[%d][%d] off by %.3g)", ErrConfig, i, j, d)
			}
		}
	}
	if det := r[0]*(r[4]*r[8]-r[5]*r[7]) - r[1]*(r[3]*r[8]-r[5]*r[6]) + r[2]*(r[3]*r[7]-r[4]*r[6]); math.Abs(det-1) > tol {
		return fmt.Errorf("%w: camera pose determinant = %.6g, want 1 (a rotation)", ErrConfig, det)
	}
	return nil
}

// Camera renders BGR8 colour and Z16 depth (mm) frames of green marker
// spheres over a grey background, as a RealSense looking at the Emio would
// deliver them to the tracker. Its buffers and random source are allocated
// by NewCamera; Render allocates nothing. A Camera is not safe for
// concurrent use: Render advances its random source and reuses its z-buffer.
type Camera struct {
	cfg  CameraConfig
	w, h int
	rng  *rand.Rand

	// bgTile holds background colour plus noise for tilePixels+w pixels, so
	// that any offset below tilePixels gives a whole row with one copy.
	bgTile []byte
	// dNoise and dKeep are the depth noise (mm) and the dropout mask (0 or
	// 0xFFFF) for tilePixels+w pixels, in the same way.
	dNoise []int16
	dKeep  []uint16
	// mNoise is the raw colour noise of marker pixels, 3 per entry.
	mNoise []int8
	// bgDepth is the noise-free background depth, clamped so that adding
	// the noise stays within 0..bridgeDepthMax.
	bgDepth []uint16
	// zbuf holds the nearest sphere depth per pixel; only the boxes of the
	// markers of the current frame are reset and read.
	zbuf []float32
}

// NewCamera validates cfg and allocates the camera's buffers.
func NewCamera(cfg CameraConfig) (*Camera, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	w, h := cfg.Width, cfg.Height
	c := &Camera{
		cfg: cfg, w: w, h: h,
		rng:     rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		bgTile:  make([]byte, 3*(tilePixels+w)),
		dNoise:  make([]int16, tilePixels+w),
		dKeep:   make([]uint16, tilePixels+w),
		mNoise:  make([]int8, 3*tilePixels),
		bgDepth: make([]uint16, w*h),
		zbuf:    make([]float32, w*h),
	}
	cl := math.Floor(noiseClip * cfg.Noise)
	dl := math.Ceil(3 * cfg.DepthNoise)
	noise := func(sigma, lim float64) float64 {
		return math.Round(max(-lim, min(lim, c.rng.NormFloat64()*sigma)))
	}
	back := [3]float64{backBlue, backGreen, backRed}
	for i := range tilePixels {
		for k := range 3 {
			c.bgTile[3*i+k] = clampByte(back[k] + noise(cfg.Noise, cl))
			c.mNoise[3*i+k] = int8(noise(cfg.Noise, cl))
		}
		c.dNoise[i] = int16(noise(cfg.DepthNoise, dl))
		if c.rng.Float64() >= cfg.Dropout {
			c.dKeep[i] = 0xFFFF
		}
	}
	copy(c.bgTile[3*tilePixels:], c.bgTile)
	copy(c.dNoise[tilePixels:], c.dNoise)
	copy(c.dKeep[tilePixels:], c.dKeep)

	// Background depth: the table plane, or FarDepth where the ray misses
	// it (up or beyond FarDepth).
	r := &cfg.Pose
	for v := range h {
		for u := range w {
			x, y := (float64(u)-cfg.PPX)/cfg.FX, (float64(v)-cfg.PPY)/cfg.FY
			dy := r[3]*x + r[4]*y + r[5] // world y of the ray p_cam = (x, y, 1)
			d := cfg.FarDepth
			if dy < 0 {
				if t := (cfg.TableY - cfg.T[1]) / dy; t > 0 && t < d {
					d = t
				}
			}
			c.bgDepth[v*w+u] = uint16(max(dl, min(bridgeDepthMax-dl, math.Round(d))))
		}
	}
	return c, nil
}

// Config returns the camera's configuration.
func (c *Camera) Config() CameraConfig { return c.cfg }

// camera maps a world point (mm) to camera coordinates: Rᵀ·(world − T).
func (c *Camera) camera(world [3]float64) [3]float64 {
	r, t := &c.cfg.Pose, &c.cfg.T
	d := [3]float64{world[0] - t[0], world[1] - t[1], world[2] - t[2]}
	return [3]float64{
		r[0]*d[0] + r[3]*d[1] + r[6]*d[2],
		r[1]*d[0] + r[4]*d[1] + r[7]*d[2],
		r[2]*d[0] + r[5]*d[1] + r[8]*d[2],
	}
}

// Project returns the pixel (u, v) of a world point (mm) with the pinhole
// model u = fx·x/z + ppx, v = fy·y/z + ppy, and its camera depth z (mm).
// Pixel index i is centred on u = i, as the tracker deprojects it. When
// z ≤ 0 the point is behind the camera and u, v are meaningless.
func (c *Camera) Project(world [3]float64) (u, v, z float64) {
	p := c.camera(world)
	return c.cfg.FX*p[0]/p[2] + c.cfg.PPX, c.cfg.FY*p[1]/p[2] + c.cfg.PPY, p[2]
}

// Render draws one frame into bgr (3·w·h bytes, BGR8) and depth (w·h values,
// mm) with a sphere of MarkerRadius at each marker (3 world mm values per
// marker). Spheres occlude the background and the farther spheres; a sphere
// not wholly in front of the camera is not drawn. Background colour and
// depth noise come from tiles drawn at NewCamera at a random offset per row,
// which keeps Render within a few milliseconds.
func (c *Camera) Render(bgr []byte, depth []uint16, markers []float64) error {
	w, h := c.w, c.h
	if len(bgr) != 3*w*h {
		return fmt.Errorf("%w: BGR buffer of %d bytes, want %d for %dx%d", ErrBuffer, len(bgr), 3*w*h, w, h)
	}
	if len(depth) != w*h {
		return fmt.Errorf("%w: depth buffer of %d values, want %d for %dx%d", ErrBuffer, len(depth), w*h, w, h)
	}
	if len(markers)%3 != 0 {
		return fmt.Errorf("%w: %d marker values, want 3 per marker", ErrBuffer, len(markers))
	}
	for i, v := range markers {
		if !finite(v) {
			return fmt.Errorf("%w: marker %d coordinate %d = %v", ErrMarker, i/3, i%3, v)
		}
	}

	// Background: one copy per colour row; an odd step keeps the row
	// offsets distinct modulo the tile.
	off := c.rng.IntN(tilePixels)
	step := 2*c.rng.IntN(tilePixels/2) + 1
	doff := c.rng.IntN(tilePixels)
	for y := range h {
		o := (off + y*step) & tileMask
		copy(bgr[3*y*w:3*(y+1)*w], c.bgTile[3*o:3*(o+w)])
		od := (o + doff) & tileMask
		row := depth[y*w : (y+1)*w]
		bd := c.bgDepth[y*w : (y+1)*w]
		dn := c.dNoise[od : od+w]
		dk := c.dKeep[od : od+w]
		for x := range row {
			row[x] = uint16(int32(bd[x])+int32(dn[x])) & dk[x]
		}
	}

	// Spheres: reset the z-buffer over every box first, so that the order
	// of the markers does not matter where boxes overlap.
	n := len(markers) / 3
	for m := range n {
		if x0, y0, x1, y1, _, ok := c.box(markers[3*m:]); ok {
			for y := y0; y <= y1; y++ {
				clear32(c.zbuf[y*w+x0 : y*w+x1+1])
			}
		}
	}
	k := c.rng.IntN(tilePixels) // running index into the marker noise
	for m := range n {
		k = c.sphere(bgr, depth, markers[3*m:], k)
	}
	return nil
}

// clear32 sets s to +Inf, the empty z-buffer.
func clear32(s []float32) {
	inf := float32(math.Inf(1))
	for i := range s {
		s[i] = inf
	}
}

// box returns the pixel box, clipped to the image, that holds the projection
// of the sphere at world position m[0:3], and its centre in camera
// coordinates. ok is false when the sphere is not wholly in front of the
// camera (1 mm margin), is farther than maxRenderDepth or falls outside the
// image. The box is the projection
// of the sphere's bounding cube, which contains the sphere's outline.
func (c *Camera) box(m []float64) (x0, y0, x1, y1 int, p [3]float64, ok bool) {
	p = c.camera([3]float64{m[0], m[1], m[2]})
	r := c.cfg.MarkerRadius
	// The negated test also rejects NaN from overflowing coordinates; the
	// far limit keeps the ray–sphere terms finite.
	if !(p[2] >= 1+r*math.Sqrt(3) && p[2] <= maxRenderDepth) || !finite(p[0]) || !finite(p[1]) {
		return 0, 0, 0, 0, p, false
	}
	umin, vmin := math.Inf(1), math.Inf(1)
	umax, vmax := math.Inf(-1), math.Inf(-1)
	for i := range 8 {
		x := p[0] + r*float64(2*(i&1)-1)
		y := p[1] + r*float64(2*(i>>1&1)-1)
		z := p[2] + r*float64(2*(i>>2&1)-1)
		u, v := c.cfg.FX*x/z+c.cfg.PPX, c.cfg.FY*y/z+c.cfg.PPY
		umin, umax = min(umin, u), max(umax, u)
		vmin, vmax = min(vmin, v), max(vmax, v)
	}
	fw, fh := float64(c.w-1), float64(c.h-1)
	if umax < 0 || vmax < 0 || umin > fw || vmin > fh {
		return 0, 0, 0, 0, p, false
	}
	return int(max(0, math.Floor(umin))), int(max(0, math.Floor(vmin))),
		int(min(fw, math.Ceil(umax))), int(min(fh, math.Ceil(vmax))), p, true
}

// sphere draws one marker where it is the nearest surface so far, using the
// marker noise from index k on, and returns the next index.
func (c *Camera) sphere(bgr []byte, depth []uint16, m []float64, k int) int {
	x0, y0, x1, y1, p, ok := c.box(m)
	if !ok {
		return k
	}
	cfg := &c.cfg
	r := cfg.MarkerRadius
	cq := p[0]*p[0] + p[1]*p[1] + p[2]*p[2] - r*r
	for v := y0; v <= y1; v++ {
		dy := (float64(v) - cfg.PPY) / cfg.FY
		for u := x0; u <= x1; u++ {
			// Ray p_cam = t·d with d = (dx, dy, 1), so t is the depth z.
			dx := (float64(u) - cfg.PPX) / cfg.FX
			a := dx*dx + dy*dy + 1
			b := dx*p[0] + dy*p[1] + p[2]
			disc := b*b - a*cq
			if disc < 0 {
				continue
			}
			z := (b - math.Sqrt(disc)) / a
			i := v*c.w + u
			if z <= 0 || float32(z) >= c.zbuf[i] {
				continue
			}
			c.zbuf[i] = float32(z)
			// Lambert shading with the light at the camera: cos of the
			// angle between the surface normal and the ray back to it.
			cos := ((p[0]-z*dx)*dx + (p[1]-z*dy)*dy + (p[2] - z)) / (r * math.Sqrt(a))
			s := shadeMin + (1-shadeMin)*max(0, min(1, cos))
			j := 3 * (k & tileMask)
			bgr[3*i] = clampByte(math.Round(s*markerBlue) + float64(c.mNoise[j]))
			bgr[3*i+1] = clampByte(math.Round(s*markerGreen) + float64(c.mNoise[j+1]))
			bgr[3*i+2] = clampByte(math.Round(s*markerRed) + float64(c.mNoise[j+2]))
			kd := (k * 7) & tileMask // decorrelate depth noise from colour noise
			d := max(0, min(math.MaxUint16, math.Round(z)+float64(c.dNoise[kd])))
			depth[i] = uint16(d) & c.dKeep[kd]
			k++
		}
	}
	return k
}

// clampByte clamps an integral v to 0..255.
func clampByte(v float64) uint8 { return uint8(max(0, min(255, v))) }

// CalibrationCSV writes emioapi's camera_2d_points.csv as its calibration
// would produce it with this camera (docs/realsense.md §8.4): the header
// X,Y,Depth,id and one row per board point (corners, edge midpoints, centre)
// with the projected pixel truncated as Python's int(), the camera depth in
// mm rounded to 0.1 and printed as Python prints a float, and ArUco id 672.
// It fails if a board point is not in front of the camera and in the image,
// where emioapi could not have seen the board.
func (c *Camera) CalibrationCSV(w io.Writer) error {
	pts := tracker.BoardPoints() // emioapi's board, in the CSV's row order
	buf := make([]byte, 0, 256)
	buf = append(buf, "X,Y,Depth,id\n"...)
	for i, p := range pts {
		u, v, z := c.Project(p)
		if !(z > 0) || !(u >= 0 && u < float64(c.w) && v >= 0 && v < float64(c.h)) {
			return fmt.Errorf("sim: calibration board point %d %v projects to pixel (%.1f, %.1f) at depth %.1f mm, outside the %dx%d image", i, p, u, v, z, c.w, c.h)
		}
		buf = strconv.AppendInt(buf, int64(u), 10)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, int64(v), 10)
		buf = append(buf, ',')
		buf = appendPyFloat(buf, math.Round(z*10)/10)
		buf = append(buf, ",672\n"...)
	}
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("sim: writing calibration points: %w", err)
	}
	return nil
}

// appendPyFloat appends v as Python's repr of a float does for ordinary
// magnitudes: the shortest round-trip digits, with ".0" on whole numbers.
func appendPyFloat(b []byte, v float64) []byte {
	n := len(b)
	b = strconv.AppendFloat(b, v, 'f', -1, 64)
	for _, ch := range b[n:] {
		if ch == '.' {
			return b
		}
	}
	return append(b, ".0"...)
}

func sub(a, b [3]float64) [3]float64 { return [3]float64{a[0] - b[0], a[1] - b[1], a[2] - b[2]} }

func cross(a, b [3]float64) [3]float64 {
	return [3]float64{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

// unit normalises a; a zero vector gives NaNs, which callers check.
func unit(a [3]float64) [3]float64 {
	n := math.Sqrt(a[0]*a[0] + a[1]*a[1] + a[2]*a[2])
	return [3]float64{a[0] / n, a[1] / n, a[2] / n}
}
