package mecasim

import "math"

// The geometry of the Meca500 R3, mm. At zero joints the flange is at
// (190, 0, 308) with its z axis along the base's x axis: the pose
// (190, 0, 308, 0, 90, 0).
const (
	baseHeight    = 135 // base to the shoulder (J2) axis
	upperArm      = 135 // J2 to J3
	elbowOffset   = 38  // J3 axis up to the forearm (J4) axis
	forearm       = 120 // along the forearm to the wrist centre (J5)
	wristToFlange = 70  // wrist centre to the flange
)

type (
	vec3 [3]float64
	mat3 [3][3]float64
	// frame is a rigid transform: rotation R, then translation p.
	frame struct {
		R mat3
		p vec3
	}
)

// sincos of an angle in degrees, exact at multiples of 90°, so that the
// zero pose is exactly (190, 0, 308, 0, 90, 0).
func sincos(deg float64) (float64, float64) {
	if math.Mod(deg, 90) == 0 {
		switch k := int(math.Mod(math.Mod(deg/90, 4)+4, 4)); k {
		case 0:
			return 0, 1
		case 1:
			return 1, 0
		case 2:
			return 0, -1
		default:
			return -1, 0
		}
	}
	return math.Sincos(deg * math.Pi / 180)
}

func rotX(deg float64) mat3 {
	s, c := sincos(deg)
	return mat3{{1, 0, 0}, {0, c, -s}, {0, s, c}}
}

func rotY(deg float64) mat3 {
	s, c := sincos(deg)
	return mat3{{c, 0, s}, {0, 1, 0}, {-s, 0, c}}
}

func rotZ(deg float64) mat3 {
	s, c := sincos(deg)
	return mat3{{c, -s, 0}, {s, c, 0}, {0, 0, 1}}
}

func (a mat3) mul(b mat3) mat3 {
	var m mat3
	for i := range 3 {
		for j := range 3 {
			m[i][j] = a[i][0]*b[0][j] + a[i][1]*b[1][j] + a[i][2]*b[2][j]
		}
	}
	return m
}

func (a mat3) apply(v vec3) vec3 {
	return vec3{
		a[0][0]*v[0] + a[0][1]*v[1] + a[0][2]*v[2],
		a[1][0]*v[0] + a[1][1]*v[1] + a[1][2]*v[2],
		a[2][0]*v[0] + a[2][1]*v[1] + a[2][2]*v[2],
	}
}

func (a mat3) transpose() mat3 {
	var m mat3
	for i := range 3 {
		for j := range 3 {
			m[i][j] = a[j][i]
		}
	}
	return m
}

// rotate composes f with a rotation about its own axes.
func (f frame) rotate(m mat3) frame { return frame{R: f.R.mul(m), p: f.p} }

// move composes f with a translation along its own axes.
func (f frame) move(x, y, z float64) frame {
	d := f.R.apply(vec3{x, y, z})
	return frame{R: f.R, p: vec3{f.p[0] + d[0], f.p[1] + d[1], f.p[2] + d[2]}}
}

// forward is the flange frame at joints q (degrees) in the base frame. J1
// turns about the base's z axis; J2, J3 and J5 about y; J4 and J6 about x,
// the forearm's axis at zero.
func forward(q [6]float64) frame {
	f := frame{R: rotZ(q[0])}
	f = f.move(0, 0, baseHeight).rotate(rotY(q[1]))
	f = f.move(0, 0, upperArm).rotate(rotY(q[2]))
	f = f.move(forearm, 0, elbowOffset).rotate(rotX(q[3])).rotate(rotY(q[4]))
	f = f.move(wristToFlange, 0, 0).rotate(rotX(q[5]))
	// The flange's z axis points out of the flange: along the forearm.
	return f.rotate(rotY(90))
}

// poseOf is the pose of a frame as the robot reports it: x, y, z in mm, then
// the mobile XYZ Euler angles α, β, γ in degrees (R = Rx(α)·Ry(β)·Rz(γ)). At
// β = ±90° only α ± γ is defined; α is then 0, as at the zero pose.
func poseOf(f frame) [6]float64 {
	const deg = 180 / math.Pi
	R := f.R
	var a, b, g float64
	if s := R[0][2]; math.Abs(s) >= 1-1e-12 {
		b = math.Copysign(90, s)
		g = math.Atan2(R[1][0], R[1][1]) * deg
	} else {
		b = math.Asin(s) * deg
		a = math.Atan2(-R[1][2], R[2][2]) * deg
		g = math.Atan2(-R[0][1], R[0][0]) * deg
	}
	return [6]float64{f.p[0], f.p[1], f.p[2], a, b, g}
}

// eulerXYZ is the rotation of mobile XYZ Euler angles in degrees, as poseOf
// reads them: Rx(α)·Ry(β)·Rz(γ).
func eulerXYZ(a [3]float64) mat3 { return rotX(a[0]).mul(rotY(a[1])).mul(rotZ(a[2])) }

