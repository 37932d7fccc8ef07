package sim

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/labbridge/bridge/realsense/tracker"
)

// Typical marker positions (world mm): the Jacobian model's y0 and the
// pendulum's two markers (docs/simulink-udp.md §9.2).
func markerRest() [3]float64   { return [3]float64{2, -141, -6} }
func markerTip() [3]float64    { return [3]float64{-5, -191.5, 92.3} }
func markerMiddle() [3]float64 { return [3]float64{-5, -88.2, 86.2} }

func newFrame(c *Camera) ([]byte, []uint16) {
	return make([]byte, 3*c.w*c.h), make([]uint16, c.w*c.h)
}

func mustCamera(t testing.TB, cfg CameraConfig) *Camera {
	t.Helper()
	c, err := NewCamera(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func flat(ms ...[3]float64) []float64 {
	var out []float64
	for _, m := range ms {
		out = append(out, m[:]...)
	}
	return out
}

// green reports whether a pixel passes emioapi's default HSV thresholds.
func green(conv *tracker.HSV, bgr []byte, i int) bool {
	h, s, v := conv.Pixel(bgr[3*i], bgr[3*i+1], bgr[3*i+2])
	return tracker.DefaultRange().Contains(h, s, v)
}

// frontDepth is the depth of the first hit of pixel (u, v)'s ray on the
// sphere of radius r at camera point p, or NaN.
func frontDepth(c *Camera, u, v int, p [3]float64, r float64) float64 {
	dx, dy := (float64(u)-c.cfg.PPX)/c.cfg.FX, (float64(v)-c.cfg.PPY)/c.cfg.FY
	a, b := dx*dx+dy*dy+1, dx*p[0]+dy*p[1]+p[2]
	disc := b*b - a*(p[0]*p[0]+p[1]*p[1]+p[2]*p[2]-r*r)
	return (b - math.Sqrt(disc)) / a
}

func TestCameraConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*CameraConfig)
		want string
	}{
		{"width", func(c *CameraConfig) { c.Width = 0 }, "width = 0"},
		{"height", func(c *CameraConfig) { c.Height = 5000 }, "height = 5000"},
		{"fx", func(c *CameraConfig) { c.FX = 0 }, "fx = 0"},
		{"fy", func(c *CameraConfig) { c.FY = math.Inf(1) }, "fy = +Inf"},
		{"ppx", func(c *CameraConfig) { c.PPX = math.NaN() }, "ppx = NaN"},
		{"ppy", func(c *CameraConfig) { c.PPY = math.Inf(-1) }, "ppy = -Inf"},
		{"radius", func(c *CameraConfig) { c.MarkerRadius = -1 }, "marker_radius = -1"},
		{"radius NaN", func(c *CameraConfig) { c.MarkerRadius = math.NaN() }, "marker_radius = NaN"},
		{"noise", func(c *CameraConfig) { c.Noise = 11 }, "noise = 11"},
		{"noise NaN", func(c *CameraConfig) { c.Noise = math.NaN() }, "noise = NaN"},
		{"depth noise", func(c *CameraConfig) { c.DepthNoise = -0.5 }, "depth_noise = -0.5"},
		{"dropout", func(c *CameraConfig) { c.Dropout = 0.9 }, "dropout = 0.9"},
		{"table", func(c *CameraConfig) { c.TableY = math.NaN() }, "table_y = NaN"},
		{"far", func(c *CameraConfig) { c.FarDepth = 1200 }, "far_depth = 1200"},
		{"t", func(c *CameraConfig) { c.T[2] = math.NaN() }, "t[2] = NaN"},
		{"pose NaN", func(c *CameraConfig) { c.Pose[4] = math.NaN() }, "pose[4] = NaN"},
		{"pose zero", func(c *CameraConfig) { c.Pose = [9]float64{} }, "not orthonormal"},
		{"pose scaled", func(c *CameraConfig) {
			for i := range c.Pose {
				c.Pose[i] *= 1.01
			}
		}, "not orthonormal"},
		{"pose reflection", func(c *CameraConfig) {
			for i := 0; i < 9; i += 3 {
				c.Pose[i] = -c.Pose[i]
			}
		}, "determinant = -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultCamera(640, 480)
			tc.edit(&cfg)
			c, err := NewCamera(cfg)
			if c != nil || !errors.Is(err, ErrConfig) || !strings.HasPrefix(err.Error(), "sim:") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewCamera = %v, %v; want ErrConfig naming %q", c, err, tc.want)
			}
		})
	}
	for _, size := range [][2]int{{640, 480}, {848, 480}, {320, 240}, {1, 1}} {
		if _, err := NewCamera(DefaultCamera(size[0], size[1])); err != nil {
			t.Errorf("default %dx%d: %v", size[0], size[1], err)
		}
	}
}

