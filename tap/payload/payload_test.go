package payload

import (
	"encoding/hex"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func sampleRecord() Record {
	return Record{
		Status: 2, Flags: FlagApplied, State: 2, Seq: 41, Tick: 1000,
		Deadline: 1_700_000_000_000_000_000, Sent: 1_700_000_000_000_012_345,
		Lateness: 12345, ReplyLatency: 80_000,
		Measurement: []float64{1, -0.5},
		Command:     []float64{0.25},
		Applied:     []float64{0.25},
	}
}

// The bytes of a payload, field by field (docs/tap.md §3).
func TestPayloadTranscript(t *testing.T) {
	r := sampleRecord()
	buf := make([]byte, r.MarshalSize())
	n, err := r.MarshalTo(buf)
	if err != nil || n != 48+8*4 {
		t.Fatalf("MarshalTo: %d, %v", n, err)
	}
	want := strings.Join([]string{
		"01", "02", "02", "02", // version, status OK_NO_DELAY, flags applied, state running
		"0002", "0001", // M, C
		"0000000000000029",                     // seq 41
		"00000000000003e8",                     // tick 1000
		"17979cfe362a0000",                     // deadline, Unix ns
		"17979cfe362a3039",                     // sent
		"00003039",                             // lateness 12345 ns
		"00013880",                             // reply latency 80000 ns
		"3ff0000000000000", "bfe0000000000000", // measurement 1, -0.5
		"3fd0000000000000", // command 0.25
		"3fd0000000000000", // applied 0.25
	}, "")
	if got := hex.EncodeToString(buf[:n]); got != want {
		t.Errorf("payload\n got %s\nwant %s", got, want)
	}
	var back Record
	if err := back.Unmarshal(buf[:n]); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, r) {
		t.Errorf("read back %+v, want %+v", back, r)
	}
}

func sampleDescriptor() *Descriptor {
	return &Descriptor{
		Link: "emio", RateHz: 30,
		Measure: []Field{{"markers", "mm", 1}, {"angles", "rad", 1}},
		Command: []Field{{"angles", "rad", 1}},
	}
}

// A descriptor follows the vectors when the flag says so.
func TestDescriptorTranscript(t *testing.T) {
	r := sampleRecord()
	r.Flags |= FlagDescriptor
	r.Descriptor = sampleDescriptor()
	buf := make([]byte, r.MarshalSize())
	n, err := r.MarshalTo(buf)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"0036",             // 54 bytes follow
		"403e000000000000", // 30 Hz
		"04" + hex.EncodeToString([]byte("emio")),
		"02",
		"07" + hex.EncodeToString([]byte("markers")) + "02" + hex.EncodeToString([]byte("mm")) + "0001",
		"06" + hex.EncodeToString([]byte("angles")) + "03" + hex.EncodeToString([]byte("rad")) + "0001",
		"01",
		"06" + hex.EncodeToString([]byte("angles")) + "03" + hex.EncodeToString([]byte("rad")) + "0001",
	}, "")
	if got := hex.EncodeToString(buf[80:n]); got != want {
		t.Errorf("descriptor\n got %s\nwant %s", got, want)
	}
	var back Record
	if err := back.Unmarshal(buf[:n]); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Descriptor, r.Descriptor) {
		t.Errorf("descriptor read back %+v", back.Descriptor)
	}
}

// Bad payloads are errors that say what is wrong, never a panic.
func TestPayloadRefused(t *testing.T) {
	r := sampleRecord()
	good := make([]byte, r.MarshalSize())
	r.MarshalTo(good)
	withDesc := sampleRecord()
	withDesc.Flags |= FlagDescriptor
	withDesc.Descriptor = sampleDescriptor()
	desc := make([]byte, withDesc.MarshalSize())
	withDesc.MarshalTo(desc)
	badDesc := append([]byte(nil), desc...)
	badDesc[len(badDesc)-1] = 2 // the command field says 2 values for 1
	for _, tt := range []struct {
		name string
		buf  []byte
		err  error
	}{
		{"empty", nil, ErrShort},
		{"header only", good[:47], ErrShort},
		{"version 2", append([]byte{2}, good[1:]...), ErrVersion},
		{"vectors cut", good[:len(good)-1], ErrShort},
		{"huge M", append(append([]byte{}, good[:4]...), append([]byte{0xff, 0xff}, good[6:]...)...), ErrLength},
		{"descriptor cut", desc[:len(desc)-3], ErrDescriptor},
		{"descriptor lies", badDesc, ErrDescriptor},
	} {
		var back Record
		if err := back.Unmarshal(tt.buf); !errors.Is(err, tt.err) || !strings.HasPrefix(err.Error(), "payload: ") {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
	}
	r.Applied = nil
	if _, err := r.MarshalTo(good); !errors.Is(err, ErrLength) {
		t.Errorf("applied of another length: %v", err)
	}
	if _, err := sampleRecord().marshalShort(); !errors.Is(err, ErrLength) {
		t.Errorf("short buffer: %v", err)
	}
}

func (r Record) marshalShort() (int, error) { return r.MarshalTo(make([]byte, 10)) }

// Marshal and Unmarshal allocate nothing once the record's vectors are
// the right size.
func TestPayloadAllocatesNothing(t *testing.T) {
	r := sampleRecord()
	r.Flags |= FlagDescriptor
	r.Descriptor = sampleDescriptor()
	buf := make([]byte, r.MarshalSize())
	plain := sampleRecord()
	var back Record
	back.Unmarshal(buf[:plain.MarshalSize()]) // sizes the vectors
	if n := testing.AllocsPerRun(100, func() {
		r.MarshalTo(buf)
		k, _ := plain.MarshalTo(buf)
		if err := back.Unmarshal(buf[:k]); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("%v allocations per marshal and unmarshal", n)
	}
}

func TestSaturate32(t *testing.T) {
	for in, want := range map[int64]int32{0: 0, -1: -1, 3e9: math.MaxInt32, -3e9: math.MinInt32} {
		if got := Saturate32(in); got != want {
			t.Errorf("Saturate32(%d) = %d", in, got)
		}
	}
}

// Unmarshal never panics, and what it accepts marshals back to the same
// bytes.
func FuzzUnmarshal(f *testing.F) {
	r := sampleRecord()
	b := make([]byte, r.MarshalSize())
	r.MarshalTo(b)
	f.Add(b)
	r.Flags |= FlagDescriptor
	r.Descriptor = sampleDescriptor()
	b = make([]byte, r.MarshalSize())
	r.MarshalTo(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, data []byte) {
		var r Record
		if err := r.Unmarshal(data); err != nil {
			return
		}
		out := make([]byte, r.MarshalSize())
		n, err := r.MarshalTo(out)
		if err != nil {
			t.Fatalf("accepted but cannot marshal: %v", err)
		}
		if string(out[:n]) != string(data[:n]) {
			t.Fatalf("round trip differs:\n%x\n%x", data[:n], out[:n])
		}
	})
}

func TestTwinOf(t *testing.T) {
	for _, c := range []struct {
		name, link string
		ok         bool
	}{
		{"emio" + TwinSuffix, "emio", true},
		{"emio_shadow", "emio", true}, // as bridge record names its file
		{"arm_2.shadow", "arm_2", true},
		{"emio", "", false},
		{".shadow", "", false},
		{"_shadow", "", false},
		{"emio.shadows", "", false},
	} {
		if link, ok := TwinOf(c.name); link != c.link || ok != c.ok {
			t.Errorf("TwinOf(%q) = %q, %v; want %q, %v", c.name, link, ok, c.link, c.ok)
		}
	}
}
