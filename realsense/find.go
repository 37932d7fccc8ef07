package realsense

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
)

var (
	// ErrNoCamera: no RealSense camera is connected.
	ErrNoCamera = errors.New("realsense: no RealSense camera is connected (a USB 3 port and cable; the udev rules of bridge install, or root)")
	// ErrNotConnected: the camera of the serial asked for is not among
	// those connected.
	ErrNotConnected = errors.New("realsense: no camera with that serial is connected")
)

// Find looks for a RealSense camera: the one whose serial is want, or the
// first one connected when want is "auto". It returns the serial, and every
// camera it saw. When librealsense2 cannot be loaded, the error says so and
// seen is nil.
func Find(ctx context.Context, want string) (serial string, seen []DeviceInfo, err error) {
	lib, err := LoadAny(ctx)
	if err != nil {
		return "", nil, err
	}
	defer lib.Close()
	if seen, err = lib.ListDevices(); err != nil {
		return "", nil, err
	}
	switch {
	case want != "auto" && !slices.ContainsFunc(seen, func(d DeviceInfo) bool { return d.Serial == want }):
		return want, seen, fmt.Errorf("%w: serial %s", ErrNotConnected, want)
	case want != "auto":
		return want, seen, nil
	case len(seen) == 0:
		return "", seen, ErrNoCamera
	}
	return seen[0].Serial, seen, nil
}

// Probe plays the first frame of a recording (a .bag file) and says what its
// colour and depth streams are: a file the camera code can open, with the
// streams the tracker needs.
func Probe(ctx context.Context, path string) (string, error) {
	if _, err := os.Stat(path); err != nil {
		return "", err
	}
	lib, err := LoadAny(ctx)
	if err != nil {
		return "", err
	}
	defer lib.Close()
	// Looped: the syncer can split a short recording's framesets so that a
	// pass ends without a complete one; the next pass is tried until the timeout.
	cam, err := lib.OpenCamera(Config{PlaybackFile: path, Color: true, Depth: true, Loop: true, Timeout: 5 * time.Second})
	if err != nil {
		return "", err
	}
	defer cam.Close()
	f := cam.NewFrame()
	// A rewind restarts the read's timeout: bound the passes as a whole.
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := cam.Read(ctx, f); err != nil {
		return "", fmt.Errorf("realsense: %s: no frame: %w", path, err)
	}
	c, d := cam.Intrinsics()
	return fmt.Sprintf("colour %dx%d, depth %dx%d", c.Width, c.Height, d.Width, d.Height), nil
}
