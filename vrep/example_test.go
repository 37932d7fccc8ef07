package vrep_test

import (
	"fmt"

	"github.com/labbridge/bridge/vrep"
)

// An AZ request as the seed's client packs it ('<BBff').
func ExampleRequest_MarshalTo() {
	var b [vrep.RequestLen]byte
	n, _ := vrep.Request{Left: 1, Right: -0.5}.MarshalTo(b[:])
	fmt.Printf("% x\n", b[:n])
	// Output: 41 5a 00 00 80 3f 00 00 00 bf
}

// A reply of the seed's scene ('<BBfff'): time, then the wheel angles.
func ExampleReply_Unmarshal() {
	b := []byte{'A', 'Z', 0xcd, 0xcc, 0x4c, 0x3d, 0xcd, 0xcc, 0x4c, 0x3d, 0xcd, 0xcc, 0xcc, 0xbc}
	var r vrep.Reply
	err := r.Unmarshal(b)
	fmt.Println(r.Time, r.Left, r.Right, err)
	// Output: 0.05 0.05 -0.025 <nil>
}

// Float64 commands are narrowed to float32 only when float32 can carry
// them.
func ExampleNarrow() {
	for _, x := range []float64{1.5, 1e39} {
		f, err := vrep.Narrow(x)
		fmt.Println(f, err)
	}
	// Output:
	// 1.5 <nil>
	// 0 vrep: value out of float32 range: 1e+39
}

// The vectors of an AZ link whose Simulink model wants the angles first.
func ExampleLayout() {
	lay := vrep.Layout(vrep.Config{Measure: []string{vrep.LeftAngle, vrep.RightAngle, vrep.SimTime}})
	for _, f := range lay.Measure {
		fmt.Println(f.Name, f.Unit, f.Len)
	}
	fmt.Println(lay.Command[0].Name, lay.Command[0].Unit, lay.Command[0].Len)
	// Output:
	// angles rad 2
	// sim_time s 1
	// speeds rad/s 2
}
