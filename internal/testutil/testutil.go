// Package testutil holds helpers for the project's tests: waiting on a
// condition, a buffer several goroutines write, and the one switch that
// decides whether a test whose external peer is missing skips or fails.
// It is imported only by _test.go files (and by test support such as
// internal/headless).
package testutil

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// Patience bounds WaitFor. A condition that holds ends the wait at once, so
// the bound only matters when a test is failing; it is long so that a
// loaded two-core machine is slow, never wrong.
const Patience = 2 * time.Minute

// poll is how often a wait looks at its condition.
const poll = 2 * time.Millisecond

// WaitFor polls cond until it holds, or fails the test after Patience with
// "timed out waiting for what".
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitForWithin(t, Patience, what, cond)
}

// WaitForWithin is WaitFor with its own bound, for a wait known to take
// longer than Patience on a loaded machine (building and starting a whole
// lab, a second process).
func WaitForWithin(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (%v)", what, limit)
		}
		time.Sleep(poll)
	}
}

// SyncBuffer is an io.Writer that several goroutines may write while a test
// reads it: a log destination, a process's output.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Contains reports whether what was written so far contains sub.
func (s *SyncBuffer) Contains(sub string) bool {
	return strings.Contains(s.String(), sub)
}

// Lines returns the complete lines written so far, without their newlines;
// a last line still being written is left out.
func (s *SyncBuffer) Lines() []string {
	text := s.String()
	i := strings.LastIndexByte(text, '\n')
	if i < 0 {
		return nil
	}
	return strings.Split(text[:i], "\n")
}
