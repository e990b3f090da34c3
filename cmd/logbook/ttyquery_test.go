package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestCommands_QueryNoTerminal runs logbook commands on a terminal that
// never answers: none may write a query to it (OSC 11, the background
// colour; CSI 6n, the cursor's place), which would wait for an answer
// that never comes. bubbletea v1's package init (tea_init.go, v1.3.10)
// sent both from every process that linked it, before main, and waited
// up to 5 s: `logbook version` took 5 s under `docker run -t` without
// -i, or `script` in CI.
func TestCommands_QueryNoTerminal(t *testing.T) {
	bin := soakBuild(t)
	for _, args := range [][]string{{"version"}, {"--help"}, {"sessions", "--data", t.TempDir()}} {
		t.Run(args[0], func(t *testing.T) {
			c := exec.Command(bin, args...)
			var env []string
			for _, kv := range os.Environ() {
				// termenv asks nothing where CI is set or TERM is a
				// multiplexer's: this terminal is a plain one.
				if !strings.HasPrefix(kv, "CI=") && !strings.HasPrefix(kv, "TERM=") {
					env = append(env, kv)
				}
			}
			c.Env = append(env, "TERM=xterm-256color", "COLORTERM=truecolor")
			// pty.Start makes the terminal the process's controlling
			// one, in the foreground, as a shell would.
			f, err := pty.StartWithSize(c, &pty.Winsize{Rows: 40, Cols: 120})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			done := make(chan []byte)
			go func() {
				b, _ := io.ReadAll(f) // EIO once the process has ended
				done <- b
			}()
			werr := make(chan error, 1)
			go func() { werr <- c.Wait() }()
			select {
			case <-werr:
			case <-time.After(time.Minute):
				c.Process.Kill()
				t.Fatal("did not end in a minute")
			}
			var out []byte
			select {
			case out = <-done:
			case <-time.After(10 * time.Second):
				f.Close()
				out = <-done
			}
			for _, q := range []string{"\x1b]", "\x1b[6n"} {
				if i := bytes.Index(out, []byte(q)); i >= 0 {
					t.Errorf("logbook %s wrote the terminal query %q at byte %d of its output:\n%q", args[0], q, i, out[i:min(len(out), i+40)])
				}
			}
		})
	}
}
