package command_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
	"github.com/logbook-dev/logbook/reducers/reducertest"
)

const id = "01JDQ7Z8V6T8Q2W3E4R5T6Y7C1"

var (
	agg   = events.Aggregate{Kind: events.KindCommand, ID: id}
	t0    = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	t1    = t0.Add(time.Minute)
	cause = events.Cause{Kind: "worker", Event: "report", Ref: "01JDQ7Z8V6T8Q2W3E4R5T6Y7R1"}
	hash  = strings.Repeat("ab", 32)
)

// Facts and requests shared by the tests.
var (
	requested = events.CommandRequested{
		Session: "s1", Argv: []string{"go", "test", "./..."}, Workspace: "/home/user/project",
		Mode: events.ModeWorkspaceWrite, Env: []string{"PATH=/usr/bin:/bin", "GOFLAGS=-mod=mod"},
		WaitMS: 30000, RequestedBy: "claude-code",
	}
	request = command.Request{
		Session: "s1", Argv: []string{"go", "test", "./..."}, Workspace: "/home/user/project",
		Mode: events.ModeWorkspaceWrite, Env: []string{"PATH=/usr/bin:/bin", "GOFLAGS=-mod=mod"},
		WaitMS: 30000, RequestedBy: "claude-code", At: t1,
		Cause: events.Cause{Kind: "hook", Event: "PreToolUse", Detail: "Bash", Ref: "01JDQ7Z8V6T8Q2W3E4R5T6Y7R0"},
	}
	started = events.CommandStarted{Worker: "w1", Host: "build-3"}
	running = events.CommandRunning{Pid: 4242, ProcStart: 987654, Boot: "b00t", Cgroup: "/sys/fs/cgroup/lb/" + id}
	// oldStart is command.started as written before command.running
	// existed: the process first, its pid in the start.
	oldStart = events.CommandStarted{Worker: "w1", Host: "build-3", Pid: 4242}
	exited   = events.CommandExited{Code: 0, DurationMS: 1500, OutputBytes: 2048}
	stopped  = events.CommandStopRequested{By: "alice", Reason: "user"}
	evicted  = events.CommandEvicted{By: "01JDQ7Z8V6T8Q2W3E4R5T6Y7C9"}
	refused  = events.CommandRefused{Reason: "bubblewrap is missing"}
	abandon  = events.CommandAbandoned{Reason: "worker_lost", Worker: "w1"}
	bground  = events.CommandBackgrounded{AfterMS: 30000}
)

// with returns a copy of r changed by f.
func with(r command.Request, f func(*command.Request)) command.Request {
	r.Argv = append([]string(nil), r.Argv...)
	f(&r)
	return r
}

// fold stamps ps as the log would (ids, dense Ver from s.Ver+1, one
// second apart from t0, a complete cause) and folds them into s.
func fold(s command.State, ps ...events.Payload) command.State {
	reg := events.NewRegistry()
	for _, p := range ps {
		e := reg.New(p)
		e.Ver = s.Ver + 1
		e.ID = ulid.ULID{15: byte(e.Ver)}
		e.Agg, e.At = agg, t0.Add(time.Duration(e.Ver)*time.Second)
		c := cause
		e.Cause = &c
		s = command.Evolve(s, e)
	}
	return s
}

func payloads(evs []events.Envelope) []events.Payload {
	var out []events.Payload
	for _, e := range evs {
		out = append(out, e.Data)
	}
	return out
}

