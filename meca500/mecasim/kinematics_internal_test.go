package mecasim

import (
	"math"
	"testing"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// The forward kinematics at poses whose flange pose follows from the
// geometry by hand.
func TestForward(t *testing.T) {
	nan := math.NaN() // an angle not checked: TestPoseAngles covers them
	cases := []struct {
		q    [6]float64
		want [6]float64
	}{
		// The zero pose: flange along x, 190 mm out, 308 mm up.
		{[6]float64{}, [6]float64{190, 0, 308, 0, 90, 0}},
		// J1 turns the arm to +y: the flange's z along y.
		{[6]float64{90, 0, 0, 0, 0, 0}, [6]float64{0, 190, 308, -90, 0, 90}},
		// J2 at 90° lays the upper arm forward and points the forearm
		// down: the flange at (135 + 38, 0, 135 − 120 − 70).
		{[6]float64{0, 90, 0, 0, 0, 0}, [6]float64{173, 0, -55, nan, 0, nan}},
		// J3 at −90° points the forearm up, the elbow offset backwards.
		{[6]float64{0, 0, -90, 0, 0, 0}, [6]float64{-38, 0, 460, 0, 0, 0}},
		// J6 spins the flange about its own axis: γ, at β = 90°.
		{[6]float64{0, 0, 0, 0, 0, 30}, [6]float64{190, 0, 308, 0, 90, 30}},
		// J5 tilts the flange down by 90°: its z axis along −z.
		{[6]float64{0, 0, 0, 0, 90, 0}, [6]float64{120, 0, 308 - 70, nan, 0, nan}},
	}
	for _, c := range cases {
		got := poseOf(forward(c.q))
		for i := range got {
			if !math.IsNaN(c.want[i]) && !near(got[i], c.want[i], 1e-9) {
				t.Errorf("pose at %v: got %v, want %v", c.q, got, c.want)
				break
			}
		}
	}
}

// The Euler angles describe the frame's rotation: Rx(α)·Ry(β)·Rz(γ) = R.
func TestPoseAngles(t *testing.T) {
	for _, q := range [][6]float64{{10, 20, 30, 40, 50, 60}, {-170, -60, 60, -160, 110, 170}, {0, 10, -20, 0, 0, 45}} {
		f := forward(q)
		p := poseOf(f)
		R := rotX(p[3]).mul(rotY(p[4])).mul(rotZ(p[5]))
		for i := range 3 {
			for j := range 3 {
				if !near(R[i][j], f.R[i][j], 1e-9) {
					t.Fatalf("at %v: pose %v rebuilds %v, not %v", q, p, R, f.R)
				}
			}
		}
	}
}

// The Jacobian predicts small motions of the forward kinematics.
func TestJacobian(t *testing.T) {
	q := [6]float64{10, -20, 30, 40, 50, 60}
	J := jacobian(q)
	dq := [6]float64{0.01, -0.02, 0.015, 0.01, -0.01, 0.02} // degrees
	q2 := q
	for i := range q2 {
		q2[i] += dq[i]
	}
	f1, f2 := forward(q), forward(q2)
	for k := range 3 {
		var pred float64
		for i := range 6 {
			pred += J[k][i] * dq[i] * math.Pi / 180
		}
		if got := f2.p[k] - f1.p[k]; !near(got, pred, 1e-4) {
			t.Errorf("axis %d: moved %v, Jacobian says %v", k, got, pred)
		}
	}
}

// The damped least-squares inverse moves the flange as asked, away from
// singularities and at the zero pose (a wrist singularity), and respects the
// joints' admissible speeds.
func TestCartesianToJoint(t *testing.T) {
	for _, c := range []struct {
		q   [6]float64
		v   [6]float64
		tol float64 // relative
	}{
		{[6]float64{10, -20, 30, 40, 50, 60}, [6]float64{10, 0, 0, 0, 0, 0}, 0.01},
		{[6]float64{10, -20, 30, 40, 50, 60}, [6]float64{0, -5, 8, 0, 0, 0}, 0.01},
		{[6]float64{10, -20, 30, 40, 50, 60}, [6]float64{0, 0, 0, 10, 0, -5}, 0.01},
		{[6]float64{}, [6]float64{0, 0, 10, 0, 0, 0}, 0.05},
		{[6]float64{}, [6]float64{-10, 0, 0, 0, 0, 0}, 0.05},
	} {
		qd := cartesianToJoint(c.q, c.v)
		got := jointToCartesian(c.q, qd)
		var norm, errNorm float64
		for i := range got {
			norm += c.v[i] * c.v[i]
			errNorm += (got[i] - c.v[i]) * (got[i] - c.v[i])
		}
		if math.Sqrt(errNorm) > c.tol*math.Sqrt(norm) {
			t.Errorf("at %v, asked %v: joint speeds %v give %v", c.q, c.v, qd, got)
		}
	}
	// Too fast for the joints: scaled down proportionally (§6).
	q := [6]float64{10, -20, 30, 40, 50, 60}
	qd := cartesianToJoint(q, [6]float64{1000, 0, 0, 0, 0, 300})
	for i, w := range qd {
		if math.Abs(w) > maxJointSpeed(i)*(1+1e-12) {
			t.Errorf("joint %d at %v °/s", i+1, w)
		}
	}
	slow := cartesianToJoint(q, [6]float64{1, 0, 0, 0, 0, 0.3})
	for i := range qd {
		if math.Abs(slow[i]) > 1e-9 && !near(qd[i]/slow[i], qd[0]/slow[0], 1e-6*math.Abs(qd[0]/slow[0])) {
			t.Errorf("not a proportional scaling: %v vs %v", qd, slow)
			break
		}
	}
}

// A small Cartesian velocity integrated over a short time moves the pose in
// that direction.
func TestCartesianIntegration(t *testing.T) {
	q := [6]float64{0, -10, 30, 0, 40, 0}
	start := forward(q).p
	v := [6]float64{5, 5, -5, 0, 0, 0} // mm/s
	for range 200 {                    // 0.2 s in 1 ms steps
		qd := cartesianToJoint(q, v)
		for i := range q {
			q[i] += qd[i] * 0.001
		}
	}
	end := forward(q).p
	for k := range 3 {
		if d := end[k] - start[k]; !near(d, v[k]*0.2, 0.01) {
			t.Errorf("axis %d moved %v mm, want %v", k, d, v[k]*0.2)
		}
	}
}
