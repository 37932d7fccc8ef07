package tracker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// ErrCalibration reports calibration points or intrinsics from which no pose
// can be computed.
var ErrCalibration = errors.New("tracker: bad calibration")

// Intrinsics are the pinhole intrinsics of the depth stream. emioapi
// deprojects colour pixels with the depth intrinsics and no distortion model
// (docs/realsense.md §8.1–§8.2). Values are the camera's float32 values
// widened to float64, as pyrealsense2 hands them to Python.
type Intrinsics struct {
	Width, Height int
	PPX, PPY      float64
	FX, FY        float64
}

// Validate checks that the intrinsics can deproject: finite values and
// non-zero focal lengths.
func (in Intrinsics) Validate() error {
	for _, f := range [...]struct {
		name string
		v    float64
	}{{"ppx", in.PPX}, {"ppy", in.PPY}, {"fx", in.FX}, {"fy", in.FY}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("tracker: intrinsic %s = %v is not finite: %w", f.name, f.v, ErrCalibration)
		}
	}
	if in.FX == 0 || in.FY == 0 {
		return fmt.Errorf("tracker: focal length fx = %v, fy = %v: %w", in.FX, in.FY, ErrCalibration)
	}
	if in.Width < 0 || in.Height < 0 {
		return fmt.Errorf("tracker: intrinsics size %dx%d: %w", in.Width, in.Height, ErrCalibration)
	}
	return nil
}

// Deproject is emioapi's image_pixel_to_mm: the camera-space point of pixel
// (x, y) at depth d, [((x−ppx)/fx)·d, ((y−ppy)/fy)·d, d], in this order of
// float64 operations.
func (in Intrinsics) Deproject(x, y, d float64) [3]float64 {
	return [3]float64{((x - in.PPX) / in.FX) * d, ((y - in.PPY) / in.FY) * d, d}
}

// CalibPoint is one row of emioapi's camera_2d_points.csv: the pixel of a
// board point (int of the averaged pixel), its averaged depth in mm and the
// ArUco marker id (672).
type CalibPoint struct {
	X, Y  int
	Depth float64
	ID    int
}

// CalibRows is the number of rows of camera_2d_points.csv: the 4 corners, the
// 4 edge midpoints and the centre of the ArUco board, in BoardPoints order.
const CalibRows = 9

// calibHeader is the first line emioapi writes.
const calibHeader = "X,Y,Depth,id"

// maxCalibLine bounds one CSV line.
const maxCalibLine = 4096

// Calibration is the content of camera_2d_points.csv.
type Calibration struct {
	Points []CalibPoint
}

// ParseCalibration reads a camera_2d_points.csv: the header X,Y,Depth,id,
// then exactly CalibRows rows of int x, int y, depth (mm, finite and > 0) and
// int id. Blank lines are ignored; errors name the line and the field.
func ParseCalibration(r io.Reader) (Calibration, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 256), maxCalibLine)
	var c Calibration
	line, header := 0, false
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if line == 1 {
			s = strings.TrimPrefix(s, "\ufeff") // spreadsheet editors add a BOM
		}
		if s == "" {
			continue
		}
		if !header {
			if strings.ReplaceAll(s, " ", "") != calibHeader {
				return Calibration{}, fmt.Errorf("tracker: calibration line %d: header %q, want %q: %w", line, s, calibHeader, ErrCalibration)
			}
			header = true
			continue
		}
		if len(c.Points) == CalibRows {
			return Calibration{}, fmt.Errorf("tracker: calibration line %d: more than %d rows: %w", line, CalibRows, ErrCalibration)
		}
		p, err := parseCalibRow(s, line)
		if err != nil {
			return Calibration{}, err
		}
		c.Points = append(c.Points, p)
	}
	if err := sc.Err(); err != nil {
		return Calibration{}, fmt.Errorf("tracker: calibration line %d: %v: %w", line+1, err, ErrCalibration)
	}
	if !header {
		return Calibration{}, fmt.Errorf("tracker: calibration: no header %q: %w", calibHeader, ErrCalibration)
	}
	if len(c.Points) != CalibRows {
		return Calibration{}, fmt.Errorf("tracker: calibration: %d rows, want %d: %w", len(c.Points), CalibRows, ErrCalibration)
	}
	return c, nil
}

