//go:build cgo && linux

package realtime

/*
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// One watched thread. The Go side writes mark and state with atomic
// stores; the guard's thread reads them with atomic loads and keeps the
// rest to itself. Padded to 128 bytes so that two loops' marks never share
// a cache line.
typedef struct {
	int64_t  mark;      // CLOCK_MONOTONIC ns: the thread was in its own code then, or wakes then
	int32_t  state;     // sg_free, sg_watched, sg_demoting, sg_demoted
	int32_t  tid;
	int64_t  threshold; // ns
	uint64_t breaks;    // demotions
	uint64_t failures;  // demotions the kernel refused
	// Guard thread only.
	int64_t  seen_mark, prev_at, prev_cpu, prev_delay, run_from;
	int64_t  next_look, gap; // a blocked thread is looked at less and less often
	int32_t  fd, fd_tid;  // the thread's schedstat file, for fd_tid
	int64_t  pad[3];
} sg_slot;

enum { sg_free = 0, sg_watched = 1, sg_demoting = 2, sg_demoted = 3 };

typedef struct {
	int32_t   stop;     // atomic
	int32_t   policy;   // what the guard's thread got: SCHED_FIFO, or SCHED_OTHER when refused
	int32_t   err;      // errno of a refused SCHED_FIFO
	int32_t   priority; // asked; then what it got
	int32_t   fallback; // asked when priority is refused (RLIMIT_RTPRIO), 0 none
	int64_t   interval; // ns, the shortest time between two passes
	uint64_t  passes;   // atomic
	uint64_t  late;     // atomic: passes skipped because the guard woke late
	int32_t   nslots;
	pthread_t th;
	sg_slot  *slots;
	int32_t   ready;    // atomic: the thread has set itself up
} sg_guard;

static int64_t sg_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// The CPU time of a thread of this process, exact to the call: the
// kernel's per-thread CPU clock (MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED))
// brings a running thread's count up to date, which its schedstat file does
// only at the scheduler's tick.
static int64_t sg_cpu(int32_t tid) {
	clockid_t id = (clockid_t)((~(uint32_t)tid) << 3) | 6;
	struct timespec ts;
	if (clock_gettime(id, &ts) != 0) return -1;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// How long a thread has waited for a CPU while runnable (the second field
// of /proc/self/task/TID/schedstat), -1 unknown. The kernel adds a wait
// when the wait ends, so a thread put on and off a CPU often (a spin that
// yields to its peers) is counted closely.
static int64_t sg_delay(sg_slot *s) {
	if (s->fd_tid != s->tid) {
		if (s->fd >= 0) close(s->fd);
		char path[64];
		snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", s->tid);
		s->fd = open(path, O_RDONLY | O_CLOEXEC);
		s->fd_tid = s->tid;
	}
	if (s->fd < 0) return -1;
	char buf[96];
	ssize_t n = pread(s->fd, buf, sizeof buf - 1, 0);
	if (n <= 0) return -1;
	buf[n] = 0;
	char *p = strchr(buf, ' ');
	return p ? strtoll(p + 1, NULL, 10) : -1;
}

static void sg_check(sg_guard *g, sg_slot *s, int64_t now) {
	if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != sg_watched) return;
	int64_t mark = __atomic_load_n(&s->mark, __ATOMIC_ACQUIRE);
	int64_t since = now - mark;
	if (since < s->threshold / 2) return;
	if (s->seen_mark == mark && now < s->next_look) return;
	int64_t cpu = sg_cpu(s->tid);
	int64_t delay = sg_delay(s);
	if (cpu < 0 || delay < 0) return; // the thread is gone
	if (s->seen_mark != mark) {
		s->seen_mark = mark;
		s->prev_at = now;
		s->prev_cpu = cpu;
		s->prev_delay = delay;
		s->run_from = now;
		s->next_look = s->gap = 0;
		return;
	}
	// A spin never blocks: over each window the thread ran or waited for a
	// CPU the whole time (90 %), and it ran a share of it (25 %): alone on
	// its CPU it runs throughout; yielding to a peer of its priority that
	// spins too, it runs half. A thread that blocked (a sleep, a futex of
	// the runtime), or that only waited for a CPU, is left alone.
	int64_t dt = now - s->prev_at, dc = cpu - s->prev_cpu, dd = delay - s->prev_delay;
	if ((dc + dd) * 10 < dt * 9 || dc * 4 < dt) s->run_from = now;
	s->prev_at = now;
	s->prev_cpu = cpu;
	s->prev_delay = delay;
	if (dc * 10 < dt) {
		// Blocked (waiting for a datagram, a link that is down): look
		// again after 2, 4, then 8 intervals, not at every pass; a spin
		// that starts meanwhile is found at most 8 intervals later.
		s->gap = s->gap ? (s->gap * 2 < 8 * g->interval ? s->gap * 2 : 8 * g->interval) : 2 * g->interval;
		s->next_look = now + s->gap;
	} else {
		s->next_look = s->gap = 0;
	}
	if (since < s->threshold || now - s->run_from < s->threshold / 2) return;
	// Running the whole time, outside its own code, for longer than it may:
	// let the ordinary threads of its CPU run.
	int32_t want = sg_watched;
	if (!__atomic_compare_exchange_n(&s->state, &want, sg_demoting, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return;
	struct sched_param p;
	memset(&p, 0, sizeof p);
	if (sched_setscheduler(s->tid, SCHED_OTHER, &p) != 0) {
		__atomic_add_fetch(&s->failures, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&s->state, sg_watched, __ATOMIC_RELEASE);
		s->run_from = now;
		return;
	}
	__atomic_add_fetch(&s->breaks, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&s->state, sg_demoted, __ATOMIC_RELEASE);
	s->seen_mark = 0;
}

static void *sg_main(void *arg) {
	sg_guard *g = arg;
	pthread_setname_np(pthread_self(), "spin-guard"); // for ps -L and top -H
	struct sched_param p;
	memset(&p, 0, sizeof p);
	p.sched_priority = g->priority;
	int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
	if (rc != 0 && g->fallback > 0 && g->fallback < g->priority) {
		p.sched_priority = g->fallback;
		if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0) {
			rc = 0;
			g->priority = g->fallback;
		}
	}
	if (rc == 0) {
		g->policy = SCHED_FIFO;
	} else {
		g->policy = SCHED_OTHER;
		g->priority = 0;
		g->err = rc;
	}
	__atomic_store_n(&g->ready, 1, __ATOMIC_RELEASE);
	int64_t last = sg_now();
	while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE)) {
		// Sleep until the earliest moment a watched thread could need a
		// look, but never less than the interval after the last pass: a
		// mark only moves forward, so a later mark never asks for an
		// earlier look.
		int64_t wake = last + 50 * g->interval;
		for (int i = 0; i < g->nslots; i++) {
			sg_slot *s = &g->slots[i];
			if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != sg_watched) continue;
			int64_t mark = __atomic_load_n(&s->mark, __ATOMIC_ACQUIRE);
			int64_t at = mark + s->threshold / 2;
			if (s->seen_mark == mark && s->next_look > at) at = s->next_look;
			if (at < wake) wake = at;
		}
		if (wake < last + g->interval) wake = last + g->interval;
		struct timespec ts = { .tv_sec = wake / 1000000000LL, .tv_nsec = wake % 1000000000LL };
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
		int64_t now = sg_now();
		last = now;
		if (now - wake > g->interval) {
			// The guard itself woke late: the machine did not run it (a
			// virtual machine's CPUs paused by its host count the pause as
			// run time of the thread they held). Start every window again
			// rather than take the pause for a spin.
			for (int i = 0; i < g->nslots; i++) g->slots[i].seen_mark = 0;
			__atomic_add_fetch(&g->late, 1, __ATOMIC_RELAXED);
			continue;
		}
		for (int i = 0; i < g->nslots; i++) sg_check(g, &g->slots[i], now);
		__atomic_add_fetch(&g->passes, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

// sg_start makes the guard's thread with every signal blocked (the Go
// runtime's handlers must not run on a thread it does not know), and
// returns 0 or an errno.
static int sg_start(sg_guard *g) {
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&g->th, NULL, sg_main, g);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static void sg_stop(sg_guard *g) {
	__atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
	pthread_join(g->th, NULL);
}

// The guard thread's own CPU time in ns, -1 unknown.
static int64_t sg_self_cpu(sg_guard *g) {
	clockid_t id;
	struct timespec ts;
	if (pthread_getcpuclockid(g->th, &id) != 0 || clock_gettime(id, &ts) != 0) return -1;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int32_t sg_ready(sg_guard *g) { return __atomic_load_n(&g->ready, __ATOMIC_ACQUIRE); }
static uint64_t sg_passes(sg_guard *g) { return __atomic_load_n(&g->passes, __ATOMIC_RELAXED); }
*/
import "C"

