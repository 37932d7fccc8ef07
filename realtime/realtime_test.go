package realtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestClockNowMonotonic(t *testing.T) {
	c := NewClock()
	prev := c.Now()
	for i := range 100000 {
		n := c.Now()
		if n < prev {
			t.Fatalf("Now went back at read %d: %d after %d", i, n, prev)
		}
		prev = n
	}
}

// The clock must agree with the kernel's CLOCK_MONOTONIC, the clock that
// clock_nanosleep sleeps on: a kernel reading taken between two Now readings
// must fall between them (up to the base pair's error, well under 1 ms).
func TestClockMatchesKernel(t *testing.T) {
	c := NewClock()
	const slack = int64(time.Millisecond)
	for range 100 {
		before := c.Now()
		var ts unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			t.Fatal(err)
		}
		after := c.Now()
		k := ts.Nano()
		if k < before-slack || k > after+slack {
			t.Fatalf("kernel CLOCK_MONOTONIC %d not within [%d, %d] ± 1ms", k, before, after)
		}
	}
}

func TestSleepUntilPastReturns(t *testing.T) {
	c := NewClock()
	for _, d := range []int64{0, 1, c.Now() - int64(time.Second), c.Now()} {
		if err := SleepUntil(d); err != nil {
			t.Errorf("SleepUntil(%d) = %v, want nil", d, err)
		}
	}
}

func TestSleepUntilReachesDeadline(t *testing.T) {
	c := NewClock()
	deadline := c.Now() + int64(200*time.Microsecond)
	if err := SleepUntil(deadline); err != nil {
		t.Fatal(err)
	}
	if now := c.Now(); now < deadline {
		t.Fatalf("woke at %d, before the deadline %d", now, deadline)
	}
}

func TestSleepUntilInvalid(t *testing.T) {
	err := SleepUntil(-1)
	if !errors.Is(err, unix.EINVAL) {
		t.Fatalf("SleepUntil(-1) = %v, want EINVAL", err)
	}
	if !strings.HasPrefix(err.Error(), "realtime: ") || !strings.Contains(err.Error(), "-1") {
		t.Errorf("message %q must start with the package and name the value", err)
	}
}

// The clock's sleep makes no system call for a deadline that has passed
// (even one the kernel would refuse), and sleeps to one ahead.
func TestClockSleepUntil(t *testing.T) {
	c := NewClock()
	for _, d := range []int64{-1, 0, c.Now()} {
		if err := c.SleepUntil(d); err != nil {
			t.Errorf("SleepUntil(%d) = %v, want nil at once", d, err)
		}
	}
	deadline := c.Now() + int64(200*time.Microsecond)
	if err := c.SleepUntil(deadline); err != nil {
		t.Fatal(err)
	}
	if now := c.Now(); now < deadline {
		t.Fatalf("woke at %d, before the deadline %d", now, deadline)
	}
}

func TestSpinUntil(t *testing.T) {
	c := NewClock()
	deadline := c.Now() + int64(50*time.Microsecond)
	SpinUntil(c, deadline)
	if now := c.Now(); now < deadline {
		t.Fatalf("spin returned at %d, before %d", now, deadline)
	}
}

