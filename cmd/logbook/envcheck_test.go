package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/worker"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// TestCommandEnv_RefusesAsTheServer: exec's check of --env and the one
// every request goes through (worker.CheckRequest, what the worker
// client's API runs) refuse the same environment, naming the variable
// (or its position when it has no name) and never its value; a secret
// with the same message. A shape fault is a usage error, and exec names
// the --env flag it came from by its place among them (the server, by
// its index in the whole environment).
func TestCommandEnv_RefusesAsTheServer(t *testing.T) {
	// The third of three --env flags, after an inherited environment:
	// named by its place among the flags.
	if _, err := commandEnv(execFlags{callerEnv: []string{"A=1", "B=2"}, env: []string{"X=1", "Y=2", "=x"}}); err == nil || err.Error() != "exec: --env number 3 of 3: want KEY=VALUE: its KEY is empty" {
		t.Errorf("a third --env with an empty KEY: %v", err)
	}
	for _, tc := range []struct {
		kv    string
		says  string
		value string // what the message must not hold
		usage bool
	}{
		{"BAD", `environment variable BAD: want KEY=VALUE (no "=")`, "", true},
		{"=hunter2hunter2", `env[0]: want KEY=VALUE (empty KEY)`, "hunter2hunter2", true},
		{"MYSQL_PWD=C0rrectH0rse", "environment variable MYSQL_PWD looks like a secret", "C0rrectH0rse", false},
		{"API_TOKEN=s3cr3tvalue99", "environment variable API_TOKEN looks like a secret", "s3cr3tvalue99", false},
		{"GH=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "environment variable GH looks like a secret", "ghp_a1B2", false},
		{"my-var=ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "environment variable my-var looks like a secret", "ghp_a1B2", false},
		{"ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "env[0] looks like a secret", "ghp_a1B2", false},
	} {
		_, cliErr := commandEnv(execFlags{noEnv: true, env: []string{tc.kv}})
		req := command.Request{Session: "s", Argv: []string{"true"}, Workspace: "/tmp", Mode: events.ModeWorkspaceWrite, Env: []string{tc.kv}, RequestedBy: "person:p"}
		srvErr := worker.CheckRequest(req, nil)
		if cliErr == nil || srvErr == nil {
			t.Errorf("--env %q: exec %v, server %v: want both to refuse it", tc.kv, cliErr, srvErr)
			continue
		}
		if tc.usage {
			if want := "exec: --env number 1 of 1: want KEY=VALUE: "; !strings.HasPrefix(cliErr.Error(), want) || strings.Contains(cliErr.Error(), tc.kv) {
				t.Errorf("--env %q: exec says %q, want %q and why, never the value", tc.kv, cliErr, want)
			}
		} else if cliErr.Error() != "exec: "+srvErr.Error() {
			t.Errorf("--env %q: exec says %q, the server %q: want the same", tc.kv, cliErr, srvErr)
		}
		if !strings.Contains(srvErr.Error(), tc.says) || !errors.Is(srvErr, events.ErrRejected) {
			t.Errorf("--env %q: %v, want a rejection saying %q", tc.kv, srvErr, tc.says)
		}
		if tc.value != "" && strings.Contains(srvErr.Error(), tc.value) {
			t.Errorf("--env %q: the refusal shows the value: %v", tc.kv, srvErr)
		}
		if got := exitCode(cliErr) == codeUsage; got != tc.usage {
			t.Errorf("--env %q: usage error %v, want %v", tc.kv, got, tc.usage)
		}
	}
}
