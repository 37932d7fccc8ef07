package main

import (
	"bytes"
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
// the link stops with its halt policy, and the exit status is 0.
func TestSIGTERMStopsCleanly(t *testing.T) {
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
	nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	for !got["READY=1"] || !got["WATCHDOG=1"] {
		n, err := nc.Read(buf)
		if err != nil {
			cmd.Process.Kill()
			t.Fatalf("notifications %v: %v\n%s", got, err, errb.String())
		}
		got[strings.SplitN(string(buf[:n]), "\n", 2)[0]] = true
	}
	cmd.Process.Signal(syscall.SIGTERM)
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
	if !strings.Contains(errb.String(), `"to":"stopped"`) || !strings.Contains(out.String(), "emio") {
		t.Errorf("no clean stop:\n%s\n%s", out.String(), errb.String())
	}
}