func TestAllocs(t *testing.T) {
	c := NewClock()
	past := c.Now() - int64(time.Second)
	for _, tc := range []struct {
		name string
		f    func()
	}{
		{"Now", func() { _ = c.Now() }},
		{"SleepUntil(past)", func() { _ = SleepUntil(past) }},
		{"SpinUntil(past)", func() { SpinUntil(c, past) }},
	} {
		if n := testing.AllocsPerRun(1000, tc.f); n != 0 {
			t.Errorf("%s: %v allocations, want 0", tc.name, n)
		}
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  ThreadConfig
		want error
	}{
		{ThreadConfig{CPU: -1}, nil},
		{ThreadConfig{Priority: 1, CPU: 0}, nil},
		{ThreadConfig{Priority: 99, CPU: 1023, TimerSlack: time.Nanosecond}, nil},
		{ThreadConfig{Priority: -1, CPU: -1}, ErrPriority},
		{ThreadConfig{Priority: 100, CPU: -1}, ErrPriority},
		{ThreadConfig{CPU: -2}, ErrCPU},
		{ThreadConfig{CPU: 1024}, ErrCPU},
		{ThreadConfig{CPU: -1, TimerSlack: -1}, ErrTimerSlack},
		{ThreadConfig{Priority: 80, CPU: -1, Budget: 100 * time.Microsecond, BudgetPeriod: time.Millisecond}, nil},
		{ThreadConfig{Priority: 80, CPU: -1, Budget: time.Millisecond, BudgetPeriod: time.Millisecond}, nil},
		{ThreadConfig{Priority: 80, CPU: -1, Budget: -1, BudgetPeriod: time.Millisecond}, ErrBudget},
		{ThreadConfig{Priority: 80, CPU: -1, Budget: 1023, BudgetPeriod: time.Millisecond}, ErrBudget},
		{ThreadConfig{Priority: 80, CPU: -1, Budget: 2 * time.Millisecond, BudgetPeriod: time.Millisecond}, ErrBudget},
		{ThreadConfig{Priority: 80, CPU: 0, Budget: 100 * time.Microsecond, BudgetPeriod: time.Millisecond}, ErrBudget},
		{ThreadConfig{CPU: -1, Budget: 100 * time.Microsecond, BudgetPeriod: time.Millisecond}, ErrBudget},
	} {
		err := tc.cfg.Validate()
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%+v: Validate() = %v, want %v", tc.cfg, err, tc.want)
		}
	}
	err := ThreadConfig{Priority: 120, CPU: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "120") || !strings.HasPrefix(err.Error(), "realtime: ") {
		t.Errorf("message %q must start with the package and name the value", err)
	}
}

// onDiscardedThread runs f on a fresh locked goroutine that exits without
// unlocking, so the runtime terminates the thread whose scheduling f changed.
func onDiscardedThread(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		f()
	}()
	<-done
}

