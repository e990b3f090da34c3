package main

import (
	"bytes"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPprofLoopbackOnly: --pprof refuses every address that is not
// loopback, and serve refuses to start with one, naming it.
func TestPprofLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "192.0.2.1:6060", "example.com:6060", "6060", ""} {
		if _, stop, err := listenPprof(t.Context(), addr); err == nil {
			stop()
			t.Errorf("listenPprof(%q): listening, want refused", addr)
		} else if !strings.Contains(err.Error(), "--pprof") {
			t.Errorf("listenPprof(%q): %v, want an error naming --pprof", addr, err)
		}
	}
	var out bytes.Buffer
	err := runCLI(t.Context(), []string{"--data", t.TempDir(), "serve", "--workers", "0", "--pprof", "0.0.0.0:6060"}, nil, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "0.0.0.0") {
		t.Fatalf("serve --pprof 0.0.0.0:6060: %v, want refused naming the address and loopback\n%s", err, out.String())
	}
}

// TestPprofAddrInUse: a --pprof address another process holds is a
// runtime error (exit 1), not a usage one, naming the address; serve
// starts nothing.
func TestPprofAddrInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	data := t.TempDir()
	var out bytes.Buffer
	err = runCLI(t.Context(), []string{"--data", data, "serve", "--workers", "0", "--pprof", l.Addr().String()}, nil, &out, &out)
	if err == nil || exitCode(err) != codeError || !strings.Contains(err.Error(), "--pprof "+l.Addr().String()) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("serve --pprof %s (in use): %v (exit %d), want exit %d naming the address in use\n%s", l.Addr(), err, exitCode(err), codeError, out.String())
	}
	if _, err := os.Stat(filepath.Join(data, "serve.json")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("serve.json after a refused start: %v, want none", err)
	}
}

// TestServeViewsCache: --views-cache below 1 MiB is refused, naming it.
func TestServeViewsCache(t *testing.T) {
	var out bytes.Buffer
	err := runCLI(t.Context(), []string{"--data", t.TempDir(), "serve", "--workers", "0", "--views-cache", "0"}, nil, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "--views-cache") {
		t.Fatalf("serve --views-cache 0: %v, want refused naming the flag\n%s", err, out.String())
	}
}