import (
	"fmt"
	"runtime"
	"syscall"
	"time"
	"unsafe"
)

// SpinGuardBuilt reports whether this build has the spin guard (it needs
// cgo).
const SpinGuardBuilt = true

const (
	slotFree     = C.sg_free
	slotWatched  = C.sg_watched
	slotDemoting = C.sg_demoting
	slotDemoted  = C.sg_demoted
)

// guardC is the C side of a SpinGuard: its memory is C's, so the guard's
// thread may keep pointers into it.
type guardC struct{ g *C.sg_guard }

func startGuardC(cfg SpinGuardConfig) (guardC, error) {
	g := (*C.sg_guard)(C.calloc(1, C.sizeof_sg_guard))
	g.slots = (*C.sg_slot)(C.calloc(C.size_t(cfg.Slots), C.sizeof_sg_slot))
	for i := range cfg.Slots {
		s := &unsafe.Slice(g.slots, cfg.Slots)[i]
		s.fd, s.fd_tid = -1, -1
	}
	g.nslots = C.int32_t(cfg.Slots)
	g.priority = C.int32_t(cfg.Priority)
	g.fallback = C.int32_t(cfg.fallback)
	g.interval = C.int64_t(cfg.Interval.Nanoseconds())
	if rc := C.sg_start(g); rc != 0 {
		C.free(unsafe.Pointer(g.slots))
		C.free(unsafe.Pointer(g))
		return guardC{}, fmt.Errorf("%w: its thread: %w", ErrSpinGuard, syscall.Errno(rc))
	}
	for C.sg_ready(g) == 0 {
		runtime.Gosched()
	}
	return guardC{g}, nil
}

