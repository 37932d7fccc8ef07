// Package realsense reads Intel RealSense depth cameras (D4xx) and their .bag recordings through
// the librealsense2 C API, version 2.50 or newer, as described in docs/realsense.md.
//
// The binding carries its own C declarations of the API (opaque handles, enum values, struct
// rs2_intrinsics and function-pointer types): no Intel header is needed to build it, and the
// library is loaded with dlopen at run time, so one binary works with every 2.5x runtime whatever
// its SONAME minor. The context is always created with api_version 25000 (2.50.0), which every
// 2.x runtime from 2.50 accepts.
//
// Where the library comes from: Intel's apt repository installs librealsense2.so.2.<minor>, and
// the PyPI wheel (pip install pyrealsense2) links librealsense statically into its Python
// extension module, which exports the whole rs2_* C API. That module is loadable here once the
// Python runtime library is preloaded (see Options.Preload and FindPyrealsense2).
//
// Frames are copied into caller-owned buffers (Frame) and released inside the same C call, so
// reading a frame allocates nothing. Builds without cgo get the same API, whose functions all
// return an error matching ErrNoCgo.
package realsense

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// EnvLibrary names the environment variable holding an explicit path of the library to load.
// When set (and Options.Library is empty), only that file is tried.
const EnvLibrary = "REALSENSE_LIB"

// APIVersion is the api_version passed to rs2_create_context: 2.50.0, accepted by every 2.x
// runtime from 2.50 on (docs/realsense.md §3).
const APIVersion = 25000

// DefaultTimeout is how long Read waits for a frameset when Config.Timeout is 0 (the
// pyrealsense2 default of wait_for_frames).
const DefaultTimeout = 5 * time.Second

var (
	// ErrNoCgo is returned by every function of a binary built without cgo.
	ErrNoCgo = errors.New("realsense: this binary was built without cgo; rebuild with CGO_ENABLED=1")
	// ErrLibraryNotFound means no candidate library could be loaded.
	ErrLibraryNotFound = errors.New("realsense: librealsense2 not found")
	// ErrMissingSymbol means a library was loaded but lacks a function of the 2.50 C API.
	ErrMissingSymbol = errors.New("realsense: librealsense2 lacks a required symbol")
	// ErrDisconnected matches errors caused by a camera that was unplugged or lost.
	ErrDisconnected = errors.New("realsense: camera disconnected")
	// ErrTimeout means no frameset arrived within Config.Timeout (or the recording has ended).
	ErrTimeout = errors.New("realsense: timed out waiting for frames")
	// ErrNoDevice means no camera is connected, or none has the requested serial number.
	ErrNoDevice = errors.New("realsense: no such device")
	// ErrBadConfig means a Config field holds a value the binding does not allow.
	ErrBadConfig = errors.New("realsense: invalid configuration")
	// ErrBufferSize means a Frame buffer is too small for the stream.
	ErrBufferSize = errors.New("realsense: frame buffer too small")
	// ErrBadFrame means the library delivered a frame of an unexpected size or format.
	ErrBadFrame = errors.New("realsense: unexpected frame")
	// ErrClosed means the Camera or Lib was already closed.
	ErrClosed = errors.New("realsense: use of closed camera or library")
	// ErrBusy means a Camera was used by two goroutines at once (a Read or Close met another
	// one in progress); the call did nothing. Read and close a camera from one goroutine.
	ErrBusy = errors.New("realsense: camera in use by another goroutine")
)

// ExceptionType mirrors rs2_exception_type.
type ExceptionType int32

// Values of rs2_exception_type (docs/realsense.md §1).
const (
	ExceptionUnknown              ExceptionType = 0
	ExceptionCameraDisconnected   ExceptionType = 1
	ExceptionBackend              ExceptionType = 2
	ExceptionInvalidValue         ExceptionType = 3
	ExceptionWrongAPICallSequence ExceptionType = 4
	ExceptionNotImplemented       ExceptionType = 5
	ExceptionDeviceInRecoveryMode ExceptionType = 6
	ExceptionIO                   ExceptionType = 7
)

// Error is an rs2_error turned into Go: the failed function, its arguments, the message and the
// exception type. An Error of type ExceptionCameraDisconnected matches ErrDisconnected.
type Error struct {
	Function string
	Args     string
	Message  string
	Type     ExceptionType
}

func (e *Error) Error() string {
	return fmt.Sprintf("realsense: %s(%s): %s (exception type %d)", e.Function, e.Args, e.Message, e.Type)
}

