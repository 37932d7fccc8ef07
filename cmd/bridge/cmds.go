package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/labbridge/bridge/internal/config"
	"github.com/labbridge/bridge/internal/logging"
	"github.com/labbridge/bridge/internal/loopbench"
	"github.com/labbridge/bridge/internal/termview"
)

// cmdCheck is `bridge check`.
func cmdCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("check", "check -config FILE", stderr)
	cfgPath := fs.String("config", "", "configuration file to validate (default ./bridge.toml, else the embedded default)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, from, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok, %d link(s)\n", from, len(cfg.Links))
	for _, l := range cfg.Links {
		mc := l.MasterConfig()
		fmt.Fprintf(stdout, "  %s: %g Hz (clock %s), %s; %d measured and %d command values, %v -> %v, replies on %v, apply %s, halt %s\n",
			l.Name, l.RateHz, l.Clock, l.Plant.Summary(), mc.MeasureLen, mc.CommandLen, mc.Bind, mc.Remote, mc.Listen, l.Apply, l.Halt)
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	return nil
}

// cmdStartUDP is emioapi's `startUDP` with its flags and defaults, honoured.
func cmdStartUDP(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("startUDP", "startUDP [--fps 30] [--nb_markers 1] [--side plan] [--sort y] [--remote_ip 127.0.0.1] [--remote_port 25000] [--local_port 25001] [--bind_port 9090] [--recv_timeout 0.1]", stderr)
	f := config.DefaultStartUDP()
	f.Declare(fs)
	cfgPath := fs.String("config", "", "base configuration (default ./bridge.toml, else the embedded default)")
	duration := fs.Duration("duration", 0, "stop after this long (0 = until SIGINT/SIGTERM)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, from, err := config.Load(*cfgPath)
	if err != nil {
		return err
	}
	if err := config.CheckDuration("startUDP", "duration", *duration, true); err != nil {
		return err
	}
	if err := cfg.ApplyStartUDP(f); err != nil {
		return err
	}
	return cfg.AddrInUse("run", runConfig(ctx, cfg, from+" with startUDP flags", false, false, "", nil, *duration, stdout, stderr))
}

// cmdPartner is `bridge partner`: the Simulink side.
func cmdPartner(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("partner", "partner [flags]", stderr)
	listen, accept, replyTo := addrFlag{"127.0.0.1:25000"}, addrFlag{"127.0.0.1:9090"}, addrFlag{"127.0.0.1:25001"}
	fs.Var(&listen, "listen", "where measurements arrive (Simulink's UDP Receive)")
	fs.Var(&accept, "accept", `accept measurements only from this source ("" = any; port 0 = any port)`)
	fs.Var(&replyTo, "reply-to", "where commands go (Simulink's UDP Send)")
	pf := config.DefaultPartnerFlags()
	pf.Declare(fs)
	asJSON := fs.Bool("json", false, "at exit, print the counters and the send timing as one JSON object on the last line (after the first line, which says where it listens)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger := logging.New(stderr, logging.Options{Format: "auto", Level: slog.LevelInfo, Terminal: termview.IsTerminal(stderr)})
	p, faults, controller, err := pf.Partner(listen.addr(), accept.addr(), replyTo.addr(), logger)
	if err != nil {
		return err
	}
	defer p.Close()
	fmt.Fprintf(stdout, "partner: listening on %v (accepting %s), replying to %v from %v, %s controller\n",
		p.Addr(), cmp.Or(accept.String(), "any source"), replyTo.addr(), p.ReplyAddr(), controller)
	ctx, cancel := withDuration(ctx, pf.Duration)
	defer cancel()
	// SIGUSR1 pauses or resumes the replies, SIGUSR2 restarts the model:
	// the faults of a Simulink session, on demand.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	var wg sync.WaitGroup
	sigCtx, stopSigs := context.WithCancel(ctx)
	wg.Go(func() {
		for {
			select {
			case <-sigCtx.Done():
				return
			case s := <-sigs:
				switch {
				case s == syscall.SIGUSR2:
					p.Restart()
					fmt.Fprintln(stdout, "partner: restarted")
				case faults.TogglePause():
					fmt.Fprintln(stdout, "partner: paused (SIGUSR1 again resumes)")
				default:
					fmt.Fprintln(stdout, "partner: resumed")
				}
			}
		}
	})
	err = p.Serve(ctx)
	stopSigs()
	wg.Wait()
	st := p.Stats()
	timing := p.SendTiming()
	if *asJSON {
		// One line: a peer reading our output takes the last line as the
		// report (loopbench.Peer.Stop).
		b, jerr := json.Marshal(loopbench.NewPartnerReport(st, timing))
		if jerr != nil {
			return cmp.Or(err, jerr)
		}
		fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	fmt.Fprintf(stdout, "partner: received %d, replied %d, handshakes %d, dropped %d, faulted %d, last seq %d\n",
		st.Received, st.Replied, st.Handshakes, st.Dropped, st.Faulted, st.LastSeq)
	fmt.Fprintf(stdout, "partner: %v\n", loopbench.NewSendTimingReport(timing))
	return err
}

// benchLink is `bridge bench link`: one link with the simulated plant against
// the built-in partner on loopback, reporting reply latency.
func benchLink(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("bench link", "bench link [-rate HZ] [-duration D] [-plant sim|emio] [-lead auto|D] [-spin auto|D] [-budget auto|D] [-spin-guard] [-priority N] [-cpu N] [-dma-latency] [-threshold D] [-cyclictest] [-partner process|builtin|external] [-json]", stderr)
	rate := fs.Float64("rate", 1000, "tick rate (Hz)")
	loopFlags := config.LoopFlags(fs, "bench link", true)
	plantKind := fs.String("plant", "sim", "sim: in-memory motors (the link alone); emio: the Emio's servos simulated on a pseudo-terminal (the serial path, with a U2D2's 1 ms latency timer)")
	duration := fs.Duration("duration", 60*time.Second, "how long to run")
	asJSON := fs.Bool("json", false, "print one JSON object")
	threshold := fs.Duration("threshold", time.Millisecond, "keep every tick later than this and attribute it (0 = off)")
	withCyclictest := fs.Bool("cyclictest", true, "run cyclictest (Debian package rt-tests) concurrently, at the loop's priority and period on the CPUs it may run on, to tell the machine's stalls from ours")
	partnerMode := fs.String("partner", "builtin", "builtin: the partner in this process, as bridge sim runs it; process: the bridge partner command in a process of its own; external: a host already running (a real Simulink model) at -remote")
	remote := fs.String("remote", "127.0.0.1:25000", "with -partner external: where the partner listens")
	listen := fs.String("listen", "0.0.0.0:25001", "with -partner external: where its replies arrive")
	bind := fs.String("bind", "0.0.0.0:9090", "with -partner external: source of the measurements")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := config.CheckRate("bench link", "rate", *rate); err != nil {
		return err
	}
	if err := config.CheckDuration("bench link", "duration", *duration, false); err != nil {
		return err
	}
	// The link on its own clock, on the in-memory plant by default (the
	// link alone), or the Emio's servos simulated on a pseudo-terminal (the
	// real serial path); no camera (the tracker has a benchmark of its
	// own); the built-in partner holding.
	if *plantKind != "sim" && *plantKind != "emio" {
		return fmt.Errorf("bridge bench link: -plant %q: want sim (in-memory motors) or emio (servos on a pseudo-terminal)", *plantKind)
	}
	loop, err := loopFlags()
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	rep, err := config.RunBenchLink(ctx, config.LinkBench{Rate: *rate, Duration: *duration, Plant: *plantKind, Loop: loop,
		Partner: *partnerMode, Remote: *remote, Listen: *listen, Bind: *bind, Exe: self,
		Stalls: loopbench.StallConfig{Threshold: *threshold, Cyclictest: *withCyclictest},
		Logger: logging.New(stderr, logging.Options{Format: "text", Level: slog.LevelWarn, Terminal: true}),
		Warn:   func(msg string) { fmt.Fprintf(stderr, "bridge bench link: %s\n", msg) }})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, rep)
	}
	return rep.WriteText(stdout)
}
