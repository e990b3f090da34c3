package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestObservations_RedactedEndToEnd: `serve --http` with a redact.txt in
// its data dir takes an observation carrying secrets of several shapes in
// its kind, meta and signals (the built-in rules and the data dir's own);
// none of them is in the POST's answer, `sessions`, `session show`,
// `audit`, `events tail --json` or the pending decisions. An at that is
// not RFC 3339 is refused naming the field and the format.
func TestObservations_RedactedEndToEnd(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, "redact.txt"), []byte("# code names\nacme-[0-9]{7}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeLoopbackPort(t)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runCLI(ctx, []string{"--data", data, "serve", "--workers", "0", "--reconcile-every", "0", "--fsync", "interval", "--http", addr}, bytes.NewReader(nil), io.Discard, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post("http://"+addr+"/v1/observations", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve --http did not come up:\n%s", stderr.String())
		}
		if resp, err := http.Get("http://" + addr + "/v1/status"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
	}

	aws := "AK" + "IA" + "QYLPMN5HHHFPZAM2"
	gh := "gh" + "p_" + "4Nd8fKq2ZbX9vLm3Qw7Rt1Yp6Hs0Jc5Ue2Ia"
	slack := "xo" + "xb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
	pass := "hunter2" + "supersecret"
	custom := "acme-" + "7731924"
	secrets := []string{aws, gh, slack, "admin:" + pass, custom}
	body, _ := json.Marshal(map[string]any{
		"harness": "mydaemon", "id": "evt-20", "session": "run-42", "kind": "x " + aws,
		"meta": map[string]string{"cwd": "/srv/" + gh, "title": slack, "model": custom},
		"signals": []map[string]string{
			{"kind": "text", "text": "key " + aws},
			{"kind": "tool_use", "id": "t9", "name": "Bash " + custom, "text": "curl -u admin:" + pass + " https://x"},
			{"kind": "permission", "id": "t9", "name": "Bash " + custom},
		},
	})
	code, rep := post(string(body))
	if code != 200 {
		t.Fatalf("POST: %d %s", code, rep)
	}
	outs := map[string]string{"POST answer": rep}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(outs["sessions"], "mydaemon-run-42"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("sessions does not list mydaemon-run-42:\n%s", outs["sessions"])
		}
		outs["sessions"] = cli(t, data, "sessions")
	}
	outs["session show"] = cli(t, data, "session", "show", "mydaemon-run-42")
	outs["audit"] = cli(t, data, "audit", "mydaemon-run-42")
	outs["events tail"] = cli(t, data, "events", "tail", "--json", "-n", "100")
	for _, p := range []string{"/v1/pending", "/v1/sessions/mydaemon-run-42", "/v1/events?after=0&limit=1000"} {
		resp, err := http.Get("http://" + addr + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		outs[p] = string(b)
	}
	code, outs["bad at"] = post(`{"harness":"mydaemon","id":"evt-21","session":"run-42","kind":"k","at":"notatime","signals":[]}`)
	if code != 400 || !strings.Contains(outs["bad at"], `field \"at\"`) || !strings.Contains(outs["bad at"], "RFC 3339") || strings.Contains(outs["bad at"], "2006-01-02T15:04:05Z07:00") {
		t.Errorf("at notatime: %d %s", code, outs["bad at"])
	}
	code, outs["secret session"] = post(`{"harness":"mydaemon","id":"evt-22","session":"` + gh + `","kind":"k","signals":[{"kind":"prompt"}]}`)
	if code != 400 || !strings.Contains(outs["secret session"], "session looks like a secret") {
		t.Errorf("secret session id: %d %s", code, outs["secret session"])
	}

	// The data dir's own rule took the code name.
	if !strings.Contains(outs["events tail"], "[REDACTED:custom-1]") {
		t.Errorf("events tail shows no redaction by redact.txt's rule:\n%s", outs["events tail"])
	}
	for name, out := range outs {
		for _, s := range append(secrets, pass) {
			if strings.Contains(out, s) {
				t.Errorf("%s shows the secret %.12s…:\n%.2000s", name, s, out)
			}
		}
	}
}