func TestDefaultIntrinsics(t *testing.T) {
	c := DefaultCamera(640, 480)
	if c.FX != float64(float32(390.43146)) || c.FY != c.FX || c.PPX != float64(float32(331.38788)) || c.PPY != float64(float32(242.18735)) {
		t.Errorf("640×480 intrinsics %v %v %v %v", c.FX, c.FY, c.PPX, c.PPY)
	}
	c = DefaultCamera(848, 480)
	if c.FX != 426 || c.FY != 426 || c.PPX != 424 || c.PPY != 240 {
		t.Errorf("848×480 intrinsics %v %v %v %v", c.FX, c.FY, c.PPX, c.PPY)
	}
}

func TestLookAt(t *testing.T) {
	if _, err := LookAt([3]float64{1, 2, 3}, [3]float64{1, 2, 3}); !errors.Is(err, ErrConfig) {
		t.Errorf("eye = target: %v", err)
	}
	if _, err := LookAt([3]float64{0, 100, 0}, [3]float64{0, 0, 0}); !errors.Is(err, ErrConfig) {
		t.Errorf("vertical view: %v", err)
	}
	if _, err := LookAt([3]float64{math.NaN(), 0, 0}, [3]float64{}); !errors.Is(err, ErrConfig) {
		t.Errorf("NaN eye: %v", err)
	}
	// A camera looking along world +z: image right is world −x, image down
	// is world −y.
	r, err := LookAt([3]float64{0, 0, -100}, [3]float64{})
	if err != nil {
		t.Fatal(err)
	}
	want := [9]float64{-1, 0, 0, 0, -1, 0, 0, 0, 1}
	for i := range r {
		if math.Abs(r[i]-want[i]) > 1e-12 {
			t.Fatalf("R = %v, want %v", r, want)
		}
	}
}

// The default pose sees the workspace from 200–400 mm, the plane x = −5 at a
// healthy angle, and a pixel ray intersected with that plane (emioapi's
// "plan" side) lands within 1.5 mm of the marker.
func TestDefaultPoseGeometry(t *testing.T) {
	cfg := DefaultCamera(640, 480)
	c := mustCamera(t, cfg)
	for _, y := range []float64{-120, -170, -220} {
		for _, z := range []float64{-60, 30, 120} {
			p := [3]float64{-5, y, z}
			u, v, d := c.Project(p)
			if u < 20 || u > 620 || v < 20 || v > 460 || d < 200 || d > 400 {
				t.Errorf("%v at pixel (%.1f, %.1f), depth %.1f", p, u, v, d)
			}
			// Ray of the truncated pixel, as the bridge computes it.
			x, yy := (math.Trunc(u)-cfg.PPX)/cfg.FX, (math.Trunc(v)-cfg.PPY)/cfg.FY
			r := &cfg.Pose
			ray := [3]float64{r[0]*x + r[1]*yy + r[2], r[3]*x + r[4]*yy + r[5], r[6]*x + r[7]*yy + r[8]}
			s := -(cfg.T[0] + 5) / ray[0]
			hit := [3]float64{cfg.T[0] + s*ray[0], cfg.T[1] + s*ray[1], cfg.T[2] + s*ray[2]}
			if e := math.Hypot(hit[1]-p[1], hit[2]-p[2]); e > 1.5 {
				t.Errorf("plan intersection of %v is %v, %.2f mm off", p, hit, e)
			}
		}
	}
	// Angle between the optical axis and the plane's normal.
	if a := math.Acos(math.Abs(cfg.Pose[2])) * 180 / math.Pi; a < 30 || a > 60 {
		t.Errorf("optical axis at %.1f° from the x = −5 plane's normal", a)
	}
}

