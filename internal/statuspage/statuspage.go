// Package statuspage serves a live status page of the bridge's links: the
// terminal status rows for a bridge that runs under systemd, where nobody
// sees the terminal. It knows nothing of links or configurations: the caller
// hands it a function that reads a Snapshot, called once per request on the
// HTTP server's goroutine, never on a loop thread.
package statuspage

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"github.com/labbridge/bridge/internal/logging"
	"image"
	"image/jpeg"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// page is the whole page: HTML, CSS and the script that polls
// /status.json. No external asset, so that it works on a lab network
// without internet.
//
//go:embed page.html
var page []byte

// Snapshot is the bridge's status at one moment.
type Snapshot struct {
	Version string       `json:"version"`
	Config  string       `json:"config"`
	Started time.Time    `json:"started"`
	Links   []LinkStatus `json:"links"`
	// Errors are the process's last warnings and errors, oldest first.
	Errors []LogLine `json:"errors,omitempty"`
}

// LogLine is one warning or error the process logged.
type LogLine = logging.Line

// LinkStatus is one link's status.
type LinkStatus struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	State string `json:"state"` // starting, handshaking, running, degraded, stopped
	// StateSince is when the state began, when known.
	StateSince time.Time `json:"state_since,omitzero"`
	RateHz     float64   `json:"rate_hz"`
	Seq        int64     `json:"seq"`
	// Last is the last exchange's status.
	Last string `json:"last,omitempty"`
	// OKPct is the replies used (OK and OK_NO_DELAY) of all exchanges, in %.
	OKPct     float64 `json:"ok_pct"`
	Exchanges uint64  `json:"exchanges"`
	Counts    Counts  `json:"counts"`
	// RTTMs is the last reply's latency, from the send of the seq it answers.
	RTTMs float64 `json:"rtt_ms"`
	// LateP99Ms and LateMaxMs are the replies' lateness, when measured.
	LateP99Ms float64 `json:"late_p99_ms,omitempty"`
	LateMaxMs float64 `json:"late_max_ms,omitempty"`
	// Measurement and Command are the vectors by field of the layout.
	Measurement []Vector `json:"measurement"`
	Command     []Vector `json:"command"`
	// Status are extra lines: the camera's frames, the lock, stale ticks.
	Status []string `json:"status,omitempty"`
	Faults []Fault  `json:"faults,omitempty"`
	// Lateness is the loop's send lateness over the last minute of ticks.
	Lateness *Lateness `json:"lateness,omitempty"`
	// Servos are the link's servos, for a plant that has them.
	Servos []Servo `json:"servos,omitempty"`
	// Camera is the link's camera, for a plant that has one.
	Camera *CameraStatus `json:"camera,omitempty"`
	// Shadow is the link's shadow twin, when it runs one.
	Shadow *Shadow `json:"shadow,omitempty"`
}

// Shadow is a link's shadow twin: per measured field, how far the robot is
// from its model.
type Shadow struct {
	// Divergence is real − model by field, its last; MaxAbs the largest
	// magnitude since the start; Threshold the field's (0: not watched).
	// A value the model does not predict is null.
	Divergence []Vector `json:"divergence"`
	MaxAbs     []Vector `json:"max_abs"`
	Threshold  []Vector `json:"threshold"`
	Ticks      uint64   `json:"ticks"`
	Dropped    uint64   `json:"dropped"`
	// Faults are the twin's faults, the open ones first, then the last
	// ended ones.
	Faults []ShadowFault `json:"faults,omitempty"`
}

// ShadowFault is one divergence held past its threshold.
type ShadowFault struct {
	Message string `json:"message"`
	Ended   bool   `json:"ended,omitempty"`
	// AgoS is how long ago it started, in seconds.
	AgoS float64 `json:"ago_s"`
}

// Lateness is how late the loop's sends were against their deadlines over
// the last minute of ticks, in ms.
type Lateness struct {
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
	Ticks uint64  `json:"ticks"`
}

// Servo is one servo's state. A value not known yet is nil.
type Servo struct {
	ID int `json:"id"`
	// AngleRad is the servo's angle in the last measurement.
	AngleRad *float64 `json:"angle_rad,omitempty"`
	// TempC is the temperature and LimitC the servo's limit, in °C.
	TempC  *float64 `json:"temp_c,omitempty"`
	LimitC *float64 `json:"limit_c,omitempty"`
	// HardwareError names the servo's hardware error bits ("" for none).
	HardwareError string `json:"hardware_error,omitempty"`
	// Alerting is true while the servo's replies carry the alert bit;
	// Alerts counts them, MissedReads the position reads it spoilt.
	Alerting    bool   `json:"alerting,omitempty"`
	Alerts      uint64 `json:"alerts"`
	MissedReads uint64 `json:"missed_reads"`
}

// CameraStatus is a link's camera.
type CameraStatus struct {
	Streaming bool `json:"streaming"`
	// Why is the last failure while not streaming.
	Why string `json:"why,omitempty"`
	// FPS is the measured frame rate; Frame the newest frame's number, in
	// which Found markers were accepted; Held says the marker vector was
	// kept from an earlier frame.
	FPS    float64 `json:"fps"`
	Frames uint64  `json:"frames"`
	Frame  uint64  `json:"frame"`
	Found  int     `json:"found"`
	Held   bool    `json:"held,omitempty"`
	// AgeMs is how old the newest frame is; omitted before the first.
	AgeMs *float64 `json:"age_ms,omitempty"`
	// Thumbnail is where the page gets the newest frame as a JPEG.
	Thumbnail string `json:"thumbnail"`
}

