package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/labbridge/bridge/emio/camera"
	"github.com/labbridge/bridge/realsense"
	"github.com/labbridge/bridge/realsense/tracker"
	"github.com/labbridge/bridge/realtime"
)

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
	f, w, h, err := camera.ReadFramePNG(*colorPath, *depthPath)
	if err != nil {
		return fmt.Errorf("bridge track: %w", err)
	}
	in := tracker.DefaultIntrinsics(w, h)
	if *intr != "" {
		if in, err = tracker.ParseIntrinsics(*intr, w, h); err != nil {
			return fmt.Errorf("bridge track: -intrinsics: %w", err)
		}
	}
	home, _ := os.UserHomeDir()
	files, err := tracker.LoadLabFiles(*paramsPath, *calibPath, tracker.EmioapiDir(home))
	if err != nil {
		return err
	}
	tr, err := camera.TrackerFor(camera.TrackerSettings{Files: files, Side: sd, Sort: so, NbMarkers: *nb,
		DepthMin: uint16(*dmin), DepthMax: uint16(*dmax)})(camera.Stream{Width: w, Height: h, Intrinsics: in})
	if err != nil {
		return err
	}
	r, err := tr.Process(f.Color, f.Depth)
	if err != nil {
		return err
	}
	if *maskPath != "" {
		if err := camera.WriteMaskPNG(*maskPath, tr.Mask(), w, h); err != nil {
			return err
		}
	}
	out := tr.Report(r)
	if *asJSON {
		return json.NewEncoder(stdout).Encode(out)
	}
	fmt.Fprintf(stdout, "%s: %dx%d, %d contour(s), %d marker(s) with area > %g (nb_markers %d), side %s, sort %s\n",
		*colorPath, w, h, r.Contours, len(r.Markers), files.Params.Area, *nb, sd, so)
	fmt.Fprintf(stdout, "params: %s; calibration: %s; intrinsics fx %.3f fy %.3f ppx %.3f ppy %.3f\n",
		files.ParamsFrom, files.CalibrationFrom, in.FX, in.FY, in.PPX, in.PPY)
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
	rows, err := tracker.Bench(ctx, *frames, realtime.NewClock().Now)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, map[string]any{"width": tracker.BenchWidth, "height": tracker.BenchHeight, "frames": *frames, "scenes": rows})
	}
	fmt.Fprintf(stdout, "marker tracker, %dx%d, one goroutine, %d frames per scene (docs/realsense.md §10 scenes)\n",
		tracker.BenchWidth, tracker.BenchHeight, *frames)
	fmt.Fprintf(stdout, "%-7s %9s %8s %10s %8s %8s %8s %13s\n", "scene", "contours", "markers", "median ms", "p99 ms", "max ms", "goal ms", "allocs/frame")
	for _, r := range rows {
		fmt.Fprintf(stdout, "%-7s %9d %8d %10.3f %8.3f %8.3f %8.1f %13.2f\n", r.Scene, r.Contours, r.Markers, r.MedianMs, r.P99Ms, r.MaxMs, r.GoalMs, r.Allocs)
	}
	return nil
}

// cmdCameras is `bridge cameras`: the connected RealSense cameras.
func cmdCameras(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cameras", "cameras", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	lib, err := realsense.LoadAny(ctx)
	if err != nil {
		return fmt.Errorf("bridge cameras: %w", err)
	}
	defer lib.Close()
	devs, err := lib.ListDevices()
	if err != nil {
		return fmt.Errorf("bridge cameras: %w", err)
	}
	fmt.Fprintf(stdout, "librealsense2 %v (%s)\n", lib.Version(), lib.Path())
	if len(devs) == 0 {
		fmt.Fprintln(stdout, "no RealSense camera connected (check the USB 3 cable, and the udev rules or root for USB access)")
		return nil
	}
	for _, d := range devs {
		fmt.Fprintf(stdout, "serial %s  %s  firmware %s\n", d.Serial, d.Name, d.Firmware)
	}
	fmt.Fprintln(stdout, `select one with [link.plant.camera] serial = "…"`)
	return nil
}
