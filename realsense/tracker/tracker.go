package tracker

import "fmt"

// MaxMarkers bounds Config.NbMarkers; the shipped Simulink models use 1 or 2.
const MaxMarkers = 16

// Config is everything a Tracker needs, fixed for its lifetime.
type Config struct {
	Width, Height int
	Params        Params
	// DepthMin and DepthMax are the inclusive raw Z16 (mm) range of the
	// depth mask; the bridge uses BridgeDepthMin and BridgeDepthMax.
	DepthMin, DepthMax uint16
	// Intrinsics of the depth stream, applied to colour pixels as emioapi
	// does.
	Intrinsics Intrinsics
	Pose       Pose
	Side       Side
	Sort       Sort
	NbMarkers  int // 1..MaxMarkers
	// MaxPoints is the contour vertex budget per frame; 0 selects
	// 4·Width·Height + 4, which no mask can exceed (a pixel is met at most
	// four times while tracing external borders).
	MaxPoints int
}

// Marker is one accepted contour of a frame.
type Marker struct {
	PX, PY  int     // centroid pixel, int(m10/m00), int(m01/m00) as emioapi
	Area    float64 // cv2.contourArea
	DepthMM float64 // depth at (PX, PY), or the median fallback
	// Camera is the camera-space point in mm:
	// (((PX−ppx)/fx)·d, ((PY−ppy)/fy)·d, d).
	Camera [3]float64
	World  [3]float64 // Pose applied: R·Camera + T
}

// Result is the outcome of one Process call. Its slices belong to the
// Tracker and are valid until the next Process or Reset.
type Result struct {
	// Markers are every accepted marker of this frame, in OpenCV contour
	// order.
	Markers []Marker
	// Vector holds the 3·NbMarkers values emioapi's bridge would send for
	// this frame.
	Vector []float64
	// Held is true when Vector was not updated by this frame: the marker
	// count differs from NbMarkers, or a Plan ray missed the plane.
	Held bool
	// NoIntersection is true when a marker's Plan ray is parallel to the
	// plane. emioapi raises ValueError there and its camera process dies;
	// the Tracker holds Vector instead and counts it (NoIntersection()).
	NoIntersection bool
	// Contours is the number of contours found before the area filter.
	Contours int
}

// Tracker is emioapi's whole per-frame marker pipeline and its bridge
// post-processing (docs/realsense.md §8.2–§8.3), bit-exact up to the World
// points (within 1e-9, see Pose.Apply). Everything is allocated by New;
// Process allocates nothing. A Tracker is not safe for concurrent use.
type Tracker struct {
	cfg   Config
	thr   *Threshold
	morph *Morph // nil when erosion_size is 0: the opening is a no-op
	cont  *Contours
	fill  *filler
	mask  []byte
	// stale is set when the last Process left its mask in the contour plane
	// only: Mask unpacks it on demand.
	stale   bool
	blobs   []Blob
	markers []Marker
	vec     []float64
	pts     [MaxMarkers][3]float64
	noInter uint64
}

// New validates cfg and allocates the tracker: the colour tables (2.25 MiB, about
// 70 ms to build), the morphology and contour buffers and the frame buffers.
func New(cfg Config) (*Tracker, error) {
	return newTracker(cfg, nil)
}