// Is reports whether target is ErrDisconnected and e is a disconnection.
func (e *Error) Is(target error) bool {
	return target == ErrDisconnected && e.Type == ExceptionCameraDisconnected
}

// Distortion mirrors rs2_distortion.
type Distortion int32

// Values of rs2_distortion.
const (
	DistortionNone                 Distortion = 0
	DistortionModifiedBrownConrady Distortion = 1
	DistortionInverseBrownConrady  Distortion = 2
	DistortionFTheta               Distortion = 3
	DistortionBrownConrady         Distortion = 4
	DistortionKannalaBrandt4       Distortion = 5
)

// Intrinsics mirrors rs2_intrinsics: image size, principal point and focal lengths in pixels,
// distortion model and coefficients (Brown-Conrady order k1, k2, p1, p2, k3).
type Intrinsics struct {
	Width, Height int
	PPX, PPY      float32
	FX, FY        float32
	Model         Distortion
	Coeffs        [5]float32
}

// Version is the runtime library version, from rs2_get_api_version.
type Version struct{ Major, Minor, Patch int }

func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

func versionOf(api int) Version {
	return Version{Major: api / 10000, Minor: api / 100 % 100, Patch: api % 100}
}

// DeviceInfo describes a connected camera.
type DeviceInfo struct {
	Serial   string
	Name     string
	Firmware string
}

// Options says where to find the library.
type Options struct {
	// Library is an explicit path (or bare file name) of the library; when set, only it is
	// tried. When empty, the REALSENSE_LIB environment variable is used the same way.
	Library string
	// SearchDirs are directories searched, after the standard names, for librealsense2.so* and
	// for the pyrealsense2 extension module (pyrealsense2*.so), which exports the C API.
	SearchDirs []string
	// Preload lists libraries loaded with global symbol visibility before the candidates,
	// such as the Python runtime library the pyrealsense2 extension module refers to.
	Preload []string
}

// candidates returns the libraries to try, in order.
func (o Options) candidates(env string) (names []string, explicit bool) {
	if o.Library != "" {
		return []string{o.Library}, true
	}
	if env != "" {
		return []string{env}, true
	}
	names = []string{"librealsense2.so", "librealsense2.so.2"}
	for minor := 69; minor >= 50; minor-- {
		names = append(names, fmt.Sprintf("librealsense2.so.2.%d", minor))
	}
	return names, false
}

// FindPyrealsense2 asks the given Python interpreter ("python3" when empty) where the
// pyrealsense2 package is installed and which shared Python runtime library it runs on. dir
// goes into Options.SearchDirs and libpython into Options.Preload; libpython is "" when the
// interpreter is statically linked, in which case the extension module cannot be loaded.
func FindPyrealsense2(ctx context.Context, python string) (dir, libpython string, err error) {
	if python == "" {
		python = "python3"
	}
	const script = `import os, sysconfig
import pyrealsense2
print(os.path.dirname(pyrealsense2.__file__))
lib = ""
if sysconfig.get_config_var("Py_ENABLE_SHARED"):
    lib = os.path.join(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("INSTSONAME") or "")
print(lib)
`
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, python, "-c", script)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return "", "", fmt.Errorf("realsense: %q cannot import pyrealsense2 (%s): %w", python, msg, err)
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) < 1 || lines[0] == "" {
		return "", "", fmt.Errorf("realsense: %q printed no pyrealsense2 directory", python)
	}
	dir = lines[0]
	if len(lines) > 1 {
		libpython = lines[1]
	}
	return dir, libpython, nil
}

// pythonProbeTimeout bounds the question to python3 in LoadAny.
const pythonProbeTimeout = 60 * time.Second

// LoadAny loads librealsense2 wherever a lab has it: the system's library
// (Intel's package), the file named by REALSENSE_LIB, or the library the
// pyrealsense2 Python package carries. A build without cgo reports ErrNoCgo;
// a machine with none of them gets one error saying how to install one.
func LoadAny(ctx context.Context) (*Lib, error) { return loadAny(ctx, pythonProbeTimeout) }

