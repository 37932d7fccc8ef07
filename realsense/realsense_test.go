package realsense

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	good := []Config{
		{Width: 640, Height: 480, FPS: 30, Color: true, Depth: true},
		{Width: 848, Height: 480, FPS: 90, Depth: true},
		{Width: 640, Height: 480, FPS: 60, Color: true},
		{PlaybackFile: "x.bag", Color: true},
		{PlaybackFile: "x.bag", Depth: true, Width: 640, Height: 480},
	}
	for _, c := range good {
		if err := c.validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	bad := []struct {
		cfg  Config
		want string
	}{
		{Config{Width: 1280, Height: 720, FPS: 30, Color: true}, "1280x720"},
		{Config{Width: 640, Height: 480, FPS: 15, Color: true}, "FPS 15"},
		{Config{Width: 640, Height: 480, FPS: 30}, "neither Color nor Depth"},
		{Config{PlaybackFile: "x.bag"}, "neither Color nor Depth"},
		{Config{PlaybackFile: "x.bag", Depth: true, Width: -1}, "-1x0"},
		{Config{Width: 640, Height: 480, FPS: 30, Depth: true, Timeout: -time.Second}, "-1s"},
	}
	for _, b := range bad {
		err := b.cfg.validate()
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), b.want) ||
			!strings.HasPrefix(err.Error(), "realsense: ") {
			t.Errorf("%+v: got %v, want ErrBadConfig naming %q", b.cfg, err, b.want)
		}
	}
}

func TestFrameCheck(t *testing.T) {
	f := &Frame{Color: make([]byte, 640*480*3), Depth: make([]uint16, 640*480)}
	if err := f.check(true, true, 640, 480); err != nil {
		t.Fatal(err)
	}
	if err := f.check(true, false, 848, 480); !errors.Is(err, ErrBufferSize) || !strings.Contains(err.Error(), "921600") {
		t.Errorf("short colour buffer: %v", err)
	}
	if err := f.check(false, true, 848, 480); !errors.Is(err, ErrBufferSize) || !strings.Contains(err.Error(), "307200") {
		t.Errorf("short depth buffer: %v", err)
	}
	if err := (&Frame{}).check(false, false, 640, 480); err != nil {
		t.Errorf("no stream needs no buffer: %v", err)
	}
}

func TestCandidates(t *testing.T) {
	names, explicit := Options{}.candidates("")
	if explicit || names[0] != "librealsense2.so" || names[1] != "librealsense2.so.2" {
		t.Fatalf("got %v", names[:2])
	}
	has := func(n string) bool {
		for _, m := range names {
			if m == n {
				return true
			}
		}
		return false
	}
	for _, n := range []string{"librealsense2.so.2.50", "librealsense2.so.2.57", "librealsense2.so.2.59"} {
		if !has(n) {
			t.Errorf("%s is not a candidate", n)
		}
	}
	if names, explicit := (Options{}).candidates("/opt/x.so"); !explicit || len(names) != 1 || names[0] != "/opt/x.so" {
		t.Errorf("environment path: %v %v", names, explicit)
	}
	if names, _ := (Options{Library: "/a.so"}).candidates("/opt/x.so"); len(names) != 1 || names[0] != "/a.so" {
		t.Errorf("Options.Library must win over the environment: %v", names)
	}
}

func TestErrorIsDisconnected(t *testing.T) {
	e := &Error{Function: "rs2_pipeline_try_wait_for_frames", Args: "pipe:0x1", Message: "gone", Type: ExceptionCameraDisconnected}
	if !errors.Is(e, ErrDisconnected) {
		t.Error("a CAMERA_DISCONNECTED error must match ErrDisconnected")
	}
	if errors.Is(&Error{Type: ExceptionBackend}, ErrDisconnected) {
		t.Error("a backend error must not match ErrDisconnected")
	}
	if got := e.Error(); !strings.HasPrefix(got, "realsense: rs2_pipeline_try_wait_for_frames(pipe:0x1): gone") {
		t.Errorf("message %q", got)
	}
}

func TestVersionOf(t *testing.T) {
	if v := versionOf(25605); v != (Version{2, 56, 5}) || v.String() != "2.56.5" {
		t.Errorf("got %v", v)
	}
}

func TestFindPyrealsense2BadInterpreter(t *testing.T) {
	_, _, err := FindPyrealsense2(context.Background(), "/nonexistent/python3")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/python3") {
		t.Errorf("got %v", err)
	}
}
