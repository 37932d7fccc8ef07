package camera

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/labbridge/bridge/realsense/tracker"
)

// Still is the tracker run once on saved images, as `bridge track` does:
// the colour (and depth) PNGs of a frame, the lab's files as the camera
// link would load them, the marker vector the link would send.
type Still struct {
	Color, Depth string // 8-bit RGB PNG; 16-bit greyscale PNG in mm ("" = all 0)
	// Params and Calibration are emioapi's files ("" = the lab's, under
	// Home, else emioapi's defaults: tracker.LoadLabFiles).
	Params, Calibration, Home string
	Intrinsics                string // fx,fy,ppx,ppy in pixels ("" = a D435's for the size)
	Side                      tracker.Side
	Sort                      tracker.Sort
	NbMarkers                 int
	DepthMin, DepthMax        int    // mm
	Mask                      string // write the final mask here as PNG ("" = no)
}

// Run tracks the frame and says what was found on out, as text or, with
// asJSON, as one JSON object (tracker.Report).
func (s Still) Run(out io.Writer, asJSON bool) error {
	if s.DepthMin < 0 || s.DepthMax > 65535 || s.DepthMin > s.DepthMax {
		return fmt.Errorf("camera: depth range %d..%d: want 0 ≤ min ≤ max ≤ 65535", s.DepthMin, s.DepthMax)
	}
	f, w, h, err := ReadFramePNG(s.Color, s.Depth)
	if err != nil {
		return err
	}
	in := tracker.DefaultIntrinsics(w, h)
	if s.Intrinsics != "" {
		if in, err = tracker.ParseIntrinsics(s.Intrinsics, w, h); err != nil {
			return fmt.Errorf("camera: intrinsics: %w", err)
		}
	}
	files, err := tracker.LoadLabFiles(s.Params, s.Calibration, tracker.EmioapiDir(s.Home))
	if err != nil {
		return err
	}
	tr, err := TrackerFor(TrackerSettings{Files: files, Side: s.Side, Sort: s.Sort, NbMarkers: s.NbMarkers,
		DepthMin: uint16(s.DepthMin), DepthMax: uint16(s.DepthMax)})(Stream{Width: w, Height: h, Intrinsics: in})
	if err != nil {
		return err
	}
	r, err := tr.Process(f.Color, f.Depth)
	if err != nil {
		return err
	}
	if s.Mask != "" {
		if err := WriteMaskPNG(s.Mask, tr.Mask(), w, h); err != nil {
			return err
		}
	}
	rep := tr.Report(r)
	if asJSON {
		return json.NewEncoder(out).Encode(rep)
	}
	fmt.Fprintf(out, "%s: %dx%d, %d contour(s), %d marker(s) with area > %g (nb_markers %d), side %s, sort %s\n",
		s.Color, w, h, r.Contours, len(r.Markers), files.Params.Area, s.NbMarkers, s.Side, s.Sort)
	fmt.Fprintf(out, "params: %s; calibration: %s; intrinsics fx %.3f fy %.3f ppx %.3f ppy %.3f\n",
		files.ParamsFrom, files.CalibrationFrom, in.FX, in.FY, in.PPX, in.PPY)
	for i, m := range rep.Markers {
		fmt.Fprintf(out, "marker %d: px (%d, %d)  area %.1f  depth %.1f mm  mm (%.2f, %.2f, %.2f)\n",
			i, m.PX[0], m.PX[1], m.Area, m.DepthMM, m.MM[0], m.MM[1], m.MM[2])
	}
	if r.Held {
		fmt.Fprintf(out, "vector: held (found %d marker(s), want %d): the bridge would resend the previous vector\n", len(r.Markers), s.NbMarkers)
	} else {
		fmt.Fprintf(out, "vector: %v\n", rep.Vector)
	}
	if s.Mask != "" {
		fmt.Fprintf(out, "mask: %s\n", s.Mask)
	}
	return nil
}
