package tracker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labbridge/bridge/internal/testutil"
)

// sampleCalibCSV is a camera_2d_points.csv of a camera about 370 mm above
// the board; sampleIntrinsics are the (float32) depth intrinsics it goes with.
const sampleCalibCSV = "testdata/camera_2d_points.csv"

func sampleIntrinsics() Intrinsics {
	return Intrinsics{Width: 640, Height: 480, PPX: 321.9119873046875, PPY: 238.9344482421875, FX: 384.7325134277344, FY: 384.7325134277344}
}

// axisAngle returns the rotation matrix (row-major) of angle a about axis.
func axisAngle(axis [3]float64, a float64) [9]float64 {
	n := normalize(axis)
	x, y, z := n[0], n[1], n[2]
	c, s := math.Cos(a), math.Sin(a)
	t := 1 - c
	return [9]float64{
		t*x*x + c, t*x*y - s*z, t*x*z + s*y,
		t*x*y + s*z, t*y*y + c, t*y*z - s*x,
		t*x*z - s*y, t*y*z + s*x, t*z*z + c,
	}
}

// lookDown is a pose of a camera above the board looking down (camera z to
// world −y), turned by a about axis, at position pos.
func lookDown(axis [3]float64, a float64, pos [3]float64) Pose {
	down := [3][3]float64{{1, 0, 0}, {0, 0, -1}, {0, 1, 0}} // columns: cam x→x, cam y→z, cam z→−y
	r := axisAngle(axis, a)
	var ps Pose
	for i := range 3 {
		for j := range 3 {
			ps.R[3*i+j] = r[3*i]*down[0][j] + r[3*i+1]*down[1][j] + r[3*i+2]*down[2][j]
		}
	}
	ps.T = pos
	return ps
}

// project returns the exact (float) pixel and depth of world point b.
func project(ps Pose, in Intrinsics, b [3]float64) (u, v, d float64) {
	q := [3]float64{b[0] - ps.T[0], b[1] - ps.T[1], b[2] - ps.T[2]}
	var c [3]float64 // Rᵀ·q
	for k := range 3 {
		c[k] = ps.R[k]*q[0] + ps.R[3+k]*q[1] + ps.R[6+k]*q[2]
	}
	return in.FX*c[0]/c[2] + in.PPX, in.FY*c[1]/c[2] + in.PPY, c[2]
}

func TestBoardPoints(t *testing.T) {
	b := BoardPoints()
	h := 49.49747468305833
	want := [CalibRows][3]float64{
		{-h, -230, 0}, {0, -230, -h}, {h, -230, 0}, {0, -230, h},
		{-h / 2, -230, -h / 2}, {h / 2, -230, -h / 2}, {h / 2, -230, h / 2}, {-h / 2, -230, h / 2},
		{0, -230, 0},
	}
	if b != want {
		t.Errorf("BoardPoints = %v, want %v", b, want)
	}
}

func TestPoseExact(t *testing.T) {
	in := sampleIntrinsics()
	board := BoardPoints()
	for i, tc := range []struct {
		axis [3]float64
		a    float64
		pos  [3]float64
	}{
		{[3]float64{0.2, 0.1, 1}, 0.35, [3]float64{12, 175, -40}},
		{[3]float64{1, -0.4, 0.3}, -0.6, [3]float64{-30, 140, 60}},
		{[3]float64{0, 1, 0}, 2.5, [3]float64{0, 200, 0}},
		{[3]float64{0.3, 0.3, 0.3}, 0, [3]float64{5, 150, 5}},
	} {
		want := lookDown(tc.axis, tc.a, tc.pos)
		var a [CalibRows][3]float64
		for k, b := range board {
			u, v, d := project(want, in, b)
			a[k] = in.Deproject(u, v, d)
		}
		got, err := fitRigid(a[:], board[:])
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if d := poseDiff(got, want); d > 1e-9 {
			t.Errorf("case %d: pose %+v, want %+v (max diff %g)", i, got, want, d)
		}
	}
}

func poseDiff(a, b Pose) float64 {
	var m float64
	for i := range a.R {
		m = max(m, math.Abs(a.R[i]-b.R[i]))
	}
	for i := range a.T {
		m = max(m, math.Abs(a.T[i]-b.T[i]))
	}
	return m
}

