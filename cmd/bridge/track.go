package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
)

// defaultIntrinsics are depth intrinsics for saved frames without their own:
// the D435 of the repository's recording at 640×480 (the virtual camera uses
// the same), typical values at 848×480.
func defaultIntrinsics(w, h int) tracker.Intrinsics {
	if w == 848 {
		return tracker.Intrinsics{Width: w, Height: h, FX: 426, FY: 426, PPX: 424, PPY: 240}
	}
	s := float64(w) / 640
	return tracker.Intrinsics{
		Width: w, Height: h,
		FX: float64(float32(390.43146)) * s, FY: float64(float32(390.43146)) * s,
		PPX: float64(float32(331.38788)) * s, PPY: float64(float32(242.18735)) * s,
	}
}

func parseIntrinsics(s string, w, h int) (tracker.Intrinsics, error) {
	f := strings.Split(s, ",")
	if len(f) != 4 {
		return tracker.Intrinsics{}, fmt.Errorf("bridge track: -intrinsics %q: want fx,fy,ppx,ppy", s)
	}
	var v [4]float64
	for i, x := range f {
		var err error
		if v[i], err = strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
			return tracker.Intrinsics{}, fmt.Errorf("bridge track: -intrinsics %q: %q is not a number", s, x)
		}
	}
	in := tracker.Intrinsics{Width: w, Height: h, FX: v[0], FY: v[1], PPX: v[2], PPY: v[3]}
	return in, in.Validate()
}

// trackJSON is the -json output.
type trackJSON struct {
	Markers []trackMarker `json:"markers"`
	// Vector is what the bridge would send for this frame (sorted as the
	// side requires); null when the count is not nb_markers.
	Vector   []float64 `json:"vector"`
	Held     bool      `json:"held"`
	Contours int       `json:"contours"`
	Side     string    `json:"side"`
	Sort     string    `json:"sort"`
}

type trackMarker struct {
	PX      [2]int     `json:"px"`
	DepthMM float64    `json:"depth_mm"`
	MM      [3]float64 `json:"mm"`
	Area    float64    `json:"area"`
	Camera  [3]float64 `json:"camera_mm"`
}

// cmdTrack is `bridge track`: the tracker on saved images.
func cmdTrack(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("track", "track -color FILE.png [-depth FILE.png] [-params cameraparameter.json] [-calibration camera_2d_points.csv] [-side plan] [-sort y] [-mask OUT.png] [-json]", stderr)
	colorPath := fs.String("color", "", "colour image, 8-bit RGB PNG (required)")
	depthPath := fs.String("depth", "", "depth image, 16-bit greyscale PNG in mm (default: no depth, all 0)")
	paramsPath := fs.String("params", "", "emioapi's cameraparameter.json (default ~/.config/emioapi's when present, else emioapi's defaults)")
	calibPath := fs.String("calibration", "", "emioapi's camera_2d_points.csv (default ~/.config/emioapi's when present, else the camera frame)")
	intr := fs.String("intrinsics", "", "depth intrinsics fx,fy,ppx,ppy in pixels (default: a D435's for the image size)")
	side := fs.String("side", "plan", "marker frame: top, front or plan")
	sort := fs.String("sort", "y", "marker order: y or z")
	nb := fs.Int("nb_markers", 1, "markers expected (the vector is held when another count is found)")
	dmin := fs.Int("depth_min", 0, "depth range low end, mm (emioapi's bridge: 0)")
	dmax := fs.Int("depth_max", 1000, "depth range high end, mm (emioapi's bridge: 1000)")
	maskPath := fs.String("mask", "", "write the final mask here as PNG")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *colorPath == "" {
		fmt.Fprintln(stderr, "bridge track: -color is required")
		fs.Usage()
		return errUsage
	}
	sd, err := tracker.ParseSide(*side)
	if err != nil {
		return err
	}
	so, err := tracker.ParseSort(*sort)
	if err != nil {
		return err
	}
	if *dmin < 0 || *dmax > 65535 || *dmin > *dmax {
		return fmt.Errorf("bridge track: depth range %d..%d: want 0 ≤ min ≤ max ≤ 65535", *dmin, *dmax)
	}
	bgr, w, h, err := readColorPNG(*colorPath)
	if err != nil {
		return err
	}
	depth := make([]uint16, w*h)
	if *depthPath != "" {
		d, dw, dh, err := readDepthPNG(*depthPath)
		if err != nil {
			return err
		}
		if dw != w || dh != h {
			return fmt.Errorf("bridge track: depth %dx%d and colour %dx%d differ", dw, dh, w, h)
		}
		depth = d
	}
	in := defaultIntrinsics(w, h)
	if *intr != "" {
		if in, err = parseIntrinsics(*intr, w, h); err != nil {
			return err
		}
	}
	files, err := loadVisionFiles(*paramsPath, *calibPath)
	if err != nil {
		return err
	}
	pose := tracker.IdentityPose()
	if files.calib != nil {
		if pose, err = files.calib.Pose(in); err != nil {
			return err
		}
	}
	tr, err := tracker.New(tracker.Config{
		Width: w, Height: h, Params: files.params, DepthMin: uint16(*dmin), DepthMax: uint16(*dmax),
		Intrinsics: in, Pose: pose, Side: sd, Sort: so, NbMarkers: *nb,
	})
	if err != nil {
		return err
	}
	r, err := tr.Process(bgr, depth)
	if err != nil {
		return err
	}
	if *maskPath != "" {
		if err := writeMaskPNG(*maskPath, tr.Mask(), w, h); err != nil {
			return err
		}
	}
	out := trackJSON{Markers: []trackMarker{}, Held: r.Held, Contours: r.Contours, Side: sd.String(), Sort: so.String()}
	if !r.Held {
		out.Vector = append([]float64(nil), r.Vector...)
	}
	for _, m := range r.Markers {
		tm := trackMarker{PX: [2]int{m.PX, m.PY}, DepthMM: m.DepthMM, Area: m.Area, Camera: m.Camera}
		switch sd {
		case tracker.Top:
			tm.MM = m.World
		case tracker.Front:
			tm.MM = tracker.FrontPoint(m.PX, m.PY, m.DepthMM)
		case tracker.Plan:
			tm.MM, _ = tracker.PlanPoint(&in, &pose, m.PX, m.PY)
		}
		out.Markers = append(out.Markers, tm)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(out)
	}
	fmt.Fprintf(stdout, "%s: %dx%d, %d contour(s), %d marker(s) with area > %g (nb_markers %d), side %s, sort %s\n",
		*colorPath, w, h, r.Contours, len(r.Markers), files.params.Area, *nb, sd, so)
	fmt.Fprintf(stdout, "params: %s; calibration: %s; intrinsics fx %.3f fy %.3f ppx %.3f ppy %.3f\n",
		files.paramsFrom, files.calibFrom, in.FX, in.FY, in.PPX, in.PPY)
	for i, m := range out.Markers {
		fmt.Fprintf(stdout, "marker %d: px (%d, %d)  area %.1f  depth %.1f mm  mm (%.2f, %.2f, %.2f)\n",
			i, m.PX[0], m.PX[1], m.Area, m.DepthMM, m.MM[0], m.MM[1], m.MM[2])
	}
	if r.Held {
		fmt.Fprintf(stdout, "vector: held (found %d marker(s), want %d): the bridge would resend the previous vector\n", len(r.Markers), *nb)
	} else {
		fmt.Fprintf(stdout, "vector: %v\n", out.Vector)
	}
	if *maskPath != "" {
		fmt.Fprintf(stdout, "mask: %s\n", *maskPath)
	}
	return nil
}