func parseCalibRow(s string, line int) (CalibPoint, error) {
	f := strings.Split(s, ",")
	if len(f) != 4 {
		return CalibPoint{}, fmt.Errorf("tracker: calibration line %d: %d fields, want 4: %w", line, len(f), ErrCalibration)
	}
	var p CalibPoint
	ints := [...]struct {
		name string
		i    int
		dst  *int
	}{{"X", 0, &p.X}, {"Y", 1, &p.Y}, {"id", 3, &p.ID}}
	for _, n := range ints {
		v, err := strconv.Atoi(strings.TrimSpace(f[n.i]))
		if err != nil || v < -1<<30 || v > 1<<30 {
			return CalibPoint{}, fmt.Errorf("tracker: calibration line %d: %s = %q is not an integer: %w", line, n.name, f[n.i], ErrCalibration)
		}
		*n.dst = v
	}
	d, err := strconv.ParseFloat(strings.TrimSpace(f[2]), 64)
	if err != nil || math.IsNaN(d) || math.IsInf(d, 0) || d <= 0 {
		return CalibPoint{}, fmt.Errorf("tracker: calibration line %d: Depth = %q, want a finite depth > 0 mm: %w", line, f[2], ErrCalibration)
	}
	p.Depth = d
	return p, nil
}

// LoadCalibration reads and parses a camera_2d_points.csv file.
func LoadCalibration(path string) (Calibration, error) {
	f, err := os.Open(path)
	if err != nil {
		return Calibration{}, fmt.Errorf("tracker: %w", err)
	}
	defer f.Close()
	c, err := ParseCalibration(f)
	if err != nil {
		return c, fmt.Errorf("%w (%s)", err, path)
	}
	return c, nil
}

// Board geometry of emioapi's calibration (_positionestimation.py), in mm:
// the ArUco board lies on the elevator above the platform.
const (
	boardElevator  = 70.0
	arucoThickness = 3.0
	platformY      = -303.0
	boardSize      = 70.0
)

// BoardPoints returns the reference points of the calibration board in world
// (Emio/SOFA) mm, in the row order of camera_2d_points.csv: the corners
// P0 = (−h, y, 0), P1 = (0, y, −h), P2 = (h, y, 0), P3 = (0, y, h), the
// midpoints of P0P1, P1P2, P2P3, P3P0 and the centre, with
// y = −303 + 70 + 3 = −230 and h = √(70² + 70²)/2.
func BoardPoints() [CalibRows][3]float64 {
	y := platformY + boardElevator + arucoThickness
	h := math.Sqrt(boardSize*boardSize+boardSize*boardSize) / 2
	var p [CalibRows][3]float64
	p[0] = [3]float64{-h, y, 0}
	p[1] = [3]float64{0, y, -h}
	p[2] = [3]float64{h, y, 0}
	p[3] = [3]float64{0, y, h}
	for i := range 4 {
		a, b := p[i], p[(i+1)%4]
		p[4+i] = [3]float64{(a[0] + b[0]) / 2, (a[1] + b[1]) / 2, (a[2] + b[2]) / 2}
	}
	p[8] = [3]float64{0, y, 0}
	return p
}

// Pose maps camera-space mm to world (Emio/SOFA) mm: world = R·p + T, R
// row-major.
type Pose struct {
	R [9]float64
	T [3]float64
}

// IdentityPose returns the pose that leaves camera points unchanged.
func IdentityPose() Pose {
	return Pose{R: [9]float64{1, 0, 0, 0, 1, 0, 0, 0, 1}}
}

// Apply returns R·p + T, each row as (R0·p0 + R1·p1) + R2·p2, then + T: the
// order numpy's R @ p then += t gives for these sizes without FMA. emioapi's
// numpy may use a BLAS kernel with another order or FMA, so parity is within
// 1e-9, not to the last bit.
func (ps *Pose) Apply(p [3]float64) [3]float64 {
	r := &ps.R
	return [3]float64{
		(r[0]*p[0] + r[1]*p[1]) + r[2]*p[2] + ps.T[0],
		(r[3]*p[0] + r[4]*p[1]) + r[5]*p[2] + ps.T[1],
		(r[6]*p[0] + r[7]*p[1]) + r[8]*p[2] + ps.T[2],
	}
}

