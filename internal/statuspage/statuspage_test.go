package statuspage

import (
	"encoding/json"
	"errors"
	"image"
	"image/jpeg"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func testSnapshot() Snapshot {
	return Snapshot{
		Version: "v1.2.3", Config: "/etc/bridge/emio.toml", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Links: []LinkStatus{{
			Name: "emio", Kind: "emio", State: "running", StateSince: time.Date(2026, 1, 2, 3, 4, 6, 0, time.UTC),
			RateHz: 30, Seq: 1234, Last: "OK_NO_DELAY", OKPct: 99.5, Exchanges: 1235,
			Counts: Counts{OK: 3, OKNoDelay: 1226, Timeouts: 2, Desyncs: 1, Reconnects: 1, Drops: 4, Overruns: 5, Late: 6},
			RTTMs:  0.25,
			Measurement: []Vector{
				{Name: "markers", Unit: "mm", Values: []float64{-5, -134.5, 10.25}},
				{Name: "angles", Unit: "rad", Values: []float64{0, 0.25, -0.25, 0}},
			},
			Command: []Vector{{Name: "angles", Unit: "rad", Values: []float64{0, 0.25, -0.25, 0}}},
			Status:  []string{"frame 149 found 1", "lock locked 30.0029 Hz"},
			Faults: []Fault{{Name: "servo_hot", Title: "a servo is hot", Detail: "servo 2: 74 °C",
				Since: time.Date(2026, 1, 2, 3, 5, 0, 0, time.UTC)}},
			Lateness: &Lateness{P99Ms: 0.042, MaxMs: 1.25, Ticks: 1800},
			Servos: []Servo{
				{ID: 0, AngleRad: new(0.0), TempC: new(41.0), LimitC: new(80.0), Alerts: 0, MissedReads: 0},
				{ID: 1, AngleRad: new(0.25), TempC: new(52.0), LimitC: new(80.0)},
				{ID: 2, AngleRad: new(-0.25), TempC: new(74.0), LimitC: new(80.0), HardwareError: "overheating",
					Alerting: true, Alerts: 12, MissedReads: 3},
				{ID: 3}, // not read yet
			},
			Camera: &CameraStatus{Streaming: true, FPS: 30.003, Frames: 150, Frame: 149, Found: 1, AgeMs: new(12.5),
				Thumbnail: ThumbnailPath("emio")},
			Shadow: &Shadow{
				Divergence: []Vector{{Name: "markers", Unit: "mm", Values: []float64{0.5, -1.5, 1}}, {Name: "angles", Unit: "rad", Values: []float64{0, 0.21, 0, 0}}},
				MaxAbs:     []Vector{{Name: "markers", Unit: "mm", Values: []float64{2, 3, 4}}, {Name: "angles", Unit: "rad", Values: []float64{0.01, 0.25, 0.02, 0}}},
				Threshold:  []Vector{{Name: "markers", Unit: "mm", Values: []float64{40, 40, 40}}, {Name: "angles", Unit: "rad", Values: []float64{0.1, 0.1, 0.1, 0.1}}},
				Ticks:      1700,
				Faults: []ShadowFault{{Message: "servo 2 does not follow its goal (12.0° from the model, up to 14.3°, for 2s)", AgoS: 2.5},
					{Message: "servo 1 does not follow its goal (8.0° from the model, up to 8.0°, for 600ms)", Ended: true, AgoS: 95}},
			},
		}, {
			Name: "vrep", Kind: "vrep", State: "handshaking", RateHz: 20, Seq: -1,
			Measurement: []Vector{}, Command: []Vector{{Name: "speeds", Unit: "rad/s", Values: []float64{1, 2}}},
		}},
		Errors: []LogLine{
			{Time: time.Date(2026, 1, 2, 3, 4, 7, 0, time.UTC), Level: "WARN", Link: "emio", Message: "partner lost",
				Detail: "err=timeout after 3 ticks"},
			{Time: time.Date(2026, 1, 2, 3, 4, 9, 0, time.UTC), Level: "ERROR", Message: "simulated device stopped",
				Detail: "device=camera"},
		},
	}
}

func get(t *testing.T, h http.Handler, method, path string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

// The page is whole in itself: a lab network has no internet, so it may
// name no external asset.
func TestPage(t *testing.T) {
	rec := get(t, Handler(testSnapshot), http.MethodGet, "/")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET / = %d", rec.Code)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
		t.Errorf("Content-Type = %q, want text/html", ct)
	}
	body := rec.Body.String()
	for _, bad := range []string{"http://", "https://", "//cdn", "<link "} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q: an external asset", bad)
		}
	}
	if !strings.Contains(body, "status.json") {
		t.Error("the page does not poll status.json")
	}
}