// newTracker is New with an optional prebuilt table for cfg.Params.Range().
func newTracker(cfg Config, thr *Threshold) (*Tracker, error) {
	n, err := pixels(cfg.Width, cfg.Height)
	if err != nil {
		return nil, err
	}
	if err := cfg.Params.Validate(); err != nil {
		return nil, err
	}
	if cfg.DepthMin > cfg.DepthMax {
		return nil, fmt.Errorf("tracker: depth range %d–%d is empty: %w", cfg.DepthMin, cfg.DepthMax, ErrConfig)
	}
	if err := cfg.Intrinsics.Validate(); err != nil {
		return nil, err
	}
	if err := cfg.Pose.Validate(); err != nil {
		return nil, err
	}
	if cfg.Side < Top || cfg.Side > Plan {
		return nil, fmt.Errorf("tracker: side %d, want top, front or plan: %w", int(cfg.Side), ErrConfig)
	}
	if cfg.Sort < SortY || cfg.Sort > SortZ {
		return nil, fmt.Errorf("tracker: sort %d, want y or z: %w", int(cfg.Sort), ErrConfig)
	}
	if cfg.NbMarkers < 1 || cfg.NbMarkers > MaxMarkers {
		return nil, fmt.Errorf("tracker: nb_markers %d out of range 1–%d: %w", cfg.NbMarkers, MaxMarkers, ErrConfig)
	}
	if cfg.MaxPoints == 0 {
		cfg.MaxPoints = 4*n + 4
	}
	if cfg.MaxPoints < 1 || cfg.MaxPoints > 1<<30 {
		return nil, fmt.Errorf("tracker: contour point limit %d out of range 1–2^30: %w", cfg.MaxPoints, ErrConfig)
	}
	if thr == nil || thr.Range() != cfg.Params.Range() {
		thr = NewThreshold(NewHSV(), cfg.Params.Range())
	}
	t := &Tracker{cfg: cfg, thr: thr}
	if cfg.Params.Erosion > 0 {
		if t.morph, err = NewMorph(cfg.Width, cfg.Height, cfg.Params.Erosion); err != nil {
			return nil, err
		}
	}
	if t.cont, err = NewContours(cfg.Width, cfg.Height, cfg.MaxPoints); err != nil {
		return nil, err
	}
	// Blobs of 8-connected foreground never share a 2×2 block, and each
	// contour has a vertex: Find never needs more room than this.
	maxBlobs := min(((cfg.Width+1)/2)*((cfg.Height+1)/2), cfg.MaxPoints)
	t.fill = newFiller(cfg.Width, cfg.Height, cfg.MaxPoints)
	t.mask = make([]byte, n)
	t.blobs = make([]Blob, 0, maxBlobs)
	t.markers = make([]Marker, 0, maxBlobs)
	t.vec = make([]float64, 3*cfg.NbMarkers)
	return t, nil
}

// Config returns the configuration, with MaxPoints as used.
func (t *Tracker) Config() Config { return t.cfg }

// Mask returns the final mask of the last Process (Width·Height bytes, 0 or
// 255), for display. It is overwritten by the next Process. Without an
// opening, Process keeps the mask as bits only and Mask writes the bytes,
// once per frame.
func (t *Tracker) Mask() []byte {
	if t.stale {
		t.cont.unpack(t.mask)
		t.stale = false
	}
	return t.mask
}

// Reset clears the held vector back to zeros, as a restarted bridge.
// NoIntersection keeps counting.
func (t *Tracker) Reset() { clear(t.vec) }

// NoIntersection returns how many frames had a Plan ray parallel to the
// plane (see Result.NoIntersection).
func (t *Tracker) NoIntersection() uint64 { return t.noInter }