// Validate checks that every value of the pose is finite.
func (ps Pose) Validate() error {
	for i, v := range ps.R {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("tracker: pose R[%d] = %v is not finite: %w", i, v, ErrCalibration)
		}
	}
	for i, v := range ps.T {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("tracker: pose T[%d] = %v is not finite: %w", i, v, ErrCalibration)
		}
	}
	return nil
}

// Pose is emioapi's compute_camera_to_simulation_transform: it deprojects
// each CSV row with in, pairs row i with BoardPoints()[i] and fits the rigid
// transform by SVD (Kabsch, as numpy: H = Σ (a−cA)(b−cB)ᵀ, H = U S Vᵀ,
// R = V Uᵀ, the third right singular vector negated when det R < 0,
// T = cB − R·cA). Points that do not span a plane are ErrCalibration.
func (c Calibration) Pose(in Intrinsics) (Pose, error) {
	if err := in.Validate(); err != nil {
		return Pose{}, err
	}
	if len(c.Points) != CalibRows {
		return Pose{}, fmt.Errorf("tracker: %d calibration points, want %d: %w", len(c.Points), CalibRows, ErrCalibration)
	}
	var a [CalibRows][3]float64
	for i, p := range c.Points {
		if math.IsNaN(p.Depth) || math.IsInf(p.Depth, 0) || p.Depth <= 0 {
			return Pose{}, fmt.Errorf("tracker: calibration point %d: depth %v, want a finite depth > 0 mm: %w", i, p.Depth, ErrCalibration)
		}
		a[i] = in.Deproject(float64(p.X), float64(p.Y), p.Depth)
	}
	b := BoardPoints()
	return fitRigid(a[:], b[:])
}

// fitRigid returns the rigid transform that maps the points a onto b in the
// least-squares sense (nghiaho.com's method, as emioapi with numpy).
func fitRigid(a, b [][3]float64) (Pose, error) {
	n := len(a)
	if n == 0 || n != len(b) {
		return Pose{}, fmt.Errorf("tracker: %d and %d points to fit: %w", len(a), len(b), ErrCalibration)
	}
	// np.mean(A, axis=0) over rows adds them in order, then divides.
	var ca, cb [3]float64
	for i := range n {
		for k := range 3 {
			ca[k] += a[i][k]
			cb[k] += b[i][k]
		}
	}
	for k := range 3 {
		ca[k] /= float64(n)
		cb[k] /= float64(n)
	}
	var h [3][3]float64
	for i := range n {
		for j := range 3 {
			for k := range 3 {
				h[j][k] += (a[i][j] - ca[j]) * (b[i][k] - cb[k])
			}
		}
	}
	for j := range 3 {
		for k := range 3 {
			if math.IsNaN(h[j][k]) || math.IsInf(h[j][k], 0) {
				return Pose{}, fmt.Errorf("tracker: calibration points overflow: %w", ErrCalibration)
			}
		}
	}
	u, s, v := svd3(h)
	// The board is planar, so s[2] ≈ 0 is expected; s[1] ≈ 0 means the
	// camera points lie on a line (or a point) and no rotation fits.
	if !(s[0] > 0) || s[1] <= 1e-9*s[0] {
		return Pose{}, fmt.Errorf("tracker: calibration points are degenerate (singular values %g, %g, %g): %w", s[0], s[1], s[2], ErrCalibration)
	}
	r := mulABt(v, u)
	if det3(r) < 0 {
		for i := range 3 {
			v[i][2] = -v[i][2]
		}
		r = mulABt(v, u)
	}
	// Points far beyond a lab's scale (1e99 mm) leave the SVD without the
	// precision for a rotation; refuse them rather than return a pose that
	// flattens space.
	if d := det3(r); !(math.Abs(d-1) <= 1e-6) {
		return Pose{}, fmt.Errorf("tracker: calibration points give no rotation (det %g): %w", d, ErrCalibration)
	}
	var ps Pose
	for i := range 3 {
		for j := range 3 {
			ps.R[3*i+j] = r[i][j]
		}
	}
	rc := ps.Apply(ca) // R·cA, T still zero
	for k := range 3 {
		ps.T[k] = cb[k] - rc[k]
	}
	if err := ps.Validate(); err != nil {
		return Pose{}, err
	}
	return ps, nil
}