// Render and Project agree: the green pixels of an unoccluded marker centre
// on its projected centre, and the depth there is the sphere's front.
func TestRenderProjectConsistency(t *testing.T) {
	conv := tracker.NewHSV()
	for _, size := range [][2]int{{640, 480}, {848, 480}} {
		cfg := DefaultCamera(size[0], size[1])
		cfg.DepthNoise, cfg.Dropout = 0, 0
		c := mustCamera(t, cfg)
		bgr, depth := newFrame(c)
		for _, m := range [][3]float64{markerRest(), markerTip(), markerMiddle(), {-5, -220, -60}, {-5, -120, 120}, {30, -200, 0}} {
			if err := c.Render(bgr, depth, m[:]); err != nil {
				t.Fatal(err)
			}
			var n, sx, sy float64
			for i := range depth {
				if green(conv, bgr, i) {
					n++
					sx += float64(i % c.w)
					sy += float64(i / c.w)
				}
			}
			u, v, z := c.Project(m)
			if n < 150 || math.Abs(sx/n-u) > 0.5 || math.Abs(sy/n-v) > 0.5 {
				t.Errorf("%dx%d %v: %v green pixels centred on (%.2f, %.2f), projected (%.2f, %.2f)", c.w, c.h, m, n, sx/n, sy/n, u, v)
			}
			iu, iv := int(math.Round(u)), int(math.Round(v))
			want := frontDepth(c, iu, iv, c.camera(m), cfg.MarkerRadius)
			if got := float64(depth[iv*c.w+iu]); math.Abs(got-want) > 1 || math.Abs(got-(z-cfg.MarkerRadius)) > 1 {
				t.Errorf("%v: depth %v at (%d, %d), want front %.2f (centre z %.2f − r)", m, got, iu, iv, want, z)
			}
		}
	}
}

// Every marker pixel passes emioapi's default thresholds at any shade and
// any clipped noise up to the largest Noise accepted, and the background
// never does.
func TestRenderColoursPassThresholds(t *testing.T) {
	conv := tracker.NewHSV()
	rng := tracker.DefaultRange()
	l := int(math.Floor(noiseClip * maxColourNoise))
	for db := -l; db <= l; db++ {
		for dg := -l; dg <= l; dg++ {
			for dr := -l; dr <= l; dr++ {
				for s := shadeMin; s <= 1.0001; s += 0.01 {
					b := clampByte(math.Round(s*markerBlue) + float64(db))
					g := clampByte(math.Round(s*markerGreen) + float64(dg))
					r := clampByte(math.Round(s*markerRed) + float64(dr))
					if h, sa, v := conv.Pixel(b, g, r); !rng.Contains(h, sa, v) {
						t.Fatalf("marker BGR (%d, %d, %d) at shade %.2f → HSV (%d, %d, %d) fails", b, g, r, s, h, sa, v)
					}
				}
				b, g, r := clampByte(backBlue+float64(db)), clampByte(backGreen+float64(dg)), clampByte(backRed+float64(dr))
				if h, sa, v := conv.Pixel(b, g, r); rng.Contains(h, sa, v) {
					t.Fatalf("background BGR (%d, %d, %d) → HSV (%d, %d, %d) passes", b, g, r, h, sa, v)
				}
			}
		}
	}
}

