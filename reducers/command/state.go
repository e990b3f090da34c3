package command

import (
	"slices"
	"strings"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Statuses of a command. Requested and started are active (unless
// evicted); the others are terminal.
const (
	StatusRequested = "requested" // waiting for a worker
	StatusStarted   = "started"   // a worker took it: its process runs (Pid > 0) or is about to
	StatusExited    = "exited"    // its process ended and the worker reported it
	StatusAbandoned = "abandoned" // its worker died; the outcome will never be known
	StatusRefused   = "refused"   // it will never run
	StatusEvicted   = "evicted"   // evicted before it started; it will never run
)

// MaxActive is the most active commands one session may have: the request
// that would make it MaxActive+1 evicts the oldest (see DecideRequest).
const MaxActive = 64

// State is everything the command reducer knows of one command. Its JSON
// form is the command projection's row, so field names are a stored
// format: change them with the projection's schema version. Durations are
// in ms, sizes in bytes, times UTC from the envelopes.
type State struct {
	ID      string `json:"id"`      // the command aggregate id
	Ver     uint64 `json:"ver"`     // Ver of the last event folded; 0: never requested
	Session string `json:"session"` // the session aggregate id
	Status  string `json:"status"`  // a Status constant; "" before the request

	// The request, as in events.CommandRequested.
	Argv        []string `json:"argv"`
	Cwd         string   `json:"cwd,omitempty"`
	Workspace   string   `json:"workspace"`
	Mode        string   `json:"mode"`
	TTY         bool     `json:"tty"`
	Env         []string `json:"env,omitempty"` // "KEY=VALUE", redacted by the requester
	WaitMS      int64    `json:"wait_ms,omitempty"`
	RequestedBy string   `json:"requested_by"`
	Elevation   string   `json:"elevation,omitempty"` // the gate review granting full_access

	// The worker that started it, as in events.CommandStarted, and its
	// process, as in events.CommandRunning (Pid 0 until then).
	Worker    string `json:"worker,omitempty"`
	Host      string `json:"host,omitempty"`
	Pid       int    `json:"pid,omitempty"`
	ProcStart uint64 `json:"proc_start,omitempty"`
	Boot      string `json:"boot,omitempty"`
	Cgroup    string `json:"cgroup,omitempty"`

	Background    bool   `json:"background"`            // the requester stopped waiting
	StdinBytes    int64  `json:"stdin_bytes"`           // total bytes written to stdin
	StopRequested bool   `json:"stop_requested"`        // a stop was asked for
	StopBy        string `json:"stop_by,omitempty"`     // who asked for the stop
	StopReason    string `json:"stop_reason,omitempty"` // why
	Evicted       bool   `json:"evicted"`               // a newer request evicted it
	EvictedBy     string `json:"evicted_by,omitempty"`  // the id of that newer command

	// The end, as in events.CommandExited; ExitCode is nil until it exits.
	ExitCode    *int   `json:"exit_code,omitempty"`
	Signal      string `json:"signal,omitempty"`
	Stopped     bool   `json:"stopped"`
	DurationMS  int64  `json:"duration_ms,omitempty"`
	OutputBytes int64  `json:"output_bytes"`
	// OutputDropped and Limits are as in events.CommandExited.
	OutputDropped int64  `json:"output_dropped,omitempty"`
	Limits        string `json:"limits,omitempty"`
	Lingering     bool   `json:"lingering,omitempty"` // descendants outside its group outlived it
	// NotRun says why an exited command never ran (its boundary not
	// built, its exec failed), as in events.CommandExited; "" if it ran.
	NotRun string `json:"not_run,omitempty"`
	// EndReason is the reason of a refusal or an abandonment.
	EndReason string `json:"end_reason,omitempty"`

	RequestedAt time.Time `json:"requested_at,omitzero"`
	StartedAt   time.Time `json:"started_at,omitzero"`
	EndedAt     time.Time `json:"ended_at,omitzero"` // exited, abandoned, refused, or evicted before start
}

// Init returns the state of agg before its first event.
func Init(agg events.Aggregate) State { return State{ID: agg.ID} }

// Exists reports whether the command was requested.
func (s State) Exists() bool { return s.Status != "" }

// Ended reports whether the command reached a terminal status.
func (s State) Ended() bool {
	switch s.Status {
	case StatusExited, StatusAbandoned, StatusRefused, StatusEvicted:
		return true
	}
	return false
}

// Active reports whether the command counts toward its session's
// MaxActive: requested or started, and not evicted. An evicted command
// that still runs is on its way out and no longer counts.
func (s State) Active() bool {
	return (s.Status == StatusRequested || s.Status == StatusStarted) && !s.Evicted
}

// ActiveIDs returns the ids of the active rows (State.Active), oldest
// first: by RequestedAt, then by id. rows are one session's commands, as
// the command projection holds them; rows is not modified. The result is
// the active argument of DecideRequest.
func ActiveIDs(rows []State) []string {
	act := make([]State, 0, len(rows))
	for _, r := range rows {
		if r.Active() {
			act = append(act, r)
		}
	}
	slices.SortStableFunc(act, func(a, b State) int {
		if c := a.RequestedAt.Compare(b.RequestedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	ids := make([]string, len(act))
	for i, r := range act {
		ids[i] = r.ID
	}
	return ids
}

// status names s's status in messages: "none" before the request, and
// "started, evicted" for an evicted command that still runs.
func (s State) status() string {
	switch {
	case s.Status == "":
		return "none"
	case s.Evicted && s.Status != StatusEvicted:
		return s.Status + ", evicted"
	}
	return s.Status
}
