package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestReadCommandsRefuseEmptyDataDir runs every command that only reads
// the data dir on a data dir that does not exist: each refuses with "no
// Logbook data", exits 1, and creates nothing there.
func TestReadCommandsRefuseEmptyDataDir(t *testing.T) {
	root := newRoot(&globals{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	var reads []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if readsOnly(c) {
			reads = append(reads, c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	marked := map[string]bool{}
	for _, p := range reads {
		marked[p] = true
	}
	// The commands that only read: each must be marked.
	for _, p := range []string{
		"logbook sessions", "logbook session show", "logbook audit", "logbook replay",
		"logbook events tail", "logbook commands", "logbook command output", "logbook usage",
		"logbook review list", "logbook task list", "logbook task show", "logbook project list",
		"logbook workspace list", "logbook workspace show",
	} {
		if !marked[p] {
			t.Errorf("%s is not marked as a read command", p)
		}
	}
	for _, p := range reads {
		args := strings.Fields(p)[1:]
		dir := filepath.Join(t.TempDir(), "none")
		var err error
		for _, extra := range [][]string{nil, {"x"}} {
			a := append(append(append([]string{}, args...), extra...), "--data", dir)
			err = runCLI(context.Background(), a, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{})
			if exitCode(err) != codeUsage {
				break
			}
		}
		if exitCode(err) != codeError || !strings.Contains(userMessage(err), "no Logbook data") {
			t.Errorf("%s on a data dir with nothing: %v (exit %d), want no Logbook data (exit 1)", p, err, exitCode(err))
		}
		if _, serr := os.Stat(dir); serr == nil {
			t.Errorf("%s created %s", p, dir)
		}
	}
}