func TestStatusJSONRoundTrip(t *testing.T) {
	want := testSnapshot()
	rec := get(t, Handler(func() Snapshot { return want }), http.MethodGet, "/status.json")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /status.json = %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	var got Snapshot
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if _, ok := raw["now"]; !ok {
		t.Error("no server time \"now\" in the snapshot: the page's uptime needs it")
	}
	link := raw["links"].([]any)[1].(map[string]any)
	for _, omitted := range []string{"state_since", "faults", "status", "late_p99_ms", "lateness", "servos", "camera"} {
		if _, ok := link[omitted]; ok {
			t.Errorf("the handshaking link has %q, want it omitted when unknown or empty", omitted)
		}
	}
}

func TestRoutes(t *testing.T) {
	h := Handler(testSnapshot)
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{http.MethodGet, "/", http.StatusOK},
		{http.MethodHead, "/", http.StatusOK},
		{http.MethodGet, "/status.json", http.StatusOK},
		{http.MethodPost, "/", http.StatusMethodNotAllowed},
		{http.MethodPost, "/status.json", http.StatusMethodNotAllowed},
		{http.MethodGet, "/nothing", http.StatusNotFound},
		{http.MethodGet, "/camera/emio.jpg", http.StatusNotFound}, // Handler: no thumbnails
	} {
		if rec := get(t, h, c.method, c.path); rec.Code != c.code {
			t.Errorf("%s %s = %d, want %d", c.method, c.path, rec.Code, c.code)
		}
	}
}