func loadAny(ctx context.Context, probe time.Duration) (*Lib, error) {
	lib, err := Load(Options{})
	if err == nil || errors.Is(err, ErrNoCgo) {
		return lib, err
	}
	// Importing pyrealsense2 takes a second or two, far longer on a busy
	// machine: the wait is generous, and running out of it is said as such.
	pctx, cancel := context.WithTimeout(ctx, probe)
	defer cancel()
	dir, libpython, pyErr := FindPyrealsense2(pctx, "")
	if pyErr != nil {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("realsense: looking for pyrealsense2: %w", err)
		}
		var h *hintError
		if pctx.Err() != nil {
			return nil, fmt.Errorf("%w; python3 did not say within %s whether it has pyrealsense2 (a busy machine?): try again, or set %s to the library's path", err, probe, EnvLibrary)
		}
		// One error: what was searched, then the advice once.
		if errors.As(err, &h) {
			return nil, withInstallHint(fmt.Errorf("%w; python3 has no pyrealsense2 package either", h.err))
		}
		return nil, err
	}
	opts := Options{SearchDirs: []string{dir}}
	if libpython != "" {
		opts.Preload = []string{libpython}
	}
	return Load(opts)
}

// Config selects the camera and streams to open.
type Config struct {
	// Serial selects the camera; "" means the first one. Ignored for playback.
	Serial string
	// Width, Height and FPS must be 640x480 or 848x480 at 30, 60 or 90 fps, except for
	// playback, where the recording dictates them (0 means "whatever the file has").
	Width, Height, FPS int
	// Color enables the BGR8 colour stream, Depth the Z16 depth stream; at least one is needed.
	Color, Depth bool
	// PlaybackFile, when set, plays a .bag recording instead of opening a camera, as fast as
	// Read asks. Without Loop it plays once, and after the last frameset Read times out.
	PlaybackFile string
	// Loop plays the recording over and over.
	Loop bool
	// Timeout bounds how long Read waits for a frameset; 0 means DefaultTimeout.
	Timeout time.Duration
}

func (c Config) validate() error {
	if !c.Color && !c.Depth {
		return fmt.Errorf("%w: neither Color nor Depth is enabled", ErrBadConfig)
	}
	if c.Timeout < 0 {
		return fmt.Errorf("%w: Timeout %v is negative", ErrBadConfig, c.Timeout)
	}
	if c.PlaybackFile != "" {
		if c.Width < 0 || c.Height < 0 || c.FPS < 0 {
			return fmt.Errorf("%w: negative size or rate %dx%d@%d", ErrBadConfig, c.Width, c.Height, c.FPS)
		}
		return nil
	}
	if !(c.Width == 640 && c.Height == 480) && !(c.Width == 848 && c.Height == 480) {
		return fmt.Errorf("%w: mode %dx%d not allowed (640x480 or 848x480)", ErrBadConfig, c.Width, c.Height)
	}
	if c.FPS != 30 && c.FPS != 60 && c.FPS != 90 {
		return fmt.Errorf("%w: FPS %d not allowed (30, 60 or 90)", ErrBadConfig, c.FPS)
	}
	return nil
}

// Frame receives one frameset. Color (BGR8, Width*Height*3 bytes) and Depth (Z16,
// Width*Height values, in units of Camera.DepthUnits metres) are owned by the caller and
// reused from one Read to the next; allocate them once with Camera.NewFrame.
type Frame struct {
	Color []byte
	Depth []uint16
	// FrameNumber and TimestampMs are those of the depth frame when depth is enabled, else of
	// the colour frame; ColorFrameNumber is the colour frame's own number.
	FrameNumber      uint64
	ColorFrameNumber uint64
	TimestampMs      float64
	Width, Height    int
}

func (f *Frame) check(color, depth bool, w, h int) error {
	if color && len(f.Color) < w*h*3 {
		return fmt.Errorf("%w: Color has %d bytes, %dx%d BGR8 needs %d", ErrBufferSize, len(f.Color), w, h, w*h*3)
	}
	if depth && len(f.Depth) < w*h {
		return fmt.Errorf("%w: Depth has %d values, %dx%d Z16 needs %d", ErrBufferSize, len(f.Depth), w, h, w*h)
	}
	return nil
}

// installHint ends the errors that report a missing library: what a lab
// installs, in the words of a person installing it.
const installHint = `install it with "pip install pyrealsense2" (the Python package carries the library) ` +
	`or the librealsense2 package of Intel's apt repository, or set ` + EnvLibrary + `=/path/to/librealsense2.so`

// hintError is an error that ends with installHint, once.
type hintError struct{ err error }

func withInstallHint(err error) error { return &hintError{err: err} }

func (h *hintError) Error() string { return h.err.Error() + "; " + installHint }
func (h *hintError) Unwrap() error { return h.err }