// The nearer sphere hides the farther one wherever they overlap, whatever
// their order.
func TestRenderOcclusion(t *testing.T) {
	cfg := DefaultCamera(640, 480)
	cfg.DepthNoise, cfg.Dropout = 0, 0
	near := markerRest()
	// 12 mm farther along the ray through the near centre, shifted 6 mm
	// sideways so part of it shows.
	ray := unit(sub(near, cfg.T))
	side := unit(cross(ray, [3]float64{0, 1, 0}))
	far := [3]float64{near[0] + 12*ray[0] + 6*side[0], near[1] + 12*ray[1] + 6*side[1], near[2] + 12*ray[2] + 6*side[2]}

	c1, c2 := mustCamera(t, cfg), mustCamera(t, cfg)
	bgr1, depth1 := newFrame(c1)
	bgr2, depth2 := newFrame(c2)
	if err := c1.Render(bgr1, depth1, flat(near, far)); err != nil {
		t.Fatal(err)
	}
	if err := c2.Render(bgr2, depth2, flat(far, near)); err != nil {
		t.Fatal(err)
	}
	// The noise is drawn in marker order, so compare depths, which carry
	// no noise here.
	for i := range depth1 {
		if depth1[i] != depth2[i] {
			t.Fatalf("pixel %d: depth %d with the near marker first, %d with it last", i, depth1[i], depth2[i])
		}
	}
	u, v, z := c1.Project(near)
	iu, iv := int(math.Round(u)), int(math.Round(v))
	if got := float64(depth1[iv*c1.w+iu]); math.Abs(got-(z-cfg.MarkerRadius)) > 1 {
		t.Errorf("depth at the near centre %v, want %.1f", got, z-cfg.MarkerRadius)
	}
	// The far sphere shows beside the near one: some pixels hold its
	// depth, all deeper than the near sphere's front.
	fz := c1.camera(far)[2] - cfg.MarkerRadius
	var farPixels int
	for i, d := range depth1 {
		if float64(d) > fz-1 && float64(d) < fz+cfg.MarkerRadius && green(tracker.NewHSV(), bgr1, i) {
			farPixels++
		}
	}
	if farPixels == 0 {
		t.Error("the far marker is wholly hidden; the test geometry is wrong")
	}
	// Alone, the far sphere would cover the near centre's pixel.
	c3 := mustCamera(t, cfg)
	bgr3, depth3 := newFrame(c3)
	if err := c3.Render(bgr3, depth3, far[:]); err != nil {
		t.Fatal(err)
	}
	if d := float64(depth3[iv*c3.w+iu]); !green(tracker.NewHSV(), bgr3, iv*c3.w+iu) || d < fz-1 {
		t.Errorf("far marker alone: depth %v at the near centre, want ≥ %.1f and green", d, fz)
	}
}

// The background holds no marker-coloured pixel, its depth stays within the
// bridge's 0–1000 mm range, and dropouts are a few percent; the same seed
// gives the same frames while successive frames differ.
func TestRenderBackground(t *testing.T) {
	conv := tracker.NewHSV()
	cfg := DefaultCamera(640, 480)
	c := mustCamera(t, cfg)
	bgr, depth := newFrame(c)
	if err := c.Render(bgr, depth, nil); err != nil {
		t.Fatal(err)
	}
	var zeros int
	for i, d := range depth {
		if d > bridgeDepthMax {
			t.Fatalf("pixel %d depth %d beyond the bridge's range", i, d)
		}
		if d == 0 {
			zeros++
		}
		if green(conv, bgr, i) {
			t.Fatalf("background pixel %d passes the marker thresholds", i)
		}
	}
	if f := float64(zeros) / float64(len(depth)); f < 0.01 || f > 0.03 {
		t.Errorf("dropout fraction %.4f, want about %.2f", f, cfg.Dropout)
	}

	again := mustCamera(t, cfg)
	bgr2, depth2 := newFrame(again)
	if err := again.Render(bgr2, depth2, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bgr, bgr2) || !equal16(depth, depth2) {
		t.Error("same seed, different first frame")
	}
	if err := again.Render(bgr2, depth2, nil); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(bgr, bgr2) || equal16(depth, depth2) {
		t.Error("second frame equals the first")
	}
}

