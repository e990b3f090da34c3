package main

import (
	"testing"

	"github.com/logbook-dev/logbook/reducers/command"
)

// TestExec_ExitCodes holds exec's exit codes to the README's list: the
// command's own status (128 + signal), 127 not found or not executable,
// 126 any other refusal and a command bubblewrap never ran, 1 abandoned
// or evicted.
func TestExec_ExitCodes(t *testing.T) {
	code := func(n int) *int { return &n }
	for _, tt := range []struct {
		name string
		st   command.State
		want int
	}{
		{"ok", command.State{Status: command.StatusExited, ExitCode: code(0)}, 0},
		{"exit 3", command.State{Status: command.StatusExited, ExitCode: code(3)}, 3},
		{"killed", command.State{Status: command.StatusExited, Signal: "SIGKILL"}, 128 + 9},
		{"not found", command.State{Status: command.StatusRefused, EndReason: `not found: start "nope": command not found: nope is not in PATH "/usr/bin"`}, 127},
		{"not executable", command.State{Status: command.StatusRefused, EndReason: `not found: start "./x.sh": command not found: no executable file /w/x.sh`}, 127},
		{"mode", command.State{Status: command.StatusRefused, EndReason: "refused: mode full_access is wider than session s's permission mode workspace_write (revision 1)"}, 126},
		{"workspace", command.State{Status: command.StatusRefused, EndReason: "refused: workspace / is a system directory"}, 126},
		{"no boundary", command.State{Status: command.StatusRefused, EndReason: "no boundary: bubblewrap not found in PATH"}, 126},
		{"cannot start", command.State{Status: command.StatusRefused, EndReason: "cannot start: fork: resource temporarily unavailable"}, 126},
		{"not run", command.State{Status: command.StatusExited, ExitCode: code(1), NotRun: "bubblewrap exited with status 1 before running it"}, 126},
		{"abandoned", command.State{Status: command.StatusAbandoned, EndReason: "worker_gone"}, 1},
		{"evicted", command.State{Status: command.StatusEvicted, EvictedBy: "w2"}, 1},
	} {
		if got := exitCode(exitOf(tt.st)); got != tt.want {
			t.Errorf("%s: exec exits %d, want %d", tt.name, got, tt.want)
		}
	}
}
