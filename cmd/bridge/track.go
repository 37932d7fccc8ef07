package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/labbridge/bridge/emio/camera"
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
	home, _ := os.UserHomeDir()
	err = camera.Still{Color: *colorPath, Depth: *depthPath, Params: *paramsPath, Calibration: *calibPath, Home: home,
		Intrinsics: *intr, Side: sd, Sort: so, NbMarkers: *nb, DepthMin: *dmin, DepthMax: *dmax, Mask: *maskPath}.Run(stdout, *asJSON)
	if err != nil {
		return fmt.Errorf("bridge track: %w", err)
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
	return tracker.WriteBenchText(stdout, *frames, rows)
}

// cmdCameras is `bridge cameras`: the connected RealSense cameras.
func cmdCameras(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("cameras", "cameras", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := camera.WriteCameras(ctx, stdout); err != nil {
		return fmt.Errorf("bridge cameras: %w", err)
	}
	return nil
}