func equal16(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRenderErrorsAndOddMarkers(t *testing.T) {
	c := mustCamera(t, DefaultCamera(64, 48))
	bgr, depth := newFrame(c)
	for _, tc := range []struct {
		name       string
		bgr        []byte
		depth      []uint16
		markers    []float64
		target     error
		wantInText string
	}{
		{"short bgr", bgr[:10], depth, nil, ErrBuffer, "BGR buffer of 10 bytes, want 9216"},
		{"long depth", bgr, make([]uint16, len(depth)+1), nil, ErrBuffer, "depth buffer of 3073 values, want 3072"},
		{"partial marker", bgr, depth, []float64{1, 2}, ErrBuffer, "2 marker values"},
		{"NaN marker", bgr, depth, []float64{1, 2, 3, 4, math.NaN(), 6}, ErrMarker, "marker 1 coordinate 1 = NaN"},
	} {
		err := c.Render(tc.bgr, tc.depth, tc.markers)
		if !errors.Is(err, tc.target) || !strings.HasPrefix(err.Error(), "sim:") || !strings.Contains(err.Error(), tc.wantInText) {
			t.Errorf("%s: %v, want %v naming %q", tc.name, err, tc.target, tc.wantInText)
		}
	}
	// Markers behind the camera, at the camera, far outside the view or
	// absurdly far away are simply not drawn.
	axis := [3]float64{c.cfg.Pose[2], c.cfg.Pose[5], c.cfg.Pose[8]}
	along := func(d float64) [3]float64 {
		return [3]float64{c.cfg.T[0] + d*axis[0], c.cfg.T[1] + d*axis[1], c.cfg.T[2] + d*axis[2]}
	}
	odd := flat(c.cfg.T, [3]float64{1e300, -1e300, 1e300}, [3]float64{1e308, 1e308, -1e308}, [3]float64{-1e308, -1e308, 1e308},
		along(1e200), along(2e6), along(5), along(-300), [3]float64{-1e6, 0, 0}, [3]float64{500, 100, 500}, markerRest())
	if err := c.Render(bgr, depth, odd); err != nil {
		t.Fatal(err)
	}
	for i, d := range depth {
		if d > bridgeDepthMax {
			t.Fatalf("pixel %d depth %d from an odd marker", i, d)
		}
	}
	// Random magnitudes from 1e-3 to 1e307 near and far: nothing panics.
	r := rand.New(rand.NewPCG(1, 2))
	m := make([]float64, 3)
	for range 5000 {
		for i := range m {
			m[i] = c.cfg.T[i] + (2*r.Float64()-1)*math.Pow(10, float64(r.IntN(311)-3))
		}
		if err := c.Render(bgr, depth, m); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRenderAllocs(t *testing.T) {
	c := mustCamera(t, DefaultCamera(640, 480))
	bgr, depth := newFrame(c)
	m := flat(markerTip(), markerMiddle())
	if n := testing.AllocsPerRun(20, func() {
		if err := c.Render(bgr, depth, m); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Render allocates %v times", n)
	}
}

// The tracker's pixel stage finds rendered markers, with dropouts and noise,
// at their projected pixels: its truncated centroid is within 1 px of the
// truncated projection.
func TestTrackerFindsRenderedMarkers(t *testing.T) {
	th := tracker.NewThreshold(tracker.NewHSV(), tracker.DefaultRange())
	for _, size := range [][2]int{{640, 480}, {848, 480}} {
		cfg := DefaultCamera(size[0], size[1])
		c := mustCamera(t, cfg)
		w, h := c.w, c.h
		bgr, depth := newFrame(c)
		mask := make([]byte, w*h)
		ct, err := tracker.NewContours(w, h, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		blobs := make([]tracker.Blob, 0, 64)
		for _, set := range [][][3]float64{{markerRest()}, {markerTip()}, {markerTip(), markerMiddle()}, {markerRest(), {-5, -200, 60}}} {
			for frame := range 3 {
				if err := c.Render(bgr, depth, flat(set...)); err != nil {
					t.Fatal(err)
				}
				if err := th.Mask(mask, bgr, depth, w, h, 0, 1000); err != nil {
					t.Fatal(err)
				}
				found, err := ct.Find(mask, w, h, blobs[:0])
				if err != nil {
					t.Fatal(err)
				}
				found = tracker.Markers(found, tracker.MinArea)
				if len(found) != len(set) {
					t.Fatalf("%dx%d %v frame %d: %d markers found, want %d: %+v", w, h, set, frame, len(found), len(set), found)
				}
				for _, m := range set {
					u, v, z := c.Project(m)
					ok := false
					for _, b := range found {
						if abs(b.X-int(u)) <= 1 && abs(b.Y-int(v)) <= 1 && b.Area > 100 {
							ok = true
							// emioapi's depth: the pixel, else the median
							// of the blob (here: the front, ±noise).
							if d := float64(depth[b.Y*w+b.X]); d != 0 && math.Abs(d-(z-cfg.MarkerRadius)) > 4 {
								t.Errorf("%v: depth %v at (%d, %d), want %.1f ± 4", m, d, b.X, b.Y, z-cfg.MarkerRadius)
							}
						}
					}
					if !ok {
						t.Errorf("%dx%d %v frame %d: no blob at (%.2f, %.2f) among %+v", w, h, m, frame, u, v, found)
					}
				}
			}
		}
	}
}

// goldenCSV is the committed camera_2d_points.csv of DefaultCamera(640, 480).
const goldenCSV = "testdata/sim_camera_2d_points.csv"

// Set SIM_UPDATE_GOLDEN=1 to rewrite the golden file after an intended change
// of the default camera.
func TestCalibrationCSVGolden(t *testing.T) {
	c := mustCamera(t, DefaultCamera(640, 480))
	var b bytes.Buffer
	if err := c.CalibrationCSV(&b); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("SIM_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(goldenCSV), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenCSV, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenCSV)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.Bytes(), want) {
		t.Errorf("CalibrationCSV:\n%s\nwant (%s):\n%s", b.Bytes(), goldenCSV, want)
	}
}

// Deprojecting the CSV rows with the intrinsics, as emioapi does, and
// applying the pose gives back the board points within 1.5 mm (pixel
// truncation and 0.1 mm depth rounding).
func TestCalibrationCSVRoundTrip(t *testing.T) {
	for _, size := range [][2]int{{640, 480}, {848, 480}} {
		cfg := DefaultCamera(size[0], size[1])
		c := mustCamera(t, cfg)
		var b bytes.Buffer
		if err := c.CalibrationCSV(&b); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(&b)
		if !sc.Scan() || sc.Text() != "X,Y,Depth,id" {
			t.Fatalf("header %q", sc.Text())
		}
		board := tracker.BoardPoints()
		row := 0
		for sc.Scan() {
			f := strings.Split(sc.Text(), ",")
			if len(f) != 4 || f[3] != "672" || !strings.Contains(f[2], ".") {
				t.Fatalf("row %d: %q", row, sc.Text())
			}
			x, err1 := strconv.Atoi(f[0])
			y, err2 := strconv.Atoi(f[1])
			d, err3 := strconv.ParseFloat(f[2], 64)
			if err := errors.Join(err1, err2, err3); err != nil {
				t.Fatalf("row %d: %v", row, err)
			}
			p := [3]float64{(float64(x) - cfg.PPX) / cfg.FX * d, (float64(y) - cfg.PPY) / cfg.FY * d, d}
			r := &cfg.Pose
			var wp [3]float64
			for i := range 3 {
				wp[i] = r[3*i]*p[0] + r[3*i+1]*p[1] + r[3*i+2]*p[2] + cfg.T[i]
			}
			if e := math.Sqrt(sq(wp[0]-board[row][0]) + sq(wp[1]-board[row][1]) + sq(wp[2]-board[row][2])); e > 1.5 {
				t.Errorf("%dx%d row %d: %v, %.2f mm from board point %v", size[0], size[1], row, wp, e, board[row])
			}
			row++
		}
		if row != 9 {
			t.Errorf("%d rows, want 9", row)
		}
	}
}

func abs(x int) int { return max(x, -x) }

func sq(x float64) float64 { return x * x }

func TestCalibrationCSVErrors(t *testing.T) {
	cfg := DefaultCamera(640, 480)
	cfg.T[1] = -400 // below the board, looking down: the board is behind
	c := mustCamera(t, cfg)
	if err := c.CalibrationCSV(&bytes.Buffer{}); err == nil || !strings.HasPrefix(err.Error(), "sim: calibration board point 0") {
		t.Errorf("board out of view: %v", err)
	}
	c = mustCamera(t, DefaultCamera(640, 480))
	if err := c.CalibrationCSV(failWriter{}); err == nil || !strings.HasPrefix(err.Error(), "sim:") {
		t.Errorf("failing writer: %v", err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestAppendPyFloat(t *testing.T) {
	for v, want := range map[float64]string{287.4: "287.4", 287: "287.0", 0.1: "0.1", 300.05: "300.05"} {
		if got := string(appendPyFloat(nil, v)); got != want {
			t.Errorf("%v → %q, want %q", v, got, want)
		}
	}
}

func benchmarkRender(b *testing.B, w, h int) {
	c := mustCamera(b, DefaultCamera(w, h))
	bgr, depth := newFrame(c)
	m := flat(markerTip(), markerMiddle())
	b.ReportAllocs()
	b.SetBytes(int64(4 * w * h))
	for b.Loop() {
		if err := c.Render(bgr, depth, m); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRender640x480(b *testing.B) { benchmarkRender(b, 640, 480) }
func BenchmarkRender848x480(b *testing.B) { benchmarkRender(b, 848, 480) }