// mulABt returns a·bᵀ.
func mulABt(a, b [3][3]float64) [3][3]float64 {
	var r [3][3]float64
	for i := range 3 {
		for j := range 3 {
			r[i][j] = a[i][0]*b[j][0] + a[i][1]*b[j][1] + a[i][2]*b[j][2]
		}
	}
	return r
}

func det3(m [3][3]float64) float64 {
	return m[0][0]*(m[1][1]*m[2][2]-m[1][2]*m[2][1]) -
		m[0][1]*(m[1][0]*m[2][2]-m[1][2]*m[2][0]) +
		m[0][2]*(m[1][0]*m[2][1]-m[1][1]*m[2][0])
}

// svd3 returns U, S, V with h = U·diag(S)·Vᵀ, S descending, U and V
// orthogonal (columns are the singular vectors). It runs one-sided Jacobi on
// the columns of h, which is accurate for the small singular values too.
// Columns of U whose singular value is negligible are completed from the
// others, so U stays orthogonal when h has rank 2 (a planar board) or less.
func svd3(h [3][3]float64) (u [3][3]float64, s [3]float64, v [3][3]float64) {
	a := h
	v = [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
	for sweep := 0; sweep < 64; sweep++ {
		rotated := false
		for p := 0; p < 2; p++ {
			for q := p + 1; q < 3; q++ {
				var alpha, beta, gamma float64
				for i := range 3 {
					alpha += a[i][p] * a[i][p]
					beta += a[i][q] * a[i][q]
					gamma += a[i][p] * a[i][q]
				}
				if gamma == 0 || math.Abs(gamma) <= 1e-15*math.Sqrt(alpha*beta) {
					continue
				}
				rotated = true
				zeta := (beta - alpha) / (2 * gamma)
				t := 1 / (math.Abs(zeta) + math.Sqrt(1+zeta*zeta))
				if zeta < 0 {
					t = -t
				}
				c := 1 / math.Sqrt(1+t*t)
				sn := c * t
				for i := range 3 {
					ap, aq := a[i][p], a[i][q]
					a[i][p], a[i][q] = c*ap-sn*aq, sn*ap+c*aq
					vp, vq := v[i][p], v[i][q]
					v[i][p], v[i][q] = c*vp-sn*vq, sn*vp+c*vq
				}
			}
		}
		if !rotated {
			break
		}
	}
	for k := range 3 {
		s[k] = math.Sqrt(a[0][k]*a[0][k] + a[1][k]*a[1][k] + a[2][k]*a[2][k])
	}
	// Sort descending, moving the columns of a and v along.
	for i := 1; i < 3; i++ {
		for j := i; j > 0 && s[j] > s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
			for r := range 3 {
				a[r][j], a[r][j-1] = a[r][j-1], a[r][j]
				v[r][j], v[r][j-1] = v[r][j-1], v[r][j]
			}
		}
	}
	tol := 1e-12 * s[0]
	for k := range 3 {
		if s[k] > tol && s[k] > 0 {
			for r := range 3 {
				u[r][k] = a[r][k] / s[k]
			}
			continue
		}
		switch k {
		case 2:
			c := cross(col(u, 0), col(u, 1))
			for r := range 3 {
				u[r][2] = c[r]
			}
		case 1:
			// Any unit vector orthogonal to u0; the caller rejects rank 1.
			u0 := col(u, 0)
			e := [3]float64{1, 0, 0}
			if math.Abs(u0[0]) > 0.5 {
				e = [3]float64{0, 1, 0}
			}
			c := normalize(cross(u0, e))
			for r := range 3 {
				u[r][1] = c[r]
			}
		default:
			u = [3][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}
			return u, s, v
		}
	}
	return u, s, v
}

func col(m [3][3]float64, k int) [3]float64 {
	return [3]float64{m[0][k], m[1][k], m[2][k]}
}

func cross(a, b [3]float64) [3]float64 {
	return [3]float64{a[1]*b[2] - a[2]*b[1], a[2]*b[0] - a[0]*b[2], a[0]*b[1] - a[1]*b[0]}
}

func normalize(a [3]float64) [3]float64 {
	n := math.Sqrt(a[0]*a[0] + a[1]*a[1] + a[2]*a[2])
	if n == 0 {
		return a
	}
	return [3]float64{a[0] / n, a[1] / n, a[2] / n}
}
