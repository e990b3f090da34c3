package worker

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// storedOutput returns the bodies of the lb.out messages of command id as
// the log stores them, in order, concatenated: what any reader of the log
// (a subscriber on another host, a backup) gets.
func (e *testEnv) storedOutput(ctx context.Context, id string) []byte {
	e.t.Helper()
	var all bytes.Buffer
	for m, err := range e.log.ReadRaw(ctx, natslog.OutputSubject(id), 1) {
		if err != nil {
			e.t.Fatalf("read lb.out of %s: %v", id, err)
		}
		all.Write(m.Data)
	}
	return all.Bytes()
}

// TestWorker_RedactsByItsRules: a command under the real sandbox prints
// secrets that only the worker's own rules (Config.Redactor: in serve,
// the data dir's redact.txt) know, whole and split across two writes, on
// pipes and on a PTY; none of them is in the lb.out messages stored. The
// rules are followed as they change, in the output of a command already
// running. A refusal reason quoting the request is redacted the same way.
func TestWorker_RedactsByItsRules(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	one, err := redact.New([]string{`acme-[0-9]{7}`})
	if err != nil {
		t.Fatal(err)
	}
	two, err := redact.New([]string{`acme-[0-9]{7}`, `mycorp-[a-z]{6}`})
	if err != nil {
		t.Fatal(err)
	}
	var rules atomic.Pointer[redact.Redactor]
	rules.Store(one)
	cfg := e.workerConfig()
	cfg.Redactor = redact.Live(rules.Load)
	e.startWorker(cfg)

	// No argv element holds a secret (the client's built-in rules would
	// not see these anyway): the command makes them.
	const whole, split = "acme-1234567", "acme-7731924"
	script := `printf 'acme-%s\n' 1234567; printf 'a acme-77'; printf '31924 b\n'`
	for _, tty := range []bool{false, true} {
		req := e.request(events.ModeReadOnly, "sh", "-c", script)
		req.TTY = tty
		id := e.submit(req)
		st, _ := e.follow(id, 20*time.Second)
		if st.Status != command.StatusExited || *st.ExitCode != 0 {
			t.Fatalf("tty %v: status %s reason %q", tty, st.Status, st.EndReason)
		}
		got := e.storedOutput(t.Context(), id)
		for _, s := range []string{whole, split} {
			if bytes.Contains(got, []byte(s)) {
				t.Errorf("tty %v: %s stored in clear: %q", tty, s, got)
			}
		}
		if n := bytes.Count(got, []byte("[REDACTED:custom-1]")); n != 2 {
			t.Errorf("tty %v: %d redactions by the custom rule in %q, want 2", tty, n, got)
		}
	}

	// A rule added while a command runs applies to what it prints next.
	const later = "mycorp-secret"
	req := e.request(events.ModeReadOnly, "sh", "-c",
		`printf 'mycorp-%s\n' secret; while [ ! -e go ]; do sleep 0.02; done; printf 'x mycorp-'; printf 'secret y\n'`)
	id := e.submit(req)
	e.waitFor("the first line stored", func() bool {
		return bytes.Contains(e.storedOutput(t.Context(), id), []byte(later+"\n"))
	})
	rules.Store(two)
	if err := os.WriteFile(filepath.Join(e.ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _ := e.follow(id, 20*time.Second); st.Status != command.StatusExited {
		t.Fatalf("status %s reason %q", st.Status, st.EndReason)
	}
	if got := e.storedOutput(t.Context(), id); bytes.Count(got, []byte(later)) != 1 || !bytes.HasSuffix(got, []byte("x [REDACTED:custom-2] y\n")) {
		t.Errorf("output %q: want the line printed after the rule was added redacted by it", got)
	}

	// A request the client let through (its rules lack the custom ones)
	// whose argv[0] is a secret by the worker's rules is refused by the
	// worker's own check, naming the position: the secret is nowhere but
	// in the request itself (not in command.refused, nor in the
	// session's entry).
	id = e.submit(e.request(events.ModeReadOnly, "/nonexistent/"+whole))
	if st, _ := e.follow(id, 20*time.Second); st.Status != command.StatusRefused || !strings.Contains(st.EndReason, "argv[0] looks like a secret") || strings.Contains(st.EndReason, whole) {
		t.Fatalf("status %s reason %q; want refused as a secret, the value not quoted", st.Status, st.EndReason)
	}
	e.waitFor("detach", func() bool { return len(e.sessionState().Entries) == 0 })
	for m, err := range e.log.ReadRaw(t.Context(), "lb.>", 1) {
		if err != nil {
			t.Fatal(err)
		}
		if typ := m.Header.Get(natslog.HeaderType); typ != "command.requested" && bytes.Contains(m.Data, []byte(whole)) {
			t.Errorf("%s (%s) holds %s: %s", m.Subject, typ, whole, m.Data)
		}
	}
}

// TestWorker_RedactsAcrossAPause: a secret a command prints in two
// pieces with a pause between them longer than the worker's idle flush
// (which lets a prompt without a newline show) is not stored in clear,
// in pipe and PTY mode: the start of a token stays held over the
// pause, and a keyword printed before the pause is redacted with the
// value after it.
func TestWorker_RedactsAcrossAPause(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	gh := "ghp_" + "abcdefghijklmn" + "opqrstuvwxyzABCDEF9876"
	aws := "AKIA" + "IOSFODNN7EXAMPLV"
	script := `printf 'a ghp_abcdefghijklmn'; sleep 0.6; printf 'opqrstuvwxyzABCDEF9876 b\n'; ` +
		`printf 'AKIAIOSFODN'; sleep 0.6; printf 'N7EXAMPLV\n'`
	for _, tty := range []bool{false, true} {
		req := e.request(events.ModeReadOnly, "sh", "-c", script)
		req.TTY = tty
		id := e.submit(req)
		st, _ := e.follow(id, 20*time.Second)
		if st.Status != command.StatusExited || *st.ExitCode != 0 {
			t.Fatalf("tty %v: status %s reason %q", tty, st.Status, st.EndReason)
		}
		got := e.storedOutput(t.Context(), id)
		for _, s := range []string{gh, aws, "ghp_abcdefghijklmn", "opqrstuvwxyzABCDEF9876", "IOSFODN"} {
			if bytes.Contains(got, []byte(s)) {
				t.Errorf("tty %v: %s stored in clear: %q", tty, s, got)
			}
		}
	}
}
