package simulink

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"testing"
)

func TestCodecTranscripts(t *testing.T) {
	cases := []struct {
		name   string
		seq    int64
		values []float64
		hex    string
	}{
		{"handshake nb_markers=1", -1, make([]float64, 7),
			"000000000000f0bf" + "0000000000000000" + "0000000000000000" + "0000000000000000" +
				"0000000000000000" + "0000000000000000" + "0000000000000000" + "0000000000000000"},
		{"reply seq 0 echoed as -1", -1, []float64{0.5, -0.5, 1, 0},
			"000000000000f0bf" + "000000000000e03f" + "000000000000e0bf" + "000000000000f03f" + "0000000000000000"},
		{"seq 3 with pi", 3, []float64{math.Pi}, "0000000000000840" + "182d4454fb210940"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, _ := hex.DecodeString(c.hex)
			buf := make([]byte, DatagramSize(len(c.values)))
			n, err := MarshalTo(buf, c.seq, c.values)
			if err != nil || n != len(want) || !bytes.Equal(buf[:n], want) {
				t.Fatalf("MarshalTo = %x, %v; want %x", buf[:n], err, want)
			}
			got := make([]float64, len(c.values))
			seq, err := Unmarshal(want, got)
			if err != nil || seq != c.seq {
				t.Fatalf("Unmarshal seq %d err %v", seq, err)
			}
			for i := range got {
				if got[i] != c.values[i] {
					t.Fatalf("values %v, want %v", got, c.values)
				}
			}
		})
	}
}

func TestUnmarshalRejects(t *testing.T) {
	good := datagram(2, 1, 2, 3, 4)
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"short", good[:32], ErrSize},
		{"long", append(append([]byte{}, good...), 0), ErrSize},
		{"empty", nil, ErrSize},
		{"nan payload", datagram(2, 1, math.NaN(), 3, 4), ErrNonFinite},
		{"inf seq", datagram(math.Inf(-1), 1, 2, 3, 4), ErrNonFinite},
		{"huge seq", datagram(1e300, 1, 2, 3, 4), ErrSeq},
	}
	for _, c := range cases {
		vals := []float64{9, 9, 9, 9}
		_, err := Unmarshal(c.b, vals)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.want)
		}
		if vals[0] != 9 || vals[3] != 9 {
			t.Errorf("%s: values overwritten by a bad datagram: %v", c.name, vals)
		}
	}
	var se *SizeError
	if _, err := Unmarshal(good[:8], make([]float64, 4)); !errors.As(err, &se) || se.Got != 8 || se.Want != 40 {
		t.Errorf("SizeError %+v", se)
	}
	if _, err := MarshalTo(make([]byte, 8), 0, []float64{1}); !errors.Is(err, ErrSize) {
		t.Errorf("MarshalTo short buffer: %v", err)
	}
}

// seq is truncated toward zero like Python's int().
func TestUnmarshalTruncates(t *testing.T) {
	for in, want := range map[float64]int64{4.9: 4, -0.5: 0, -1.7: -1, 7: 7} {
		if got, err := Unmarshal(datagram(in), nil); err != nil || got != want {
			t.Errorf("seq %v -> %d (%v), want %d", in, got, err, want)
		}
	}
}

func TestCodecAllocs(t *testing.T) {
	vals := []float64{1, 2, 3, 4, 5, 6, 7, 8}
	buf := make([]byte, DatagramSize(len(vals)))
	out := make([]float64, len(vals))
	if a := testing.AllocsPerRun(1000, func() {
		MarshalTo(buf, 42, vals)
		Unmarshal(buf, out)
	}); a != 0 {
		t.Errorf("encode+decode allocates %v", a)
	}
}

func FuzzUnmarshal(f *testing.F) {
	f.Add(datagram(-1, 0, 0, 0, 0), 4)
	f.Add(datagram(3, 1, 2, 3, 4), 4)
	f.Add([]byte{1, 2, 3}, 0)
	f.Add(datagram(math.NaN(), 1), 1)
	f.Fuzz(func(t *testing.T, b []byte, n int) {
		if n < 0 || n > 64 {
			return
		}
		vals := make([]float64, n)
		seq, err := Unmarshal(b, vals)
		if err != nil {
			return
		}
		// Whatever decodes re-encodes to the same bytes, but for seq, which
		// is truncated.
		out := make([]byte, DatagramSize(n))
		if _, err := MarshalTo(out, seq, vals); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out[8:], b[8:]) {
			t.Fatalf("round trip %x != %x", out, b)
		}
	})
}

// BenchmarkCodec9 encodes and decodes a datagram of 9 float64 values on the
// wire: seq and 8 payload values.
func BenchmarkCodec9(b *testing.B) {
	vals := make([]float64, 8)
	for i := range vals {
		vals[i] = float64(i) * 1.5
	}
	buf := make([]byte, DatagramSize(len(vals)))
	out := make([]float64, len(vals))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		MarshalTo(buf, int64(i), vals)
		if _, err := Unmarshal(buf, out); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleMarshalTo() {
	// One measurement of the Emio link with one marker: seq, x, y, z (mm),
	// then four motor angles (rad).
	buf := make([]byte, DatagramSize(7))
	n, _ := MarshalTo(buf, 0, []float64{2, -141, -6, 0.1, 0.2, 0.3, 0.4})
	fmt.Println(n, "bytes")
	fmt.Printf("%x\n", buf[8:16])
	// Output:
	// 64 bytes
	// 0000000000000040
}
