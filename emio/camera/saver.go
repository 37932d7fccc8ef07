package camera

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/labbridge/bridge/internal/atomicfile"
	"github.com/labbridge/bridge/realsense/tracker"
)

// Saver writes every n-th frame as PNGs (colour and depth) so that `bridge
// track` can show offline what the tracker saw. Encoding a PNG takes tens
// of milliseconds, about a frame period: the camera goroutine only copies
// the frame into the saver's buffer (Offer, its OnFrame hook), and the
// saver's own Serve encodes it. A frame that comes while the previous one is
// still being written is not saved.
type Saver struct {
	dir   string
	every uint64
	w, h  int
	log   *slog.Logger
	seen  uint64 // camera goroutine only

	buf     Frame // owned by Serve while busy is set
	busy    atomic.Bool
	pending chan struct{} // capacity 1: at most one frame waits

	saved, failed atomic.Uint64
}

// NewSaver saves every every-th frame of w×h into dir.
func NewSaver(dir string, every, w, h int, log *slog.Logger) (*Saver, error) {
	if every < 1 || w < 1 || h < 1 {
		return nil, fmt.Errorf("%w: saver of every %d frame(s) of %dx%d", ErrConfig, every, w, h)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Saver{
		dir: dir, every: uint64(every), w: w, h: h, log: log,
		buf:     Frame{Color: make([]byte, 3*w*h), Depth: make([]uint16, w*h)},
		pending: make(chan struct{}, 1),
	}, nil
}

// Offer is the camera's OnFrame hook: a copy when the frame is due and the
// saver idle, never I/O.
func (s *Saver) Offer(f *Frame, _ *tracker.Result) {
	s.seen++
	if (s.seen-1)%s.every != 0 || len(f.Color) != len(s.buf.Color) || !s.busy.CompareAndSwap(false, true) {
		return
	}
	copy(s.buf.Color, f.Color)
	copy(s.buf.Depth, f.Depth)
	s.buf.Number, s.buf.Time = f.Number, f.Time
	s.pending <- struct{}{}
}

// Serve writes the offered frames until ctx is done. It may be served again.
// A frame that cannot be written is counted and skipped, and the link runs
// on: saved frames are for looking at later, not for the loop. Each kind of
// failure is logged once, at WARN, with the folder and the reason, until a
// frame is saved again.
func (s *Saver) Serve(ctx context.Context) error {
	warned := map[string]bool{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.pending:
		}
		base := filepath.Join(s.dir, fmt.Sprintf("frame-%06d", s.buf.Number))
		err := errors.Join(WriteColorPNG(base+"-color.png", s.buf.Color, s.w, s.h), WriteDepthPNG(base+"-depth.png", s.buf.Depth, s.w, s.h))
		if err != nil {
			n := s.failed.Add(1)
			if kind := failureKind(err); !warned[kind] {
				warned[kind] = true
				s.log.Warn("camera: a frame cannot be saved; the link runs on, and the next failures of this kind are only counted",
					"folder", s.dir, "reason", saveReason(err), "failed", n)
			}
		} else {
			s.saved.Add(1)
			if len(warned) > 0 {
				s.log.Info("camera: frames are saved again", "folder", s.dir, "failed", s.failed.Load())
				clear(warned)
			}
		}
		s.busy.Store(false)
	}
}

// Saved is the number of frames written.
func (s *Saver) Saved() uint64 { return s.saved.Load() }

// Failed is the number of frames that could not be written.
func (s *Saver) Failed() uint64 { return s.failed.Load() }

// failureKind tells failures apart for the log: by the system's error
// number (a missing folder, a full disk), else as one kind.
func failureKind(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return "other"
}

// saveReason says why a frame could not be saved, in the words every file
// writer uses.
func saveReason(err error) string {
	var ae *atomicfile.Error
	if errors.As(err, &ae) {
		return atomicfile.Explain(ae.Path, "save_frames", ae.Err)
	}
	return err.Error()
}