// TestPoseTruncated runs the CSV path: integer pixels (emioapi's int of the
// average), so the board points come back within about a millimetre.
func TestPoseTruncated(t *testing.T) {
	in := sampleIntrinsics()
	want := lookDown([3]float64{0.2, 0.1, 1}, 0.35, [3]float64{12, 175, -40})
	var sb strings.Builder
	sb.WriteString("X,Y,Depth,id\n")
	for _, b := range BoardPoints() {
		u, v, d := project(want, in, b)
		fmt.Fprintf(&sb, "%d,%d,%v,672\n", int(u), int(v), d)
	}
	c, err := ParseCalibration(strings.NewReader(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Pose(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range BoardPoints() {
		p := c.Points[i]
		w := got.Apply(in.Deproject(float64(p.X), float64(p.Y), p.Depth))
		if e := math.Hypot(math.Hypot(w[0]-b[0], w[1]-b[1]), w[2]-b[2]); e > 1.5 {
			t.Errorf("board point %d: %v, want %v (%.2f mm off)", i, w, b, e)
		}
	}
}

func TestPoseErrors(t *testing.T) {
	in := sampleIntrinsics()
	same := make([]CalibPoint, CalibRows)
	line := make([]CalibPoint, CalibRows)
	for i := range same {
		same[i] = CalibPoint{X: 100, Y: 100, Depth: 400, ID: 672}
		line[i] = CalibPoint{X: 100 + 10*i, Y: 100, Depth: 400, ID: 672}
	}
	good, err := LoadCalibration(sampleCalibCSV)
	if err != nil {
		t.Fatal(err)
	}
	bad := good
	bad.Points = append([]CalibPoint(nil), good.Points...)
	bad.Points[3].Depth = 0
	for _, tc := range []struct {
		name string
		c    Calibration
		in   Intrinsics
		err  string
	}{
		{"one point", Calibration{Points: same}, in, "degenerate"},
		{"collinear", Calibration{Points: line}, in, "degenerate"},
		{"too few", Calibration{Points: same[:3]}, in, "3 calibration points"},
		{"zero depth", bad, in, "point 3: depth 0"},
		{"zero fx", good, Intrinsics{FY: 1}, "focal length"},
		{"NaN ppx", good, Intrinsics{PPX: math.NaN(), FX: 1, FY: 1}, "ppx = NaN"},
	} {
		p, err := tc.c.Pose(tc.in)
		if err == nil || !errors.Is(err, ErrCalibration) || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: Pose = %+v, %v; want ErrCalibration %q", tc.name, p, err, tc.err)
		}
	}
}

func TestSVD3(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		var h [3][3]float64
		for i := range 3 {
			for j := range 3 {
				h[i][j] = rng.NormFloat64() * 100
			}
		}
		switch trial % 4 {
		case 1: // rank 2
			for j := range 3 {
				h[2][j] = 0.5*h[0][j] - 2*h[1][j]
			}
		case 2: // rank 1
			for i := 1; i < 3; i++ {
				for j := range 3 {
					h[i][j] = float64(i+1) * h[0][j]
				}
			}
		case 3: // two equal singular values
			h = [3][3]float64{{3, 0, 0}, {0, 3, 0}, {0, 0, float64(trial % 7)}}
		}
		u, s, v := svd3(h)
		if !(s[0] >= s[1] && s[1] >= s[2] && s[2] >= 0) {
			t.Fatalf("trial %d: singular values %v not descending", trial, s)
		}
		for i := range 3 {
			for j := range 3 {
				var r, uu, vv float64
				for k := range 3 {
					r += u[i][k] * s[k] * v[j][k]
					uu += u[k][i] * u[k][j]
					vv += v[k][i] * v[k][j]
				}
				id := 0.0
				if i == j {
					id = 1
				}
				if math.Abs(r-h[i][j]) > 1e-10*max(s[0], 1) {
					t.Fatalf("trial %d: U S Vᵀ[%d][%d] = %v, want %v", trial, i, j, r, h[i][j])
				}
				if trial%4 != 2 && (math.Abs(uu-id) > 1e-12 || math.Abs(vv-id) > 1e-12) {
					t.Fatalf("trial %d: UᵀU or VᵀV [%d][%d] = %v, %v", trial, i, j, uu, vv)
				}
			}
		}
	}
	u, s, _ := svd3([3][3]float64{})
	if s != [3]float64{} || u[0][0] != 1 {
		t.Errorf("zero matrix: U %v, S %v", u, s)
	}
}

func TestParseCalibration(t *testing.T) {
	rows := "112,305,357.2640,672\n171,253,377.4581,672\n221,304,390.1941,672\n166,356,369.9043,672\n142,279,367.1797,672\n197,279,383.5250,672\n195,329,380.2420,672\n139,331,364.1196,672\n169,304,373.6224,672\n"
	tests := []struct {
		name, in, err string
	}{
		{"emioapi", "X,Y,Depth,id\n" + rows, ""},
		{"CRLF, BOM and blank lines", "\ufeffX,Y,Depth,id\r\n" + strings.ReplaceAll(rows, "\n", "\r\n") + "\r\n\r\n", ""},
		{"spaces", "X, Y, Depth, id\n" + strings.ReplaceAll(rows, ",", ", "), ""},
		{"no header", rows, `line 1: header "112,305,357.2640,672"`},
		{"empty", "", "no header"},
		{"eight rows", "X,Y,Depth,id\n" + rows[:strings.LastIndex(rows[:len(rows)-1], "\n")+1], "8 rows, want 9"},
		{"ten rows", "X,Y,Depth,id\n" + rows + "1,2,3,4\n", "line 11: more than 9 rows"},
		{"float pixel", "X,Y,Depth,id\n112.5,305,357.2640,672\n", `line 2: X = "112.5" is not an integer`},
		{"bad y", "X,Y,Depth,id\n112,y,357.2640,672\n", `line 2: Y = "y" is not an integer`},
		{"bad id", "X,Y,Depth,id\n112,305,357.2640,\n", `line 2: id = "" is not an integer`},
		{"zero depth", "X,Y,Depth,id\n112,305,0,672\n", `line 2: Depth = "0"`},
		{"negative depth", "X,Y,Depth,id\n112,305,-3,672\n", `line 2: Depth = "-3"`},
		{"NaN depth", "X,Y,Depth,id\n112,305,NaN,672\n", `line 2: Depth = "NaN"`},
		{"Inf depth", "X,Y,Depth,id\n112,305,Inf,672\n", `line 2: Depth = "Inf"`},
		{"three fields", "X,Y,Depth,id\n112,305,357.2640\n", "line 2: 3 fields, want 4"},
		{"long line", "X,Y,Depth,id\n" + strings.Repeat("1", 5000) + "\n", "line 2:"},
		{"huge pixel", "X,Y,Depth,id\n99999999999,305,357.2640,672\n", `X = "99999999999"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseCalibration(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !errors.Is(err, ErrCalibration) || !strings.Contains(err.Error(), tc.err) || !strings.HasPrefix(err.Error(), "tracker:") {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(c.Points) != CalibRows || c.Points[0] != (CalibPoint{112, 305, 357.264, 672}) || c.Points[8] != (CalibPoint{169, 304, 373.6224, 672}) {
				t.Errorf("points %v", c.Points)
			}
		})
	}
	if _, err := LoadCalibration("testdata/missing.csv"); err == nil || !strings.HasPrefix(err.Error(), "tracker:") {
		t.Errorf("missing file: %v", err)
	}
}

func FuzzParseCalibration(f *testing.F) {
	b, err := os.ReadFile(sampleCalibCSV)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte("X,Y,Depth,id\n1,1,1,1\n"))
	f.Add([]byte("X,Y,Depth,id\n" + strings.Repeat("5,5,400,672\n", 9)))
	in := sampleIntrinsics()
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCalibration(strings.NewReader(string(b)))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "tracker:") {
				t.Fatalf("error without prefix: %v", err)
			}
			return
		}
		if len(c.Points) != CalibRows {
			t.Fatalf("%d points", len(c.Points))
		}
		ps, err := c.Pose(in)
		if err != nil {
			if !errors.Is(err, ErrCalibration) {
				t.Fatalf("Pose error %v not ErrCalibration", err)
			}
			return
		}
		if err := ps.Validate(); err != nil {
			t.Fatalf("Pose %+v: %v", ps, err)
		}
		r := [3][3]float64{{ps.R[0], ps.R[1], ps.R[2]}, {ps.R[3], ps.R[4], ps.R[5]}, {ps.R[6], ps.R[7], ps.R[8]}}
		if d := det3(r); math.Abs(d-1) > 1e-6 {
			t.Fatalf("det R = %v for %+v", d, ps)
		}
	})
}

// numpyCalib is emioapi's compute_camera_to_simulation_transform with numpy
// (nghiaho.com's rigid_transform_3D on points as rows).
const numpyCalib = `
import csv, json, sys
import numpy as np
path = sys.argv[1]
ppx, ppy, fx, fy = (float(a) for a in sys.argv[2:6])
with open(path) as f:
    rows = list(csv.DictReader(f))
A = np.array([[(int(r["X"]) - ppx) / fx * float(r["Depth"]),
               (int(r["Y"]) - ppy) / fy * float(r["Depth"]),
               float(r["Depth"])] for r in rows])
elevator, thickness, platform = 70, 3, -303
y = platform + elevator + thickness
h = np.sqrt(70**2 + 70**2) / 2
P = [np.array([-h, y, 0.0]), np.array([0.0, y, -h]), np.array([h, y, 0.0]), np.array([0.0, y, h])]
P += [(P[i] + P[(i + 1) % 4]) / 2 for i in range(4)] + [np.array([0.0, y, 0.0])]
B = np.array(P)
cA = np.mean(A, axis=0)
cB = np.mean(B, axis=0)
H = (A - cA).T @ (B - cB)
U, S, Vt = np.linalg.svd(H)
R = Vt.T @ U.T
if np.linalg.det(R) < 0:
    Vt[2, :] *= -1
    R = Vt.T @ U.T
t = cB - R @ cA
print(json.dumps({"R": R.ravel().tolist(), "T": t.tolist()}))
`

// TestPoseNumpy compares Pose with emioapi's numpy computation on the
// committed CSV and on a few variants of it.
func TestPoseNumpy(t *testing.T) {
	py := testutil.Python(t, "pip install numpy", "numpy")
	b, err := os.ReadFile(sampleCalibCSV)
	if err != nil {
		t.Fatal(err)
	}
	in := sampleIntrinsics()
	dir := t.TempDir()
	csvs := map[string]string{"sample": string(b)}
	var sb strings.Builder
	sb.WriteString("X,Y,Depth,id\n")
	flip := lookDown([3]float64{1, 0, 0.2}, 0.9, [3]float64{-20, 160, 80})
	for _, p := range BoardPoints() {
		u, v, d := project(flip, in, p)
		fmt.Fprintf(&sb, "%d,%d,%.3f,672\n", int(u), int(v), d)
	}
	csvs["turned"] = sb.String()
	// Mirrored pixels: the best fit is a reflection, which the det fix turns
	// into a rotation.
	mirror := strings.Builder{}
	mirror.WriteString("X,Y,Depth,id\n")
	c0, err := ParseCalibration(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c0.Points {
		fmt.Fprintf(&mirror, "%d,%d,%v,%d\n", 640-p.X, p.Y, p.Depth, p.ID)
	}
	csvs["mirrored"] = mirror.String()
	for name, text := range csvs {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name+".csv")
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, py, "-c", numpyCalib, path,
				fmt.Sprint(in.PPX), fmt.Sprint(in.PPY), fmt.Sprint(in.FX), fmt.Sprint(in.FY)).Output()
			if err != nil {
				t.Fatalf("python: %v", err)
			}
			var want Pose
			var j struct{ R, T []float64 }
			if err := json.Unmarshal(out, &j); err != nil || len(j.R) != 9 || len(j.T) != 3 {
				t.Fatalf("python output %q: %v", out, err)
			}
			copy(want.R[:], j.R)
			copy(want.T[:], j.T)
			c, err := LoadCalibration(path)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Pose(in)
			if err != nil {
				t.Fatal(err)
			}
			if d := poseDiff(got, want); d > 1e-9 {
				t.Errorf("Pose %+v\nnumpy %+v\nmax diff %g", got, want, d)
			}
		})
	}
}
