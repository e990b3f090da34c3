package main

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// TestServe_ClosedStderrStopsInOrder runs serve with its standard output
// and error a pipe whose reader is gone (`serve 2>&1 | tee log`, where
// ctrl+c ends tee first) and stops it with SIGINT: its stop's log lines
// fail to be written, and it stops in order all the same (exit 0, its
// serve.json removed), never ended by SIGPIPE halfway.
func TestServe_ClosedStderrStopsInOrder(t *testing.T) {
	bin := soakBuild(t)
	data := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(bin, "serve", "--data", data, "--http", "off", "--workers", "0")
	c.Stdout, c.Stderr = w, w
	sandboxtest.DieWithTest(c)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	t.Cleanup(func() { _ = c.Process.Kill(); <-done })
	waitServer(t, dataDir(data))
	r.Close() // the pipe's only reader: every later write fails
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
		done <- err
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop within a minute of SIGINT")
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		t.Fatalf("serve ended %v (%s), want an orderly stop, exit 0", err, ee.ProcessState)
	} else if err != nil {
		t.Fatal(err)
	}
	if _, ok := dataDir(data).readServeInfo(); ok {
		t.Error("serve.json is left behind")
	}
}