// refused is the errno of a refused SCHED_FIFO for the guard's thread, 0
// when it got it.
func (c guardC) refused() error {
	if c.g.policy == C.SCHED_FIFO {
		return nil
	}
	return syscall.Errno(c.g.err)
}

// halt stops the guard's thread and waits for it.
func (c guardC) halt() { C.sg_stop(c.g) }

// free releases the guard's memory and files, after halt and the last
// Release.
func (c guardC) free() {
	for i := range int(c.g.nslots) {
		if s := &unsafe.Slice(c.g.slots, int(c.g.nslots))[i]; s.fd >= 0 {
			C.close(s.fd)
		}
	}
	C.free(unsafe.Pointer(c.g.slots))
	C.free(unsafe.Pointer(c.g))
}

func (c guardC) passes() uint64 { return uint64(C.sg_passes(c.g)) }

// cpuTime is the guard thread's CPU time, -1 unknown (before halt only).
func (c guardC) cpuTime() time.Duration { return time.Duration(C.sg_self_cpu(c.g)) }

// priority is the guard thread's SCHED_FIFO priority, 0 when refused.
func (c guardC) priority() int { return int(c.g.priority) }

func (c guardC) slot(i int) *slotC {
	s := &unsafe.Slice(c.g.slots, int(c.g.nslots))[i]
	return &slotC{
		mark:     (*int64)(unsafe.Pointer(&s.mark)),
		state:    (*int32)(unsafe.Pointer(&s.state)),
		tid:      (*int32)(unsafe.Pointer(&s.tid)),
		thresh:   (*int64)(unsafe.Pointer(&s.threshold)),
		breaks:   (*uint64)(unsafe.Pointer(&s.breaks)),
		failures: (*uint64)(unsafe.Pointer(&s.failures)),
		seen:     (*int64)(unsafe.Pointer(&s.seen_mark)),
	}
}

// The slots are 128 bytes, two cache lines, so that two loops' marks never
// share one.
var _ [128 - C.sizeof_sg_slot]struct{}
var _ [C.sizeof_sg_slot - 128]struct{}
