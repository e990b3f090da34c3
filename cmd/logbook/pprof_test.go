package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
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

// TestPprofAnswers: on a loopback address the profiles and the memory
// figures answer, and nothing else is served.
func TestPprofAnswers(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		at, stop, err := listenPprof(t.Context(), addr)
		if err != nil {
			if addr == "[::1]:0" && strings.Contains(err.Error(), "assign") {
				continue // no IPv6 loopback on this machine
			}
			t.Fatalf("listenPprof(%q): %v", addr, err)
		}
		get := func(path string) (int, []byte) {
			t.Helper()
			resp, err := http.Get("http://" + at + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, b
		}
		if code, b := get("/debug/pprof/heap?gc=1"); code != 200 || len(b) == 0 {
			t.Errorf("%s heap profile: %d, %d bytes", addr, code, len(b))
		}
		if code, b := get("/debug/pprof/goroutine?debug=1"); code != 200 || !bytes.Contains(b, []byte("goroutine profile")) {
			t.Errorf("%s goroutine profile: %d %.100s", addr, code, b)
		}
		code, b := get("/debug/memstats?gc=1")
		var m memFigures
		if err := json.Unmarshal(b, &m); code != 200 || err != nil || m.HeapAlloc == 0 || m.Goroutines == 0 || m.NumGC == 0 {
			t.Errorf("%s memstats: %d %v %s", addr, code, err, b)
		}
		if code, _ := get("/debug/vars"); code != 404 {
			t.Errorf("%s /debug/vars: %d, want 404 (only the pprof mux is served)", addr, code)
		}
		stop()
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

// TestPprofRebinding: every --pprof route answers 403 to a Host header
// that is not a loopback name (a DNS-rebinding page), to an Origin of
// another site and to a cross-site Sec-Fetch-Site, and 200 to the
// loopback names it listens under.
func TestPprofRebinding(t *testing.T) {
	at, stop, err := listenPprof(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	_, port, _ := net.SplitHostPort(at)
	get := func(path, host string, hdr ...string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+at+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/memstats", "/debug/pprof/heap", "/debug/pprof/symbol", "/debug/pprof/profile?seconds=1", "/debug/pprof/trace?seconds=1"} {
		for _, host := range []string{"evil.example.com", "evil.example.com:" + port, "192.0.2.1:" + port, "localhost.evil.example.com:" + port} {
			if code, b := get(path, host); code != http.StatusForbidden || strings.Contains(b, os.Args[0]) {
				t.Errorf("GET %s Host %s: %d %.100q, want 403", path, host, code, b)
			}
		}
		if code, b := get(path, "127.0.0.1:"+port, "Origin", "http://evil.example.com"); code != http.StatusForbidden {
			t.Errorf("GET %s Origin evil: %d %.100q, want 403", path, code, b)
		}
		if code, b := get(path, "127.0.0.1:"+port, "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
			t.Errorf("GET %s Sec-Fetch-Site cross-site: %d %.100q, want 403", path, code, b)
		}
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/cmdline", "/debug/memstats"} {
		for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port} {
			if code, b := get(path, host); code != http.StatusOK {
				t.Errorf("GET %s Host %s: %d %.100q, want 200", path, host, code, b)
			}
		}
		if code, b := get(path, "127.0.0.1:"+port, "Origin", "http://127.0.0.1:"+port, "Sec-Fetch-Site", "same-origin"); code != http.StatusOK {
			t.Errorf("GET %s same origin: %d %.100q, want 200", path, code, b)
		}
	}
}