// rotationVector is the axis of rotation R times its angle, in degrees
// (the logarithm of R): R's own axes, so a rotation in a frame's axes is
// the frame's.
func rotationVector(R mat3) vec3 {
	const deg = 180 / math.Pi
	c := math.Max(-1, math.Min(1, (R[0][0]+R[1][1]+R[2][2]-1)/2))
	theta := math.Acos(c)
	v := vec3{R[2][1] - R[1][2], R[0][2] - R[2][0], R[1][0] - R[0][1]} // 2 sin θ · axis
	s := math.Sin(theta)
	switch {
	case theta < 1e-9:
		return vec3{v[0] / 2 * deg, v[1] / 2 * deg, v[2] / 2 * deg}
	case s < 1e-6:
		// Near a half turn the skew part vanishes: the axis is from the
		// diagonal (R = 2aaᵀ − I), its signs from the largest component.
		k := 0
		for i := 1; i < 3; i++ {
			if R[i][i] > R[k][k] {
				k = i
			}
		}
		var a vec3
		a[k] = math.Sqrt(math.Max(0, (R[k][k]+1)/2))
		for i := range 3 {
			if i != k {
				a[i] = (R[i][k] + R[k][i]) / (4 * a[k])
			}
		}
		return vec3{a[0] * theta * deg, a[1] * theta * deg, a[2] * theta * deg}
	}
	f := theta / (2 * s) * deg
	return vec3{v[0] * f, v[1] * f, v[2] * f}
}

// jacobian is the numerical geometric Jacobian at q: column i is the flange's
// linear velocity (mm/rad) and angular velocity (rad/rad, base frame) per
// radian of joint i, by central differences.
func jacobian(q [6]float64) [6][6]float64 {
	const hDeg = 1e-4
	h := hDeg * math.Pi / 180
	var J [6][6]float64
	for i := range 6 {
		qp, qm := q, q
		qp[i] += hDeg
		qm[i] -= hDeg
		fp, fm := forward(qp), forward(qm)
		for k := range 3 {
			J[k][i] = (fp.p[k] - fm.p[k]) / (2 * h)
		}
		// R+ · R−ᵀ ≈ I + [ω·2h]×: ω is the vector of its skew part.
		d := fp.R.mul(fm.R.transpose())
		J[3][i] = (d[2][1] - d[1][2]) / 2 / (2 * h)
		J[4][i] = (d[0][2] - d[2][0]) / 2 / (2 * h)
		J[5][i] = (d[1][0] - d[0][1]) / 2 / (2 * h)
	}
	return J
}

// Damped least squares: q̇ = Jᵀ (J Jᵀ + λ² I)⁻¹ v, with the angular rows
// weighted by a length so that both halves are in mm. The damping keeps the
// joint speeds bounded near singularities (the zero pose is one: J4 and J6
// are aligned), at the price of a small tracking error there.
const (
	dlsLength = 100 // mm per radian of the angular rows
	dlsLambda = 2   // mm
)

// cartesianToJoint maps a flange velocity in the base frame (mm/s, then °/s
// about x, y, z) to joint speeds (°/s) at q, scaled down proportionally when
// a joint would exceed its admissible speed (§6).
func cartesianToJoint(q, v [6]float64) [6]float64 {
	J := jacobian(q)
	var b [6]float64
	for k := range 3 {
		b[k] = v[k]
		b[k+3] = v[k+3] * math.Pi / 180 * dlsLength
		for i := range 6 {
			J[k+3][i] *= dlsLength
		}
	}
	var A [6][6]float64
	for r := range 6 {
		for c := range 6 {
			for i := range 6 {
				A[r][c] += J[r][i] * J[c][i]
			}
		}
		A[r][r] += dlsLambda * dlsLambda
	}
	y := solve(A, b)
	var qd [6]float64
	scale := 1.0
	for i := range 6 {
		for k := range 6 {
			qd[i] += J[k][i] * y[k]
		}
		qd[i] *= 180 / math.Pi
		scale = max(scale, math.Abs(qd[i])/maxJointSpeed(i))
	}
	for i := range qd {
		qd[i] /= scale
	}
	return qd
}

// jointToCartesian maps joint speeds (°/s) at q to the flange velocity (mm/s,
// °/s) in the base frame.
func jointToCartesian(q, qd [6]float64) [6]float64 {
	J := jacobian(q)
	var v [6]float64
	for k := range 6 {
		for i := range 6 {
			v[k] += J[k][i] * qd[i] * math.Pi / 180
		}
	}
	for k := 3; k < 6; k++ {
		v[k] *= 180 / math.Pi
	}
	return v
}

// toWorld expresses a velocity given in the tool frame R in the base frame.
func toWorld(R mat3, v [6]float64) [6]float64 {
	l := R.apply(vec3{v[0], v[1], v[2]})
	w := R.apply(vec3{v[3], v[4], v[5]})
	return [6]float64{l[0], l[1], l[2], w[0], w[1], w[2]}
}

// solve solves A x = b by Gaussian elimination with partial pivoting. A is
// symmetric positive definite here (damped), so it never divides by zero;
// a zero pivot gives a zero component rather than a NaN all the same.
func solve(A [6][6]float64, b [6]float64) [6]float64 {
	for c := range 6 {
		p := c
		for r := c + 1; r < 6; r++ {
			if math.Abs(A[r][c]) > math.Abs(A[p][c]) {
				p = r
			}
		}
		A[c], A[p] = A[p], A[c]
		b[c], b[p] = b[p], b[c]
		if A[c][c] == 0 {
			continue
		}
		for r := c + 1; r < 6; r++ {
			f := A[r][c] / A[c][c]
			for k := c; k < 6; k++ {
				A[r][k] -= f * A[c][k]
			}
			b[r] -= f * b[c]
		}
	}
	var x [6]float64
	for r := 5; r >= 0; r-- {
		if A[r][r] == 0 {
			continue
		}
		s := b[r]
		for k := r + 1; k < 6; k++ {
			s -= A[r][k] * x[k]
		}
		x[r] = s / A[r][r]
	}
	return x
}