// benchTracker is `bridge bench tracker`: the marker tracker's time per frame
// on the benchmark scenes of docs/realsense.md §10 (848×480), on this machine,
// one goroutine, against the goals of §11.
func benchTracker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench tracker", "bench tracker [-frames 300] [-json]", stderr)
	frames := fs.Int("frames", 300, "timed frames per scene (after 10 untimed)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *frames < 10 || *frames > 1000000 {
		return fmt.Errorf("bridge bench tracker: -frames %d: want 10..1000000", *frames)
	}
	type row struct {
		Scene    string  `json:"scene"`
		Contours int     `json:"contours"`
		Markers  int     `json:"markers"`
		MedianMs float64 `json:"median_ms"`
		P99Ms    float64 `json:"p99_ms"`
		MaxMs    float64 `json:"max_ms"`
		GoalMs   float64 `json:"goal_ms"`
		Allocs   float64 `json:"allocs_per_frame"`
	}
	tr, err := tracker.New(tracker.BenchConfig())
	if err != nil {
		return err
	}
	clock := realtime.NewClock()
	var rows []row
	for _, name := range tracker.BenchScenes() {
		bgr, depth, err := tracker.BenchScene(name)
		if err != nil {
			return err
		}
		var r tracker.Result
		for range 10 {
			if r, err = tr.Process(bgr, depth); err != nil {
				return err
			}
		}
		ns := make([]int64, *frames)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range ns {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			t0 := clock.Now()
			if _, err := tr.Process(bgr, depth); err != nil {
				return err
			}
			ns[i] = clock.Now() - t0
		}
		runtime.ReadMemStats(&after)
		slices.Sort(ns)
		ms := func(q float64) float64 { return float64(ns[min(len(ns)-1, int(q*float64(len(ns))))]) / 1e6 }
		goal := 1.5 // a realistic scene (docs/realsense.md §11)
		if name == "stress" {
			goal = 5
		}
		rows = append(rows, row{Scene: name, Contours: r.Contours, Markers: len(r.Markers),
			MedianMs: ms(0.5), P99Ms: ms(0.99), MaxMs: float64(ns[len(ns)-1]) / 1e6, GoalMs: goal,
			Allocs: float64(after.Mallocs-before.Mallocs) / float64(len(ns))})
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"width": tracker.BenchWidth, "height": tracker.BenchHeight, "frames": *frames, "scenes": rows})
	}
	fmt.Fprintf(stdout, "marker tracker, %dx%d, one goroutine, %d frames per scene (docs/realsense.md §10 scenes)\n",
		tracker.BenchWidth, tracker.BenchHeight, *frames)
	fmt.Fprintf(stdout, "%-7s %9s %8s %10s %8s %8s %8s %13s\n", "scene", "contours", "markers", "median ms", "p99 ms", "max ms", "goal ms", "allocs/frame")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-7s %9d %8d %10.3f %8.3f %8.3f %8.1f %13.2f\n", r.Scene, r.Contours, r.Markers, r.MedianMs, r.P99Ms, r.MaxMs, r.GoalMs, r.Allocs)
	}
	return nil
}
