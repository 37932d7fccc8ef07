// Package simserve serves a simulated device to a person, as `bridge sim
// servos`, `bridge sim meca500` and `bridge sim vrep` do: the device on its
// port (a pseudo-terminal that any Dynamixel software opens, or a TCP port
// that mecademicpy, the seed's client or CoppeliaSim's ZMQ client connect
// to), a banner that says how to connect, a console that injects faults
// (lines typed on standard input and an HTTP endpoint), and what was served
// when it stops. The devices are dynamixel/dxlsim's, meca500/mecasim's and
// vrep/vrepsim's (docs/dynamixel.md, docs/meca500.md, docs/vrep.md).
package simserve