// checkEnvelopes verifies that decided events are valid once the caller
// stamps them: registered type and version, the command's aggregate, the
// command's time and cause.
func checkEnvelopes(t *testing.T, s command.State, evs []events.Envelope) {
	t.Helper()
	reg := events.NewRegistry()
	for i, e := range evs {
		if e.Agg != agg || !e.At.Equal(t1) {
			t.Errorf("event %d %s: agg %v at %v, want %v at %v", i, e.Type, e.Agg, e.At, agg, t1)
		}
		e.ID = ulid.ULID{15: byte(i + 1)}
		e.Ver = s.Ver + uint64(i) + 1
		if err := reg.Validate(e); err != nil {
			t.Errorf("event %d: %v", i, err)
		}
	}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		given   []events.Payload
		when    command.Command
		then    []events.Payload
		wantErr error
		says    string // the error names this
	}{
		// Request.
		{name: "request opens the command", when: request, then: []events.Payload{requested}},
		{name: "request retried decides nothing", given: []events.Payload{requested}, when: request},
		{name: "request retried after the start decides nothing", given: []events.Payload{requested, started}, when: request},
		{name: "request of an existing id with another spec", given: []events.Payload{requested},
			when:    with(request, func(r *command.Request) { r.Argv[0] = "rm" }),
			wantErr: events.ErrRejected, says: "command " + id + " already exists with another spec (status requested)"},
		{name: "request with empty argv", when: with(request, func(r *command.Request) { r.Argv = nil }),
			wantErr: events.ErrRejected, says: "empty argv"},
		{name: "request with empty argv[0]", when: with(request, func(r *command.Request) { r.Argv = []string{""} }),
			wantErr: events.ErrRejected, says: "empty argv"},
		{name: "request in session mode auto", when: with(request, func(r *command.Request) { r.Mode = events.ModeAuto }),
			wantErr: events.ErrRejected, says: `mode "auto"`},
		{name: "request with a relative workspace", when: with(request, func(r *command.Request) { r.Workspace = "project" }),
			wantErr: events.ErrRejected, says: "not an absolute path"},
		{name: "request with a bad env entry", when: with(request, func(r *command.Request) { r.Env = []string{"A=1", "=x"} }),
			wantErr: events.ErrRejected, says: `env[1]: want KEY=VALUE (empty KEY)`},
		{name: "request with an env entry without =", when: with(request, func(r *command.Request) { r.Env = []string{"BAD"} }),
			wantErr: events.ErrRejected, says: `environment variable BAD: want KEY=VALUE (no "=")`},
		{name: "request with a negative wait", when: with(request, func(r *command.Request) { r.WaitMS = -1 }),
			wantErr: events.ErrRejected, says: "negative wait"},
		{name: "request with no requester", when: with(request, func(r *command.Request) { r.RequestedBy = "" }),
			wantErr: events.ErrRejected, says: "no requester"},
		{name: "request with a bad session id", when: with(request, func(r *command.Request) { r.Session = "a.b" }),
			wantErr: events.ErrRejected, says: "session"},

		// Start.
		{name: "start a requested command", given: []events.Payload{requested},
			when: command.Start{Worker: "w1", Host: "build-3", At: t1, Cause: cause},
			then: []events.Payload{started}},
		{name: "second start", given: []events.Payload{requested, started},
			when:    command.Start{Worker: "w2", Host: "build-4", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "command " + id + " was already started by worker w1 on build-3 (status started)"},
		{name: "start an unknown command", when: command.Start{Worker: "w1", Host: "h", At: t1, Cause: cause},
			wantErr: events.ErrNotFound, says: "command " + id + " was never requested (status none)"},
		{name: "start an evicted command", given: []events.Payload{requested, evicted},
			when:    command.Start{Worker: "w1", Host: "h", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "was evicted by " + evicted.By + " (status evicted)"},
		{name: "start a refused command", given: []events.Payload{requested, refused},
			when:    command.Start{Worker: "w1", Host: "h", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "was refused (status refused)"},
		{name: "start without a host", given: []events.Payload{requested},
			when:    command.Start{Worker: "w1", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: `host ""`},

		// Run: the process, after the start landed.
		{name: "run a started command", given: []events.Payload{requested, started},
			when: command.Run{Worker: "w1", Pid: 4242, ProcStart: 987654, Boot: "b00t", Cgroup: "/sys/fs/cgroup/lb/" + id, At: t1, Cause: cause},
			then: []events.Payload{running}},
		{name: "run by another worker", given: []events.Payload{requested, started},
			when:    command.Run{Worker: "w2", Pid: 7, At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "was started by worker w1, not w2"},
		{name: "run twice", given: []events.Payload{requested, started, running},
			when:    command.Run{Worker: "w1", Pid: 7, At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "already runs as pid 4242"},
		{name: "run a command started the old way", given: []events.Payload{requested, oldStart},
			when:    command.Run{Worker: "w1", Pid: 7, At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "already runs as pid 4242"},
		{name: "run before the start", given: []events.Payload{requested},
			when:    command.Run{Worker: "w1", Pid: 7, At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "has not started"},
		{name: "run without a pid", given: []events.Payload{requested, started},
			when:    command.Run{Worker: "w1", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "pid 0"},
		{name: "run after a stop", given: []events.Payload{requested, started, stopped},
			when: command.Run{Worker: "w1", Pid: 4242, ProcStart: 987654, Boot: "b00t", Cgroup: "/sys/fs/cgroup/lb/" + id, At: t1, Cause: cause},
			then: []events.Payload{running}},
		{name: "the starting worker refuses a process it could not start", given: []events.Payload{requested, started},
			when: command.Refuse{Reason: "bubblewrap is missing", Worker: "w1", At: t1, Cause: cause},
			then: []events.Payload{refused}},
		{name: "another worker refuses a started command", given: []events.Payload{requested, started},
			when:    command.Refuse{Reason: "bubblewrap is missing", Worker: "w2", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "has started"},
		{name: "refuse a running command", given: []events.Payload{requested, started, running},
			when:    command.Refuse{Reason: "bubblewrap is missing", Worker: "w1", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "has started"},

		// Background.
		{name: "background a running command", given: []events.Payload{requested, started},
			when: command.Background{AfterMS: 30000, At: t1}, then: []events.Payload{bground}},
		{name: "background a queued command", given: []events.Payload{requested},
			when: command.Background{AfterMS: 30000, At: t1}, then: []events.Payload{bground}},
		{name: "background twice", given: []events.Payload{requested, started, bground},
			when: command.Background{AfterMS: 1, At: t1}, wantErr: events.ErrRejected, says: "is already in the background"},
		{name: "background after the exit", given: []events.Payload{requested, started, exited},
			when: command.Background{AfterMS: 1, At: t1}, wantErr: events.ErrRejected, says: "has exited (status exited)"},

		// Stdin.
		{name: "stdin while started", given: []events.Payload{requested, started},
			when: command.WriteStdin{Bytes: 6, SHA256: hash, At: t1},
			then: []events.Payload{events.CommandStdinWritten{Bytes: 6, SHA256: hash}}},
		{name: "stdin with the hash withheld", given: []events.Payload{requested, started},
			when: command.WriteStdin{Bytes: 6, At: t1},
			then: []events.Payload{events.CommandStdinWritten{Bytes: 6}}},
		{name: "stdin before the start", given: []events.Payload{requested},
			when: command.WriteStdin{Bytes: 6, At: t1}, wantErr: events.ErrRejected, says: "has not started (status requested)"},
		{name: "stdin after the exit", given: []events.Payload{requested, started, exited},
			when: command.WriteStdin{Bytes: 6, At: t1}, wantErr: events.ErrRejected, says: "command " + id + " has exited"},
		{name: "stdin with a bad hash", given: []events.Payload{requested, started},
			when: command.WriteStdin{Bytes: 6, SHA256: "ABC", At: t1}, wantErr: events.ErrRejected, says: "sha256"},
		{name: "stdin of nothing", given: []events.Payload{requested, started},
			when: command.WriteStdin{At: t1}, wantErr: events.ErrRejected, says: "0 bytes"},

		// Stop.
		{name: "stop a running command", given: []events.Payload{requested, started},
			when: command.Stop{By: "alice", Reason: "user", At: t1, Cause: cause}, then: []events.Payload{stopped}},
		{name: "stop a queued command refuses it", given: []events.Payload{requested},
			when: command.Stop{By: "alice", Reason: "user", At: t1, Cause: cause},
			then: []events.Payload{stopped, events.CommandRefused{Reason: "stopped by alice before it started"}}},
		{name: "stop twice", given: []events.Payload{requested, started, stopped},
			when:    command.Stop{By: "bob", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "already has a stop requested by alice (status started)"},
		{name: "stop an exited command", given: []events.Payload{requested, started, exited},
			when: command.Stop{By: "alice", At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "has exited (status exited)"},
		{name: "stop an abandoned command", given: []events.Payload{requested, started, abandon},
			when: command.Stop{By: "alice", At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "was abandoned"},
		{name: "stop an unknown command", when: command.Stop{By: "alice", At: t1, Cause: cause},
			wantErr: events.ErrNotFound, says: "stop: events: not found: command " + id + " was never requested (status none)"},
		{name: "stop without a requester", given: []events.Payload{requested, started},
			when: command.Stop{At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "no requester"},

		// Exit.
		{name: "exit after the start", given: []events.Payload{requested, started},
			when: command.Exit{Code: 0, DurationMS: 1500, OutputBytes: 2048, At: t1, Cause: cause}, then: []events.Payload{exited}},
		{name: "exit after a stop", given: []events.Payload{requested, started, stopped},
			when: command.Exit{Code: -1, Signal: "SIGTERM", Stopped: true, DurationMS: 9, At: t1, Cause: cause},
			then: []events.Payload{events.CommandExited{Code: -1, Signal: "SIGTERM", Stopped: true, DurationMS: 9}}},
		{name: "exit of a command that never ran", given: []events.Payload{requested, started},
			when: command.Exit{Code: 1, DurationMS: 12, NotRun: "bubblewrap exited with status 1 before running it", At: t1, Cause: cause},
			then: []events.Payload{events.CommandExited{Code: 1, DurationMS: 12, NotRun: "bubblewrap exited with status 1 before running it"}}},
		{name: "exit before the start", given: []events.Payload{requested},
			when: command.Exit{At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "has not started (status requested)"},
		{name: "exit twice", given: []events.Payload{requested, started, exited},
			when: command.Exit{At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "has exited (status exited)"},
		{name: "exit after abandonment", given: []events.Payload{requested, started, abandon},
			when: command.Exit{At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "was abandoned (status abandoned)"},
		{name: "exit with a negative duration", given: []events.Payload{requested, started},
			when: command.Exit{DurationMS: -1, At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "negative duration"},

		// Abandon.
		{name: "abandon a started command", given: []events.Payload{requested, started},
			when: command.Abandon{Reason: "worker_lost", At: t1, Cause: cause}, then: []events.Payload{abandon}},
		{name: "abandon names another worker", given: []events.Payload{requested, started},
			when:    command.Abandon{Reason: "worker_lost", Worker: "w9", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "was started by worker w1, not w9"},
		{name: "abandon an exited command", given: []events.Payload{requested, started, exited},
			when: command.Abandon{Reason: "worker_lost", At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "has exited"},
		{name: "abandon a queued command", given: []events.Payload{requested},
			when: command.Abandon{Reason: "worker_lost", At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "has not started"},
		{name: "abandon without a reason", given: []events.Payload{requested, started},
			when: command.Abandon{At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "no reason"},
		{name: "abandon with the output stored", given: []events.Payload{requested, started},
			when: command.Abandon{Reason: "worker_lost", OutputBytes: 4096, At: t1, Cause: cause},
			then: []events.Payload{events.CommandAbandoned{Reason: "worker_lost", Worker: "w1", OutputBytes: 4096}}},
		{name: "abandon with negative output", given: []events.Payload{requested, started},
			when: command.Abandon{Reason: "worker_lost", OutputBytes: -1, At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "negative output"},

		// Refuse.
		{name: "refuse a requested command", given: []events.Payload{requested},
			when: command.Refuse{Reason: "bubblewrap is missing", At: t1, Cause: cause}, then: []events.Payload{refused}},
		{name: "refuse a started command", given: []events.Payload{requested, started},
			when: command.Refuse{Reason: "late", At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "has started (status started)"},
		{name: "refuse twice", given: []events.Payload{requested, refused},
			when: command.Refuse{Reason: "again", At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "was refused"},

		// Evict.
		{name: "evict a queued command", given: []events.Payload{requested},
			when: command.Evict{By: evicted.By, At: t1, Cause: cause}, then: []events.Payload{evicted}},
		{name: "evict a running command also stops it", given: []events.Payload{requested, started},
			when: command.Evict{By: evicted.By, At: t1, Cause: cause},
			then: []events.Payload{evicted, events.CommandStopRequested{By: evicted.By, Reason: "evicted"}}},
		{name: "evict a command already stopping", given: []events.Payload{requested, started, stopped},
			when: command.Evict{By: evicted.By, At: t1, Cause: cause}, then: []events.Payload{evicted}},
		{name: "evict twice", given: []events.Payload{requested, started, evicted},
			when:    command.Evict{By: "01JDQ7Z8V6T8Q2W3E4R5T6Y7CA", At: t1, Cause: cause},
			wantErr: events.ErrRejected, says: "was already evicted by " + evicted.By + " (status started, evicted)"},
		{name: "evict an exited command", given: []events.Payload{requested, started, exited},
			when: command.Evict{By: evicted.By, At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "has exited"},
		{name: "evict by itself", given: []events.Payload{requested},
			when: command.Evict{By: id, At: t1, Cause: cause}, wantErr: events.ErrRejected, says: "another command's id"},

		{name: "unknown command", given: []events.Payload{requested}, when: nil, wantErr: events.ErrRejected, says: "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fold(command.Init(agg), tt.given...)
			got, err := command.Decide(s, tt.when)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.says) {
					t.Errorf("err %q does not say %q", err, tt.says)
				}
				if got != nil {
					t.Errorf("events with an error: %v", payloads(got))
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if diff := cmp.Diff(tt.then, payloads(got)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			checkEnvelopes(t, s, got)
		})
	}
}

func TestDecide_CauseIsOptionalWhereTheRegistryAllows(t *testing.T) {
	got, err := command.Decide(fold(command.Init(agg), requested, started), command.Background{AfterMS: 5, At: t1})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].Cause != nil {
		t.Errorf("cause = %+v, want none for a command without one", got[0].Cause)
	}
}

func TestEvolve_Lifecycle(t *testing.T) {
	s := fold(command.Init(agg), requested, started, running, bground,
		events.CommandStdinWritten{Bytes: 6, SHA256: hash}, events.CommandStdinWritten{Bytes: 4},
		stopped, events.CommandExited{Code: -1, Signal: "SIGTERM", Stopped: true, DurationMS: 2100, OutputBytes: 512, Lingering: true})
	code := -1
	want := command.State{
		ID: id, Ver: 8, Session: "s1", Status: command.StatusExited,
		Argv: []string{"go", "test", "./..."}, Workspace: "/home/user/project", Mode: events.ModeWorkspaceWrite,
		Env: []string{"PATH=/usr/bin:/bin", "GOFLAGS=-mod=mod"}, WaitMS: 30000, RequestedBy: "claude-code",
		Worker: "w1", Host: "build-3", Pid: 4242, ProcStart: 987654, Boot: "b00t", Cgroup: "/sys/fs/cgroup/lb/" + id,
		Background: true, StdinBytes: 10, StopRequested: true, StopBy: "alice", StopReason: "user",
		ExitCode: &code, Signal: "SIGTERM", Stopped: true, DurationMS: 2100, OutputBytes: 512, Lingering: true,
		RequestedAt: t0.Add(1 * time.Second), StartedAt: t0.Add(2 * time.Second), EndedAt: t0.Add(8 * time.Second),
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	// A log written before command.running: the pid came with the start.
	old := fold(command.Init(agg), requested, oldStart)
	if old.Status != command.StatusStarted || old.Pid != 4242 || old.Worker != "w1" {
		t.Errorf("old start: status %s pid %d worker %s; want started, 4242, w1", old.Status, old.Pid, old.Worker)
	}
	if s.Active() || !s.Ended() {
		t.Errorf("active=%v ended=%v, want false, true", s.Active(), s.Ended())
	}
}

func TestEvolve_Ends(t *testing.T) {
	tests := []struct {
		name   string
		given  []events.Payload
		status string
		active bool
		reason string
	}{
		{"requested", []events.Payload{requested}, command.StatusRequested, true, ""},
		{"started", []events.Payload{requested, started}, command.StatusStarted, true, ""},
		{"refused", []events.Payload{requested, refused}, command.StatusRefused, false, "bubblewrap is missing"},
		{"abandoned", []events.Payload{requested, started, abandon}, command.StatusAbandoned, false, "worker_lost"},
		{"evicted before the start", []events.Payload{requested, evicted}, command.StatusEvicted, false, ""},
		{"evicted while running", []events.Payload{requested, started, evicted}, command.StatusStarted, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fold(command.Init(agg), tt.given...)
			if s.Status != tt.status || s.Active() != tt.active || s.EndReason != tt.reason {
				t.Errorf("status %q active %v reason %q, want %q %v %q", s.Status, s.Active(), s.EndReason, tt.status, tt.active, tt.reason)
			}
			if s.Ended() != !s.EndedAt.IsZero() {
				t.Errorf("ended %v but ended_at %v", s.Ended(), s.EndedAt)
			}
		})
	}
}

// An exit that says the command never ran is kept in the state, and an
// exit that ran says nothing of it.
func TestEvolve_NotRun(t *testing.T) {
	const why = "bubblewrap exited with status 1 before running it"
	s := fold(command.Init(agg), requested, started, events.CommandExited{Code: 1, NotRun: why})
	if s.Status != command.StatusExited || s.NotRun != why || s.ExitCode == nil || *s.ExitCode != 1 {
		t.Errorf("status %q not_run %q exit %v", s.Status, s.NotRun, s.ExitCode)
	}
	if s := fold(command.Init(agg), requested, started, exited); s.NotRun != "" {
		t.Errorf("a command that ran: not_run %q", s.NotRun)
	}
}

func TestEvolve_NeverFails(t *testing.T) {
	s := fold(command.Init(agg), requested)
	// Another aggregate kind leaves s as it is.
	other := s
	other = command.Evolve(other, events.Envelope{Agg: events.Aggregate{Kind: events.KindSession, ID: "s1"}, Ver: 9, Data: events.SessionEnded{}})
	if diff := cmp.Diff(s, other); diff != "" {
		t.Errorf("session event changed the command (-want +got):\n%s", diff)
	}
	// A type the command does not know moves only Ver.
	got := command.Evolve(s, events.Envelope{Agg: agg, Ver: 2, Data: events.SessionEnded{}})
	want := s
	want.Ver = 2
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unknown type (-want +got):\n%s", diff)
	}
}

func TestEvolve_StatesAreIndependent(t *testing.T) {
	p := requested
	p.Argv = []string{"ls"}
	s := fold(command.Init(agg), p)
	p.Argv[0] = "rm"
	if s.Argv[0] != "ls" {
		t.Errorf("state shares the event's argv: %q", s.Argv)
	}
	s = fold(s, started)
	a := fold(s, events.CommandExited{Code: 1})
	b := fold(s, events.CommandExited{Code: 2})
	if *a.ExitCode != 1 || *b.ExitCode != 2 {
		t.Errorf("exit codes %d, %d; want 1, 2", *a.ExitCode, *b.ExitCode)
	}
}

func ExampleDecide() {
	s := command.Init(events.Aggregate{Kind: events.KindCommand, ID: "01JDQ7Z8V6T8Q2W3E4R5T6Y7C1"})
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	worker := events.Cause{Kind: "worker", Event: "started", Ref: "01JDQ7Z8V6T8Q2W3E4R5T6Y7R1"}
	steps := []command.Command{
		command.Request{Session: "s1", Argv: []string{"make", "test"}, Workspace: "/src/app", Mode: events.ModeReadOnly, RequestedBy: "claude-code", At: at},
		command.Start{Worker: "w1", Host: "build-3", At: at, Cause: worker},
		command.Start{Worker: "w2", Host: "build-4", At: at, Cause: worker},
		command.Run{Worker: "w1", Pid: 4242, At: at, Cause: worker},
	}
	for _, cmd := range steps {
		evs, err := command.Decide(s, cmd)
		if err != nil {
			fmt.Println("rejected:", errors.Is(err, events.ErrRejected), err)
			continue
		}
		for _, e := range evs {
			e.Ver = s.Ver + 1
			s = command.Evolve(s, e)
			fmt.Println(e.Type, "->", s.Status)
		}
	}
	// Output:
	// command.requested -> requested
	// command.started -> started
	// rejected: true start: events: command rejected: command 01JDQ7Z8V6T8Q2W3E4R5T6Y7C1 was already started by worker w1 on build-3 (status started)
	// command.running -> started
}

// TestState_JSON pins the command projection's row format: the JSON of a
// queued command, and a lossless round trip of a finished one.
func TestState_JSON(t *testing.T) {
	queued := fold(command.Init(agg), requested)
	got, err := json.Marshal(queued)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"` + id + `","ver":1,"session":"s1","status":"requested",` +
		`"argv":["go","test","./..."],"workspace":"/home/user/project","mode":"workspace_write","tty":false,` +
		`"env":["PATH=/usr/bin:/bin","GOFLAGS=-mod=mod"],"wait_ms":30000,"requested_by":"claude-code",` +
		`"background":false,"stdin_bytes":0,"stop_requested":false,"evicted":false,"stopped":false,"output_bytes":0,` +
		`"requested_at":"2026-11-30T10:00:01Z"}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("row (-want +got):\n%s", diff)
	}
	done := fold(queued, started, running, stopped, events.CommandExited{Code: 0, DurationMS: 5, Lingering: true})
	back := reducertest.RoundTrip(t, done)
	if diff := cmp.Diff(done, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestStopForSessionEnd(t *testing.T) {
	end := events.Envelope{
		ID: ulid.MustParse("01JDQ7Z8V6T8Q2W3E4R5T6Y7E1"), Type: "session.ended", V: 1,
		Agg: events.Aggregate{Kind: events.KindSession, ID: "s1"}, At: t1,
		Data: events.SessionEnded{From: events.PhaseWorking, Reason: "agent_gone"},
	}
	other := end
	other.Agg.ID = "s2"
	turn := end
	turn.Type, turn.Data = "session.turn_ended", events.SessionTurnEnded{Turn: 1, Outcome: "interrupted"}
	tests := []struct {
		name  string
		given []events.Payload
		end   events.Envelope
		then  []events.Payload // nil: no stop due
	}{
		{"a running command", []events.Payload{requested, started, running}, end,
			[]events.Payload{events.CommandStopRequested{By: "session s1", Reason: command.StopReasonSessionEnded}}},
		{"a started command without its process yet", []events.Payload{requested, started}, end,
			[]events.Payload{events.CommandStopRequested{By: "session s1", Reason: command.StopReasonSessionEnded}}},
		{"a queued command never starts", []events.Payload{requested}, end,
			[]events.Payload{events.CommandStopRequested{By: "session s1", Reason: command.StopReasonSessionEnded}, events.CommandRefused{Reason: "stopped by session s1 before it started"}}},
		{"another session's end", []events.Payload{requested, started, running}, other, nil},
		{"a cancelled turn", []events.Payload{requested, started, running}, turn, nil},
		{"an exited command", []events.Payload{requested, started, running, exited}, end, nil},
		{"a stop already recorded", []events.Payload{requested, started, running, stopped}, end, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := fold(command.Init(agg), tt.given...)
			stop, due := command.StopForSessionEnd(s, tt.end)
			if due != (tt.then != nil) {
				t.Fatalf("due = %v, want %v", due, tt.then != nil)
			}
			if !due {
				return
			}
			want := events.Cause{Kind: "session", Event: "session.ended", Detail: "agent_gone", Ref: end.ID.String()}
			if stop.Cause != want || !stop.At.Equal(t1) {
				t.Errorf("cause %+v at %v; want %+v at the end's time", stop.Cause, stop.At, want)
			}
			got, err := command.Decide(s, stop)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.then, payloads(got)); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			checkEnvelopes(t, s, got)
		})
	}
}