func TestSetupThreadNoop(t *testing.T) {
	var (
		th    *Thread
		warns []error
	)
	onDiscardedThread(func() { th, warns = SetupThread(ThreadConfig{CPU: -1}) })
	if th == nil || len(warns) != 0 {
		t.Fatalf("SetupThread(no-op) = %v, %v; want a thread and no warnings", th, warns)
	}
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSetupThreadInvalid(t *testing.T) {
	th, warns := SetupThread(ThreadConfig{Priority: 100, CPU: -1})
	if th != nil || len(warns) != 1 || !errors.Is(warns[0], ErrPriority) {
		t.Fatalf("SetupThread(priority 100) = %v, %v; want nil and ErrPriority", th, warns)
	}
	if err := th.Close(); err != nil {
		t.Fatalf("Close on nil Thread: %v", err)
	}
}

// Priority 80 either takes effect on this thread only, or is reported as a
// warning naming the setting (unprivileged runs).
func TestSetupThreadFIFO(t *testing.T) {
	var (
		warns     []error
		attr      *unix.SchedAttr
		attrErr   error
		otherAttr *unix.SchedAttr
		slack     int
		slackErr  error
		closeErr  error
	)
	onDiscardedThread(func() {
		var th *Thread
		th, warns = SetupThread(ThreadConfig{Priority: 80, CPU: -1, TimerSlack: time.Nanosecond})
		attr, attrErr = unix.SchedGetAttr(0, 0)
		slack, slackErr = unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
		closeErr = th.Close()
	})
	// This goroutine's thread was not touched.
	otherAttr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if attrErr != nil || slackErr != nil || closeErr != nil {
		t.Fatal(attrErr, slackErr, closeErr)
	}
	// Since Linux 6.7 a real-time thread's slack reads 0.
	if slack != 1 && !(slack == 0 && attr.Policy == unix.SCHED_FIFO) {
		t.Errorf("timer slack = %d ns, want 1 (or 0 under SCHED_FIFO)", slack)
	}
	if otherAttr.Policy == unix.SCHED_FIFO {
		t.Errorf("SCHED_FIFO leaked to another thread")
	}
	if len(warns) == 0 {
		if attr.Policy != unix.SCHED_FIFO || attr.Priority != 80 {
			t.Errorf("no warning but sched_getattr = policy %d priority %d, want FIFO 80", attr.Policy, attr.Priority)
		}
		return
	}
	var se *SetupError
	if len(warns) != 1 || !errors.As(warns[0], &se) || !strings.Contains(se.Error(), "SCHED_FIFO priority 80") {
		t.Fatalf("warnings = %v, want one naming SCHED_FIFO priority 80", warns)
	}
	if errors.Is(se, fs.ErrPermission) && !strings.Contains(se.Error(), "LimitRTPRIO=80") {
		t.Errorf("EPERM warning %q must name the fix", se)
	}
	if attr.Policy == unix.SCHED_FIFO {
		t.Errorf("warning reported but the thread is SCHED_FIFO")
	}
}

// A budget runs the thread under SCHED_DEADLINE with that reservation, on
// this thread only; refused (unprivileged, or a kernel or cgroup that does
// not allow it), the warning names the budget and the thread falls back to
// its SCHED_FIFO priority, or is reported for that too.
func TestSetupThreadDeadline(t *testing.T) {
	var (
		th       *Thread
		warns    []error
		attr     *unix.SchedAttr
		attrErr  error
		closeErr error
	)
	cfg := ThreadConfig{Priority: 80, CPU: -1, Budget: 200 * time.Microsecond, BudgetPeriod: 2 * time.Millisecond}
	onDiscardedThread(func() {
		th, warns = SetupThread(cfg)
		attr, attrErr = unix.SchedGetAttr(0, 0)
		closeErr = th.Close()
	})
	if attrErr != nil || closeErr != nil {
		t.Fatal(attrErr, closeErr)
	}
	other, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if other.Policy == unix.SCHED_DEADLINE || other.Policy == unix.SCHED_FIFO {
		t.Errorf("policy %d leaked to another thread", other.Policy)
	}
	got := th.Settings()
	if len(warns) == 0 {
		// The same share of DeadlineSlice: 20 µs every 200 µs.
		if attr.Policy != unix.SCHED_DEADLINE || attr.Runtime != 20_000 || attr.Period != 200_000 ||
			attr.Deadline != 200_000 || attr.Flags&unix.SCHED_FLAG_RESET_ON_FORK == 0 || attr.Flags&unix.SCHED_FLAG_RECLAIM == 0 {
			t.Errorf("no warning but sched_getattr = %+v, want SCHED_DEADLINE 20µs every 200µs, reset on fork, reclaiming", attr)
		}
		if got.Policy != "SCHED_DEADLINE" || got.Budget != cfg.Budget || got.BudgetPeriod != cfg.BudgetPeriod || got.Priority != 0 {
			t.Errorf("Settings() = %+v, want SCHED_DEADLINE 200µs every 2ms", got)
		}
		return
	}
	var se *SetupError
	if !errors.As(warns[0], &se) || !strings.Contains(se.Error(), "SCHED_DEADLINE budget 200µs every 2ms") {
		t.Fatalf("warnings = %v, want the first naming the budget", warns)
	}
	switch {
	case len(warns) == 1 && (attr.Policy != unix.SCHED_FIFO || got.Policy != "SCHED_FIFO" || got.Priority != 80):
		t.Errorf("budget refused (%v) but the thread runs policy %d, Settings %+v: want the SCHED_FIFO 80 fallback", warns[0], attr.Policy, got)
	case len(warns) == 1 && !strings.Contains(se.Error(), "SCHED_FIFO 80 instead"):
		t.Errorf("warning %q must say the thread runs at SCHED_FIFO 80 instead", se)
	case len(warns) == 2 && (attr.Policy != unix.SCHED_NORMAL || got.Policy != "SCHED_OTHER"):
		t.Errorf("both refused (%v) but the thread runs policy %d", warns, attr.Policy)
	case len(warns) > 2:
		t.Errorf("warnings = %v, want at most the budget's and the priority's", warns)
	}
}

// The probe asks on a thread of its own: the caller's policy does not
// change, and a refusal names the budget and says what the loops keep.
func TestProbeDeadline(t *testing.T) {
	before, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	perr := ProbeDeadline(100*time.Microsecond, time.Millisecond)
	after, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.Policy != before.Policy {
		t.Errorf("policy %d -> %d: the probe changed the calling thread", before.Policy, after.Policy)
	}
	var se *SetupError
	if perr != nil && (!errors.As(perr, &se) || !strings.Contains(perr.Error(), "SCHED_DEADLINE budget 100µs every 1ms") ||
		!strings.Contains(perr.Error(), "the loops keep SCHED_FIFO")) {
		t.Errorf("ProbeDeadline = %v, want nil or a SetupError naming the budget and the fallback", perr)
	}
	t.Logf("ProbeDeadline: %v", perr)
}

func TestDeadlineSlice(t *testing.T) {
	us := time.Microsecond
	for _, tc := range []struct{ budget, period, runtime, slice time.Duration }{
		{50 * us, 100 * us, 50 * us, 100 * us},
		{40 * us, 200 * us, 40 * us, 200 * us},
		{250 * us, time.Millisecond, 50 * us, 200 * us},
		{10 * time.Millisecond, 33333 * us, 60 * us, 200 * us},
		{2 * us, time.Second, minBudget, 200 * us},
	} {
		r, s := deadlineSlice(tc.budget, tc.period)
		if r.Round(time.Microsecond) != tc.runtime.Round(time.Microsecond) && r != tc.runtime || s != tc.slice {
			t.Errorf("deadlineSlice(%v, %v) = %v, %v; want %v, %v", tc.budget, tc.period, r, s, tc.runtime, tc.slice)
		}
	}
}

func TestSetupThreadAffinity(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	cpu := -1
	for i := range maxCPU {
		if allowed.IsSet(i) {
			cpu = i
			break
		}
	}
	if cpu < 0 {
		t.Fatal("no allowed CPU")
	}
	for _, tc := range []struct {
		cpu      int
		wantWarn bool
	}{
		{cpu, false},
		{maxCPU - 1, !allowed.IsSet(maxCPU - 1)},
	} {
		var (
			warns []error
			got   unix.CPUSet
			err   error
		)
		onDiscardedThread(func() {
			_, warns = SetupThread(ThreadConfig{CPU: tc.cpu})
			err = unix.SchedGetaffinity(0, &got)
		})
		if err != nil {
			t.Fatal(err)
		}
		if tc.wantWarn {
			var se *SetupError
			if len(warns) != 1 || !errors.As(warns[0], &se) || !strings.Contains(se.Setting, "CPU affinity") {
				t.Errorf("CPU %d: warnings %v, want one CPU affinity warning", tc.cpu, warns)
			}
			continue
		}
		if len(warns) != 0 || got.Count() != 1 || !got.IsSet(tc.cpu) {
			t.Errorf("CPU %d: warnings %v, affinity count %d; want pinned to %d", tc.cpu, warns, got.Count(), tc.cpu)
		}
	}
}

// The DMA latency request is either held until Close or reported.
func TestSetupThreadDMALatency(t *testing.T) {
	var (
		th    *Thread
		warns []error
	)
	onDiscardedThread(func() { th, warns = SetupThread(ThreadConfig{CPU: -1, DMALatency: true}) })
	if len(warns) == 0 && !th.HoldsDMALatency() {
		t.Fatal("no warning, but the DMA latency request is not held")
	}
	if len(warns) > 0 && (th.HoldsDMALatency() || !strings.Contains(warns[0].Error(), DMALatencyPath)) {
		t.Fatalf("warnings %v with request held = %v", warns, th.HoldsDMALatency())
	}
	if err := th.Close(); err != nil {
		t.Fatal(err)
	}
	if th.HoldsDMALatency() {
		t.Fatal("request still held after Close")
	}
	if err := th.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestSetupErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		e    *SetupError
		want string
	}{
		{&SetupError{"SCHED_FIFO priority 80", "grant LimitRTPRIO=80 or CAP_SYS_NICE", unix.EPERM},
			"realtime: SCHED_FIFO priority 80: operation not permitted (grant LimitRTPRIO=80 or CAP_SYS_NICE)"},
		{&SetupError{"timer slack 1ns", "", unix.EINVAL}, "realtime: timer slack 1ns: invalid argument"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
		if !errors.Is(tc.e, tc.e.Err) {
			t.Errorf("%v does not unwrap to %v", tc.e, tc.e.Err)
		}
	}
}

func BenchmarkNow(b *testing.B) {
	c := NewClock()
	var sink int64
	for b.Loop() {
		sink += c.Now()
	}
	_ = sink
}

func BenchmarkSleepUntilPast(b *testing.B) {
	for b.Loop() {
		if err := SleepUntil(0); err != nil {
			b.Fatal(err)
		}
	}
}

func ExampleSleepUntil() {
	c := NewClock()
	const period = int64(time.Millisecond)
	next := c.Now() + period
	for range 3 {
		if err := SleepUntil(next); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("woke after the deadline:", c.Now() >= next)
		next += period // absolute grid: no drift
	}
	// Output:
	// woke after the deadline: true
	// woke after the deadline: true
	// woke after the deadline: true
}

// RunLocked runs its body until the stop flag it sets on cancellation is
// seen, and returns the body's error; a body that ends by itself ends it.
func TestRunLocked(t *testing.T) {
	var stop atomic.Bool
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		errc <- RunLocked(ctx, &stop, func() error {
			close(started)
			for !stop.Load() {
				runtime.Gosched()
			}
			return errors.New("stopped")
		})
	}()
	<-started
	cancel()
	if err := <-errc; err == nil || err.Error() != "stopped" {
		t.Fatalf("RunLocked: %v, want the body's error", err)
	}
	if err := RunLocked(context.Background(), nil, func() error { return nil }); err != nil {
		t.Fatalf("a body that returns: %v", err)
	}
}

