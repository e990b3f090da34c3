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
// client's API runs) are one check: the same environment is refused with
// the same message, naming the variable (or its position when it has no
// name) and never its value. A shape fault is a usage error.
func TestCommandEnv_RefusesAsTheServer(t *testing.T) {
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
		if cliErr.Error() != "exec: "+srvErr.Error() {
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
