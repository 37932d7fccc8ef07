package main

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary act as the bridge binary, so a real process
// can be started and signalled.
func TestMain(m *testing.M) {
	if os.Getenv("BRIDGE_TEST_MAIN") == "1" {
		os.Args = append([]string{"bridge"}, strings.Fields(os.Getenv("BRIDGE_TEST_ARGS"))...)
		main()
		return
	}
	os.Exit(m.Run())
}

// SIGTERM stops the bridge cleanly: systemd hears READY=1 then STOPPING=1,
// the link stops with its halt policy, and the exit status is 0. So do
// SIGHUP (the terminal that started it closed) and SIGQUIT, whose default
// actions would end the process with no halt at all; the log names the
// signal.
func TestStopSignalsStopCleanly(t *testing.T) {
	for _, tc := range []struct {
		sig  syscall.Signal
		says string
	}{
		{syscall.SIGTERM, "terminated signal received"},
		{syscall.SIGHUP, "hangup signal received"},
		{syscall.SIGQUIT, "quit signal received"},
	} {
		t.Run(tc.sig.String(), func(t *testing.T) { stopsCleanly(t, tc.sig, tc.says) })
	}
}

func stopsCleanly(t *testing.T, sig syscall.Signal, says string) {
	sock := filepath.Join(t.TempDir(), "notify.sock")
	nc, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "BRIDGE_TEST_MAIN=1", "BRIDGE_TEST_ARGS=sim -ephemeral -metrics=",
		"NOTIFY_SOCKET="+sock, "WATCHDOG_USEC=200000")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	buf := make([]byte, 256)
	nc.SetReadDeadline(time.Now().Add(60 * time.Second))
	for !got["READY=1"] || !got["WATCHDOG=1"] {
		n, err := nc.Read(buf)
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("notifications %v: %v\n%s", got, err, errb.String())
		}
		got[strings.SplitN(string(buf[:n]), "\n", 2)[0]] = true
	}
	cmd.Process.Signal(sig)
	for !got["STOPPING=1"] {
		n, err := nc.Read(buf)
		if err != nil {
			t.Fatalf("no STOPPING=1: %v", err)
		}
		got[strings.SplitN(string(buf[:n]), "\n", 2)[0]] = true
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\n%s", err, errb.String())
	}
	logs := errb.String()
	if !strings.Contains(logs, `"to":"stopped"`) || !strings.Contains(out.String(), "emio") {
		t.Errorf("no clean stop:\n%s\n%s", out.String(), logs)
	}
	if !strings.Contains(logs, says) {
		t.Errorf("the log does not say %q:\n%s", says, logs)
	}
	// Every link's halt policy was applied (a device that a loaded
	// machine left down at the stop says so in its own words).
	for _, link := range []string{"emio", "meca500", "vrep"} {
		if !strings.Contains(logs, `"link":"`+link+`","halt":"hold"}`) {
			t.Errorf("no halt of link %s in the log:\n%s", link, logs)
		}
	}
}

// bridge partner pauses on SIGUSR1 like a stopped Simulink model, and
// answers again after the second one.
func TestPartnerPausesOnSIGUSR1(t *testing.T) {
	replies, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer replies.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "BRIDGE_TEST_MAIN=1",
		"BRIDGE_TEST_ARGS=partner -listen 127.0.0.1:0 -accept 127.0.0.1:0 -reply-to "+replies.LocalAddr().String()+" -controller constant -u 0.1,0.2,0.3,0.4")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
	lines := bufio.NewScanner(out)
	next := func() string {
		if !lines.Scan() {
			t.Fatalf("partner output ended: %v", lines.Err())
		}
		return lines.Text()
	}
	first := next()
	f := strings.Fields(first) // "partner: listening on ADDR ..."
	if len(f) < 4 {
		t.Fatalf("first line %q", first)
	}
	to, err := net.ResolveUDPAddr("udp4", f[3])
	if err != nil {
		t.Fatal(err)
	}
	master, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	meas := make([]byte, 64)
	binary.LittleEndian.PutUint64(meas, math.Float64bits(5))
	buf := make([]byte, 64)
	exchange := func(wait time.Duration) bool {
		master.WriteToUDP(meas, to)
		replies.SetReadDeadline(time.Now().Add(wait))
		n, _, err := replies.ReadFromUDP(buf)
		return err == nil && n == 40
	}
	if !exchange(5 * time.Second) {
		t.Fatal("no reply before the pause")
	}
	cmd.Process.Signal(syscall.SIGUSR1)
	if l := next(); !strings.Contains(l, "paused") {
		t.Fatalf("after SIGUSR1: %q", l)
	}
	if exchange(300 * time.Millisecond) {
		t.Fatal("a paused partner replied")
	}
	cmd.Process.Signal(syscall.SIGUSR1)
	if l := next(); !strings.Contains(l, "resumed") {
		t.Fatalf("after the second SIGUSR1: %q", l)
	}
	if !exchange(5 * time.Second) {
		t.Fatal("no reply after resuming")
	}
}
