package profiling

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestPprofAnswers: on a loopback address the profiles and the memory
// figures answer, and nothing else is served.
func TestPprofAnswers(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		at, stop, err := Listen(t.Context(), addr)
		if err != nil {
			if addr == "[::1]:0" && strings.Contains(err.Error(), "assign") {
				continue // no IPv6 loopback on this machine
			}
			t.Fatalf("Listen(%q): %v", addr, err)
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
		var m MemFigures
		if err := json.Unmarshal(b, &m); code != 200 || err != nil || m.HeapAlloc == 0 || m.Goroutines == 0 || m.NumGC == 0 {
			t.Errorf("%s memstats: %d %v %s", addr, code, err, b)
		}
		if code, _ := get("/debug/vars"); code != 404 {
			t.Errorf("%s /debug/vars: %d, want 404 (only the pprof mux is served)", addr, code)
		}
		stop()
	}
}

// TestPprofRebinding: every --pprof route answers 403 to a Host header
// that is not a loopback name (a DNS-rebinding page), to an Origin of
// another site and to a cross-site Sec-Fetch-Site, and 200 to the
// loopback names it listens under.
func TestPprofRebinding(t *testing.T) {
	at, stop, err := Listen(t.Context(), "127.0.0.1:0")
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
