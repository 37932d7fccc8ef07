//go:build !cgo

package realsense

import "context"

// Lib is a loaded librealsense2; without cgo it cannot exist.
type Lib struct{}

// Load always fails without cgo.
func Load(opts Options) (*Lib, error) { return nil, ErrNoCgo }

// Path is the file the library was loaded from.
func (l *Lib) Path() string { return "" }

// Version is the runtime library's version.
func (l *Lib) Version() Version { return Version{} }

// Close deletes the context.
func (l *Lib) Close() error { return ErrNoCgo }

// ListDevices lists the connected cameras.
func (l *Lib) ListDevices() ([]DeviceInfo, error) { return nil, ErrNoCgo }

// Camera is a started pipeline on a camera or a recording.
type Camera struct{}

// OpenCamera starts streaming.
func (l *Lib) OpenCamera(cfg Config) (*Camera, error) { return nil, ErrNoCgo }

// Width and Height are the frame size of the started streams.
func (c *Camera) Width() int  { return 0 }
func (c *Camera) Height() int { return 0 }

// Intrinsics returns the colour and depth streams' intrinsics.
func (c *Camera) Intrinsics() (color, depth Intrinsics) { return Intrinsics{}, Intrinsics{} }

// DepthUnits is the size of one depth unit in metres.
func (c *Camera) DepthUnits() float32 { return 0 }

// NewFrame allocates a Frame with buffers sized for the started streams.
func (c *Camera) NewFrame() *Frame { return &Frame{} }

// Read waits for the next frameset and copies it into f.
func (c *Camera) Read(ctx context.Context, f *Frame) error { return ErrNoCgo }

// Close stops the pipeline.
func (c *Camera) Close() error { return ErrNoCgo }