// Process runs the tracker on one frame: bgr is the tightly packed
// Width×Height BGR8 image and depth the Z16 image of the same size in mm.
// On error (a wrong buffer size, or more contour vertices than MaxPoints)
// the Result holds the previous Vector with Held set.
func (t *Tracker) Process(bgr []byte, depth []uint16) (Result, error) {
	w, h := t.cfg.Width, t.cfg.Height
	n := w * h
	res := Result{Vector: t.vec, Held: true, Markers: t.markers[:0]}
	if len(bgr) != 3*n {
		return res, fmt.Errorf("tracker: BGR frame of %d bytes, want %d for %dx%d: %w", len(bgr), 3*n, w, h, ErrSize)
	}
	if len(depth) != n {
		return res, fmt.Errorf("tracker: depth frame of %d values, want %d for %dx%d: %w", len(depth), n, w, h, ErrSize)
	}
	var blobs []Blob
	var err error
	if t.morph == nil {
		// The threshold writes the contour plane itself: no byte mask to
		// write and pack again.
		t.stale = true
		if err := t.thr.Plane(t.cont, bgr, depth, t.cfg.DepthMin, t.cfg.DepthMax); err != nil {
			return res, err
		}
		blobs, err = t.cont.FindPlane(t.blobs[:0])
	} else {
		t.stale = false
		if err := t.thr.Mask(t.mask, bgr, depth, w, h, t.cfg.DepthMin, t.cfg.DepthMax); err != nil {
			return res, err
		}
		if err := t.morph.Open(t.mask, t.mask); err != nil {
			return res, err
		}
		blobs, err = t.cont.Find(t.mask, w, h, t.blobs[:0])
	}
	if err != nil {
		return res, err
	}
	res.Contours = len(blobs)
	ms := t.markers[:0]
	in := &t.cfg.Intrinsics
	for i, b := range blobs {
		if !(b.Area > t.cfg.Params.Area) {
			continue
		}
		m := Marker{PX: b.X, PY: b.Y, Area: b.Area}
		var d uint16
		if uint(b.X) < uint(w) && uint(b.Y) < uint(h) {
			d = depth[b.Y*w+b.X]
		}
		if d != 0 {
			m.DepthMM = float64(d)
		} else {
			m.DepthMM = t.fill.median(t.cont.Contour(i), depth)
		}
		m.Camera = in.Deproject(float64(m.PX), float64(m.PY), m.DepthMM)
		m.World = t.cfg.Pose.Apply(m.Camera)
		ms = append(ms, m)
	}
	res.Markers = ms
	if len(ms) != t.cfg.NbMarkers {
		return res, nil
	}
	switch t.cfg.Side {
	case Top:
		for i, m := range ms {
			copy(t.vec[3*i:3*i+3], m.World[:])
		}
	case Front:
		for i, m := range ms {
			t.pts[i] = FrontPoint(m.PX, m.PY, m.DepthMM)
		}
		sortedInto(t.vec, &t.pts, len(ms), t.cfg.Sort.column())
	case Plan:
		for i, m := range ms {
			p, ok := PlanPoint(in, &t.cfg.Pose, m.PX, m.PY)
			if !ok {
				t.noInter++
				res.NoIntersection = true
				return res, nil
			}
			t.pts[i] = p
		}
		sortedInto(t.vec, &t.pts, len(ms), t.cfg.Sort.column())
	}
	res.Held = false
	return res, nil
}

// SidePoint is a marker's position in the frame of the tracker's side (mm),
// as it enters the vector: the world point for top, emioapi's fixed-camera
// mapping for front, the ray's crossing of the plane x = −5 for plan.
func (t *Tracker) SidePoint(m Marker) [3]float64 {
	switch t.cfg.Side {
	case Front:
		return FrontPoint(m.PX, m.PY, m.DepthMM)
	case Plan:
		p, _ := PlanPoint(&t.cfg.Intrinsics, &t.cfg.Pose, m.PX, m.PY)
		return p
	}
	return m.World
}

// Report is a frame's result as a person reads it (`bridge track -json`):
// every marker with its pixel, depth and position in the side's frame, and
// the vector the bridge would send.
type Report struct {
	Markers []ReportMarker `json:"markers"`
	// Vector is what the bridge would send for this frame (sorted as the
	// side requires); null when the count is not nb_markers.
	Vector   []float64 `json:"vector"`
	Held     bool      `json:"held"`
	Contours int       `json:"contours"`
	Side     string    `json:"side"`
	Sort     string    `json:"sort"`
}

// ReportMarker is one marker of a Report.
type ReportMarker struct {
	PX      [2]int     `json:"px"`
	DepthMM float64    `json:"depth_mm"`
	MM      [3]float64 `json:"mm"` // in the side's frame (SidePoint)
	Area    float64    `json:"area"`
	Camera  [3]float64 `json:"camera_mm"`
}

// Report copies r, the result of this tracker's last Process, into a Report.
func (t *Tracker) Report(r Result) Report {
	out := Report{Markers: []ReportMarker{}, Held: r.Held, Contours: r.Contours, Side: t.cfg.Side.String(), Sort: t.cfg.Sort.String()}
	if !r.Held {
		out.Vector = append([]float64(nil), r.Vector...)
	}
	for _, m := range r.Markers {
		out.Markers = append(out.Markers, ReportMarker{PX: [2]int{m.PX, m.PY}, DepthMM: m.DepthMM, Area: m.Area, Camera: m.Camera, MM: t.SidePoint(m)})
	}
	return out
}
