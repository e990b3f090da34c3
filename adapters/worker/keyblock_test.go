package worker

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/sandbox"
)

// TestWorker_KeyBlockSlowLines: a command under the real sandbox prints
// private key blocks line by line with pauses longer than the idle
// flush between the lines, on pipes and on a PTY (CRLF line ends there):
// the lb.out messages read straight from the log hold none of a block's
// inside or its END line, one [REDACTED:private_key] per block, and the
// text around the blocks. A block whose END never comes hides the rest
// of the output, also after the command exits.
func TestWorker_KeyBlockSlowLines(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())

	pause := fmt.Sprintf("sleep %.2f", 2*outIdle.Seconds())
	// Markers are made by the script, so no argv element holds one.
	block := func(kind, end string) string {
		return `echo "-----BEGIN ` + kind + ` PRI""VATE KEY` + end + `-----"; ` + pause + `; echo MIIEowIBAAKCsecretbody; printf 'MIIEsecret'; ` +
			pause + `; echo body2; echo "-----END ` + kind + ` PRI""VATE KEY` + end + `-----"; `
	}
	ended := `echo before; ` + block("RSA", "") + `echo between; ` + block("OPENSSH", "") + block("PGP", " BLOCK") + `printf 'x -----BEGIN EC PRI'; ` + pause +
		`; echo "VATE KEY-----"; echo ecsecretbody; echo "-----END EC PRI""VATE KEY-----"; echo after`
	open := `echo before; echo "-----BEGIN ENCRYPTED PRI""VATE KEY-----"; ` + pause + `; echo MIIEsecretbody; ` + pause + `; printf 'tail secret'`
	for _, tc := range []struct {
		name, script string
		want         int // [REDACTED:private_key] count
		after        bool
	}{{"ended", ended, 4, true}, {"open", open, 1, false}} {
		for _, tty := range []bool{false, true} {
			req := e.request(events.ModeReadOnly, "sh", "-c", tc.script)
			req.TTY = tty
			id := e.submit(req)
			st, _ := e.follow(id, 30*time.Second)
			if st.Status != command.StatusExited || *st.ExitCode != 0 {
				t.Fatalf("%s tty %v: status %s reason %q", tc.name, tty, st.Status, st.EndReason)
			}
			got := e.storedOutput(t.Context(), id)
			for _, s := range []string{"secret", "body2", "-----END", "VATE KEY"} {
				if bytes.Contains(got, []byte(s)) {
					t.Errorf("%s tty %v: %q stored in clear: %q", tc.name, tty, s, got)
				}
			}
			if n := bytes.Count(got, []byte("[REDACTED:private_key]")); n != tc.want {
				t.Errorf("%s tty %v: %d blocks redacted in %q, want %d", tc.name, tty, n, got, tc.want)
			}
			text := strings.ReplaceAll(string(got), "\r\n", "\n")
			if !strings.HasPrefix(text, "before\n[REDACTED:private_key]") || tc.after && !strings.HasSuffix(text, "x [REDACTED:private_key]\nafter\n") {
				t.Errorf("%s tty %v: the text around the blocks is not kept: %q", tc.name, tty, got)
			}
		}
	}
}

// TestOutRedactor_KeyBlockIdle: the worker's idle flush, however often it
// fires, never lets the inside of an open key block go; close drops it.
func TestOutRedactor_KeyBlockIdle(t *testing.T) {
	t.Parallel()
	var got bytes.Buffer
	o := newOutRedactor(redact.Default(), func(c sandbox.Chunk) { got.Write(c.Data) })
	o.write(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte("-----BEGIN RSA PRIVATE KEY-----\n")})
	o.idle()
	o.write(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte("MIIEsecretbody\n")})
	o.idle()
	o.write(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte("-----END RSA PRIVATE KEY-----\nok\n-----BEGIN EC PRIVATE KEY-----\r\nsecret2")})
	o.idle()
	o.close()
	if want := "[REDACTED:private_key]\nok\n[REDACTED:private_key]"; got.String() != want {
		t.Errorf("stored %q, want %q", got.String(), want)
	}
}