// Counts are the link's exchange and loop counters since it started.
type Counts struct {
	OK         uint64 `json:"ok"`
	OKNoDelay  uint64 `json:"ok_no_delay"`
	Timeouts   uint64 `json:"timeouts"`
	Desyncs    uint64 `json:"desyncs"`
	Reconnects uint64 `json:"reconnects"`
	Drops      uint64 `json:"drops"`
	Overruns   uint64 `json:"overruns"`
	Late       uint64 `json:"late"`
}

// Vector is one field of a measurement or a command.
type Vector struct {
	Name   string    `json:"name"`
	Unit   string    `json:"unit,omitempty"`
	Values []float64 `json:"values"`
}

// MarshalJSON writes a non-finite value (a lost marker's NaN) as null:
// encoding/json refuses NaN, and one bad value must not blank the page.
func (v Vector) MarshalJSON() ([]byte, error) {
	vals := make([]*float64, len(v.Values))
	for i := range v.Values {
		if x := v.Values[i]; !math.IsNaN(x) && !math.IsInf(x, 0) {
			vals[i] = &v.Values[i]
		}
	}
	return json.Marshal(struct {
		Name   string     `json:"name"`
		Unit   string     `json:"unit,omitempty"`
		Values []*float64 `json:"values"`
	}{v.Name, v.Unit, vals})
}

// UnmarshalJSON reads null back as NaN.
func (v *Vector) UnmarshalJSON(data []byte) error {
	var w struct {
		Name   string     `json:"name"`
		Unit   string     `json:"unit"`
		Values []*float64 `json:"values"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	v.Name, v.Unit, v.Values = w.Name, w.Unit, make([]float64, len(w.Values))
	for i, p := range w.Values {
		v.Values[i] = math.NaN()
		if p != nil {
			v.Values[i] = *p
		}
	}
	return nil
}

// Fault is a fault active now.
type Fault struct {
	Name   string    `json:"name"`
	Title  string    `json:"title"`
	Detail string    `json:"detail,omitempty"`
	Since  time.Time `json:"since"`
}

// ThumbnailWidth is the width, in pixels, the page shows camera frames at.
const ThumbnailWidth = 320

// ThumbnailPath is where the page gets link's camera thumbnail, relative to
// the page (Camera.Thumbnail).
func ThumbnailPath(link string) string { return "camera/" + url.PathEscape(link) + ".jpg" }

// Config is what the page reads.
type Config struct {
	// Snapshot is called once per /status.json request.
	Snapshot func() Snapshot
	// Thumbnail draws the newest frame of link's camera about width
	// pixels wide, on the request's goroutine. found is false for an
	// unknown link or one without a camera (404); img is nil while there is
	// no frame yet (503). Nil: no link has a camera.
	Thumbnail func(link string, width int) (img image.Image, found bool)
	// Resume is a person's action on a link whose robot latched a stop (an
	// emergency stop, a hardware error): POST /links/{link}/resume. Its
	// error is the reason nothing was done. Nil: no such route.
	Resume func(link string) error
}

// Handler serves the page at GET / and the snapshot at GET /status.json.
// snap is called once per /status.json request.
func Handler(snap func() Snapshot) http.Handler { return New(Config{Snapshot: snap}) }

// New serves the page at GET /, the snapshot at GET /status.json and each
// camera's thumbnail at GET /camera/{link}.jpg.
func New(cfg Config) http.Handler {
	snap := cfg.Snapshot
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(page))
	})
	mux.HandleFunc("GET /status.json", func(w http.ResponseWriter, _ *http.Request) {
		// Now is the server's clock, so that the page's uptime does not
		// depend on the browser's clock being right.
		body, err := json.Marshal(struct {
			Snapshot
			Now time.Time `json:"now"`
		}{snap(), time.Now()})
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(append(body, '\n'))
	})
	mux.HandleFunc("GET /camera/{file}", func(w http.ResponseWriter, r *http.Request) {
		link, ok := strings.CutSuffix(r.PathValue("file"), ".jpg")
		if !ok || link == "" || cfg.Thumbnail == nil {
			http.NotFound(w, r)
			return
		}
		img, found := cfg.Thumbnail(link, ThumbnailWidth)
		switch {
		case !found:
			http.Error(w, "statuspage: no camera on link "+link, http.StatusNotFound)
			return
		case img == nil:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "statuspage: no frame yet", http.StatusServiceUnavailable)
			return
		}
		// Encoded whole before the first byte, so that a failure is an
		// error status rather than half an image.
		var buf bytes.Buffer
		if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 80}); err != nil {
			http.Error(w, "statuspage: encoding the thumbnail: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "image/jpeg")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write(buf.Bytes())
	})
	if cfg.Resume != nil {
		// A request that may start a robot: POST only, and never from a
		// page of another origin that a browser on this network opened.
		resume := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			link := r.PathValue("link")
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			if err := cfg.Resume(link); err != nil {
				w.WriteHeader(http.StatusConflict)
				_, _ = io.WriteString(w, err.Error()+"\n")
				return
			}
			_, _ = io.WriteString(w, "link "+link+": resume asked; the bridge reopens the robot now\n")
		})
		mux.Handle("POST /links/{link}/resume", http.NewCrossOriginProtection().Handler(resume))
	}
	return mux
}
