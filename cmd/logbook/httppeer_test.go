package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHTTP_LoopbackPeerUser: `serve --http` on a loopback address makes
// http-tokens.json (0600) and serves a client of its own user with no
// token. Run as root, a client running as uid 65534 (curl under
// syscall.Credential) gets 403 naming the rule for GET /v1/sessions, a
// review verdict and an observation, and nothing is recorded; with the
// writer's token from http-tokens.json the same client is served.
func TestHTTP_LoopbackPeerUser(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	addr := freeLoopbackPort(t)
	serveInProcess(t, data, "--workers", "0", "--reconcile-every", "0", "--fsync", "interval", "--http", addr)
	base := "http://" + addr
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve --http %s did not come up", addr)
		}
		if resp, err := http.Get(base + "/v1/status"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
	}
	fi, err := os.Stat(filepath.Join(data, "http-tokens.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("http-tokens.json on a loopback serve: %v, %v; want mode 0600", fi, err)
	}
	var tok struct{ Reader, Writer string }
	if b, err := os.ReadFile(filepath.Join(data, "http-tokens.json")); err != nil || json.Unmarshal(b, &tok) != nil || tok.Writer == "" {
		t.Fatalf("http-tokens.json: %s, %v", b, err)
	}
	obs := func(id string) string {
		return `{"harness":"peer","id":"` + id + `","session":"s1","kind":"k","signals":[{"kind":"prompt"}]}`
	}
	review := `{"session":"g-1","verdict":"allow","reason":"x","by":"attacker"}`
	events := func() int {
		return len(strings.Split(strings.TrimSpace(cli(t, data, "events", "tail", "--json", "-n", "1000")), "\n"))
	}

	// Serve's own user, no token.
	resp, err := http.Get(base + "/v1/sessions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("same user GET /v1/sessions: %d, want 200", resp.StatusCode)
	}
	resp, err = http.Post(base+"/v1/observations", "application/json", strings.NewReader(obs("same-1")))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("same user POST /v1/observations: %d, want 200", resp.StatusCode)
	}

	if os.Geteuid() != 0 {
		t.Skip("the other user's part runs as root (it runs curl as uid 65534)")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("no curl to run as uid 65534")
	}
	// as runs curl as uid 65534 and returns the status and the body.
	as := func(method, path, body, token string) (int, string) {
		t.Helper()
		args := []string{"-sS", "-o", "-", "-w", "\n%{http_code}", "-X", method}
		if body != "" {
			args = append(args, "-H", "Content-Type: application/json", "--data-binary", body)
		}
		if token != "" {
			args = append(args, "-H", "Authorization: Bearer "+token)
		}
		cmd := exec.Command(curl, append(args, base+path)...)
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl as 65534 %s %s: %v %s", method, path, err, out)
		}
		s := strings.TrimRight(string(out), "\n")
		i := strings.LastIndexByte(s, '\n')
		code, err := strconv.Atoi(s[i+1:])
		if err != nil {
			t.Fatalf("curl output %q", out)
		}
		return code, s[:i+1]
	}
	before := events()
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions", ""}, {"GET", "/v1/pending", ""},
		{"POST", "/v1/reviews/g-1", review}, {"POST", "/v1/observations", obs("other-1")},
	} {
		code, body := as(r.method, r.path, r.body, "")
		var ae struct{ Error, Code string }
		if code != 403 || json.Unmarshal([]byte(body), &ae) != nil || ae.Code != "forbidden" ||
			!strings.Contains(ae.Error, "loopback clients of another user need a token") || !strings.Contains(ae.Error, "Authorization: Bearer …") || !strings.Contains(ae.Error, "uid 65534") {
			t.Errorf("uid 65534 %s %s with no token: %d %s; want 403 forbidden naming the rule", r.method, r.path, code, body)
		}
	}
	if after := events(); after != before {
		t.Errorf("refused requests of uid 65534 recorded %d events", after-before)
	}
	if code, body := as("GET", "/v1/sessions", "", tok.Writer); code != 200 || !strings.Contains(body, "peer-s1") {
		t.Errorf("uid 65534 GET /v1/sessions with the writer's token: %d %s", code, body)
	}
	if code, body := as("POST", "/v1/observations", obs("other-2"), tok.Writer); code != 200 {
		t.Errorf("uid 65534 POST /v1/observations with the writer's token: %d %s", code, body)
	}
	// Served: the verdict reaches the gate, which has no such review.
	if code, body := as("POST", "/v1/reviews/g-1", review, tok.Writer); code != 404 || !strings.Contains(body, "not_found") {
		t.Errorf("uid 65534 POST /v1/reviews/g-1 with the writer's token: %d %s; want 404 (no such review)", code, body)
	}
	if code, body := as("POST", "/v1/observations", obs("other-3"), tok.Reader); code != 403 {
		t.Errorf("uid 65534 POST with the reader's token: %d %s; want 403", code, body)
	}
	if code, body := as("GET", "/v1/sessions", "", "wrong"); code != 401 {
		t.Errorf("uid 65534 GET with a wrong token: %d %s; want 401", code, body)
	}
}