// Settings say what the thread got, never what was asked: a step that was
// refused (no privilege) leaves its field at the default, and one that was
// applied shows.
func TestSetupThreadSettings(t *testing.T) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		th, warns := SetupThread(ThreadConfig{Priority: 10, CPU: 0, DMALatency: true})
		defer th.Close()
		refused := func(prefix string) bool {
			for _, w := range warns {
				var se *SetupError
				if errors.As(w, &se) && strings.HasPrefix(se.Setting, prefix) {
					return true
				}
			}
			return false
		}
		got := th.Settings()
		if want := !refused("SCHED_FIFO"); (got.Policy == "SCHED_FIFO" && got.Priority == 10) != want {
			t.Errorf("settings %+v with warnings %v", got, warns)
		}
		if want := !refused("CPU affinity"); (got.CPU == 0) != want {
			t.Errorf("settings %+v with warnings %v", got, warns)
		}
		if got.DMALatency != th.HoldsDMALatency() || got.LockedMemory {
			t.Errorf("settings %+v", got)
		}
		th.Close()
		if th.Settings().DMALatency {
			t.Error("DMA latency still held after Close")
		}
	}()
	<-done
	var none *Thread
	if s := none.Settings(); s.Policy != "SCHED_OTHER" || s.CPU != -1 {
		t.Errorf("nil thread: %+v", s)
	}
}

// Time gives a reading of the clock as wall-clock time.
func TestClockTime(t *testing.T) {
	c := NewClock()
	before := time.Now()
	n := c.Now()
	got := c.Time(n)
	if d := got.Sub(before); d < -time.Millisecond || d > time.Second {
		t.Errorf("Time(Now()) is %v from time.Now()", d)
	}
	if d := got.Sub(c.Time(n - int64(time.Hour))); d != time.Hour {
		t.Errorf("an hour earlier on the clock is %v earlier on the wall", d)
	}
}