// A lost marker is NaN: it travels as null and comes back NaN, and does not
// break the snapshot.
func TestVectorJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []float64
		json string
	}{
		{"finite", []float64{1.5, -2, 0}, `{"name":"v","values":[1.5,-2,0]}`},
		{"nan", []float64{math.NaN(), 1}, `{"name":"v","values":[null,1]}`},
		{"inf", []float64{math.Inf(1), math.Inf(-1)}, `{"name":"v","values":[null,null]}`},
		{"empty", []float64{}, `{"name":"v","values":[]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(Vector{Name: "v", Values: c.in})
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.json {
				t.Errorf("Marshal = %s, want %s", b, c.json)
			}
			var back Vector
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			for i, x := range c.in {
				y := back.Values[i]
				if math.IsNaN(x) || math.IsInf(x, 0) {
					if !math.IsNaN(y) {
						t.Errorf("value %d = %v, want NaN", i, y)
					}
				} else if x != y {
					t.Errorf("value %d = %v, want %v", i, y, x)
				}
			}
		})
	}
	snap := testSnapshot()
	snap.Links[0].Measurement[0].Values[0] = math.NaN()
	rec := get(t, Handler(func() Snapshot { return snap }), http.MethodGet, "/status.json")
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK || !strings.Contains(string(body), `"values":[null,`) {
		t.Errorf("snapshot with a NaN = %d %s", rec.Code, body)
	}
}

// The JSON names the page reads: a rename on one side would blank a panel.
func TestStatusJSONNames(t *testing.T) {
	rec := get(t, Handler(testSnapshot), http.MethodGet, "/status.json")
	var raw struct {
		Links []struct {
			Lateness map[string]any   `json:"lateness"`
			Servos   []map[string]any `json:"servos"`
			Camera   map[string]any   `json:"camera"`
		} `json:"links"`
		Errors []map[string]any `json:"errors"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	l := raw.Links[0]
	if l.Lateness["p99_ms"] != 0.042 || l.Lateness["max_ms"] != 1.25 {
		t.Errorf("lateness %v", l.Lateness)
	}
	if len(l.Servos) != 4 || l.Servos[2]["temp_c"] != 74.0 || l.Servos[2]["limit_c"] != 80.0 ||
		l.Servos[2]["hardware_error"] != "overheating" || l.Servos[1]["angle_rad"] != 0.25 {
		t.Errorf("servos %v", l.Servos)
	}
	if _, ok := l.Servos[3]["temp_c"]; ok {
		t.Errorf("a servo not read yet has a temperature: %v", l.Servos[3])
	}
	if l.Camera["fps"] != 30.003 || l.Camera["found"] != 1.0 || l.Camera["age_ms"] != 12.5 || l.Camera["thumbnail"] != "camera/emio.jpg" {
		t.Errorf("camera %v", l.Camera)
	}
	if len(raw.Errors) != 2 || raw.Errors[0]["link"] != "emio" || raw.Errors[0]["message"] != "partner lost" ||
		raw.Errors[1]["level"] != "ERROR" {
		t.Errorf("errors %v", raw.Errors)
	}
}

// testThumbnail is a camera frame stand-in for link "emio" only; "vrep"
// has no camera and "late" no frame yet.
func testThumbnail(link string, width int) (image.Image, bool) {
	switch link {
	case "emio":
		img := image.NewRGBA(image.Rect(0, 0, width, width*3/4))
		for i := range img.Pix {
			img.Pix[i] = byte(i)
		}
		return img, true
	case "late":
		return nil, true
	}
	return nil, false
}

// The thumbnail endpoint: a JPEG of the width the page shows, 404 for a
// link without a camera or unknown, 503 while there is no frame yet.
func TestThumbnailEndpoint(t *testing.T) {
	h := New(Config{Snapshot: testSnapshot, Thumbnail: testThumbnail})
	rec := get(t, h, http.MethodGet, "/camera/emio.jpg")
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /camera/emio.jpg = %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "image/jpeg" {
		t.Errorf("Content-Type = %q", ct)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q", cc)
	}
	img, err := jpeg.Decode(rec.Body)
	if err != nil {
		t.Fatalf("not a JPEG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != ThumbnailWidth || b.Dy() != ThumbnailWidth*3/4 {
		t.Errorf("thumbnail %v, want %dx%d", b, ThumbnailWidth, ThumbnailWidth*3/4)
	}
	for _, c := range []struct {
		path string
		code int
	}{
		{"/camera/vrep.jpg", http.StatusNotFound},
		{"/camera/nolink.jpg", http.StatusNotFound},
		{"/camera/emio.png", http.StatusNotFound},
		{"/camera/.jpg", http.StatusNotFound},
		{"/camera/late.jpg", http.StatusServiceUnavailable},
	} {
		if rec := get(t, h, http.MethodGet, c.path); rec.Code != c.code {
			t.Errorf("GET %s = %d, want %d", c.path, rec.Code, c.code)
		}
	}
	if rec := get(t, h, http.MethodPost, "/camera/emio.jpg"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST = %d", rec.Code)
	}
	if got := ThumbnailPath("a b/c"); got != "camera/a%20b%2Fc.jpg" {
		t.Errorf("ThumbnailPath = %q", got)
	}
}

// POST /links/{link}/resume asks the Resume of the configuration; its error
// is a 409 with the reason; GET and a cross-origin POST do nothing.
func TestResumeRoute(t *testing.T) {
	var asked []string
	h := New(Config{Snapshot: func() Snapshot { return Snapshot{} }, Resume: func(link string) error {
		asked = append(asked, link)
		if link != "meca500" {
			return errors.New("bridge: nothing to resume: link emio is running")
		}
		return nil
	}})
	for _, tc := range []struct {
		method, path, origin string
		code                 int
		says                 string
	}{
		{"POST", "/links/meca500/resume", "", http.StatusOK, "resume asked"},
		{"POST", "/links/emio/resume", "", http.StatusConflict, "nothing to resume"},
		{"GET", "/links/meca500/resume", "", http.StatusMethodNotAllowed, ""},
		{"POST", "/links/meca500/resume", "http://elsewhere.example", http.StatusForbidden, ""},
	} {
		req := httptest.NewRequest(tc.method, tc.path, nil)
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
			req.Header.Set("Sec-Fetch-Site", "cross-site")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.says) {
			t.Errorf("%s %s origin %q: %d %q, want %d %q", tc.method, tc.path, tc.origin, rec.Code, rec.Body.String(), tc.code, tc.says)
		}
	}
	if !slices.Equal(asked, []string{"meca500", "emio"}) {
		t.Errorf("Resume asked for %v, want meca500 then emio", asked)
	}
}
