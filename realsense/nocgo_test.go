//go:build !cgo

package realsense

import (
	"context"
	"errors"
	"testing"
)

func TestNoCgo(t *testing.T) {
	if _, err := Load(Options{}); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Load: %v", err)
	}
	var l Lib
	if _, err := l.ListDevices(); !errors.Is(err, ErrNoCgo) {
		t.Errorf("ListDevices: %v", err)
	}
	if _, err := l.OpenCamera(Config{}); !errors.Is(err, ErrNoCgo) {
		t.Errorf("OpenCamera: %v", err)
	}
	var c Camera
	if err := c.Read(context.Background(), c.NewFrame()); !errors.Is(err, ErrNoCgo) {
		t.Errorf("Read: %v", err)
	}
}
