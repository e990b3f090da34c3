package command

import (
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/logbook-dev/logbook/events"
)

// Command is an input to Decide. Each carries the decision time At (the
// events' At) and the Cause the events record; lifecycle moves (Start,
// Stop, Exit, Abandon, Refuse, Evict) need a complete cause, or the
// registry refuses their events with events.ErrMissingCause.
type Command interface{ command() }

// Request asks for a new command: the spec of events.CommandRequested.
// The command's id is the aggregate's (State.ID, from Init).
type Request struct {
	Session     string   // the session aggregate id
	Argv        []string // non-empty; Argv[0] non-empty
	Cwd         string   // absolute, or relative to Workspace; "" means Workspace
	Workspace   string   // absolute path
	Mode        string   // events.ModeReadOnly, ModeWorkspaceWrite or ModeFullAccess
	TTY         bool     // pseudo-terminal instead of pipes
	Env         []string // "KEY=VALUE", KEY non-empty, values already redacted
	WaitMS      int64    // ms the requester waits before the command goes to the background; ≥ 0
	RequestedBy string   // who asks; non-empty
	Elevation   string   // the gate review granting full_access to this command, "" for none
	At          time.Time
	Cause       events.Cause
}

// Start records that worker Worker on Host takes the command and is
// about to start its process. The worker starts the process only once
// this decision's events are appended (see the package documentation).
type Start struct {
	Worker string
	Host   string
	At     time.Time
	Cause  events.Cause
}

// Run records that the worker Worker, whose Start landed, started the
// command's process: Pid (> 0) on its host, with the process's start
// time in clock ticks after boot (ProcStart, 0 when unknown), the host's
// boot id (Boot, "" when unknown) and the cgroup v2 directory holding the
// tree (Cgroup, "" for none), as in events.CommandRunning.
type Run struct {
	Worker    string
	Pid       int
	ProcStart uint64
	Boot      string
	Cgroup    string
	At        time.Time
	Cause     events.Cause
}

// Background records that the requester stopped waiting after AfterMS ms
// (≥ 0). The command goes on.
type Background struct {
	AfterMS int64
	At      time.Time
	Cause   events.Cause
}

// WriteStdin records that Bytes bytes (≥ 1) were written to the command's
// standard input; SHA256 is their lowercase hex SHA-256, or "" to withhold
// it (see events.CommandStdinWritten).
type WriteStdin struct {
	Bytes  int
	SHA256 string
	At     time.Time
	Cause  events.Cause
}

// Stop asks for the command to stop. By names who asks (non-empty);
// Reason is optional.
type Stop struct {
	By     string
	Reason string
	At     time.Time
	Cause  events.Cause
}

// Exit records the end of the command's process, as its worker reports
// it: exit Code (-1 when a Signal killed it), whether a stop caused it,
// its duration in ms and its output size in bytes (both ≥ 0), and
// whether descendants outside its group lingered after it exited.
type Exit struct {
	Code        int
	Signal      string
	Stopped     bool
	DurationMS  int64
	OutputBytes int64
	// OutputDropped and Limits are as in events.CommandExited.
	OutputDropped int64
	Limits        string
	Lingering     bool
	// NotRun is as in events.CommandExited: why the command never ran.
	NotRun string
	At     time.Time
	Cause  events.Cause
}

// Abandon marks a started command whose worker is known dead. Worker is
// the dead worker; "" means the one that started the command. Reason is
// required. OutputBytes (≥ 0) is how much output the dead worker stored.
type Abandon struct {
	Reason      string
	Worker      string
	OutputBytes int64
	At          time.Time
	Cause       events.Cause
}

// Refuse records that a requested command will never run, for Reason
// (required, readable). Worker, when set, is a worker whose Start landed
// but whose process could not be started: it may refuse its own started
// command before Run.
type Refuse struct {
	Reason string
	Worker string
	At     time.Time
	Cause  events.Cause
}

// Evict pushes the command out of its session's active set on behalf of
// the newer command By. DecideRequest builds these.
type Evict struct {
	By    string
	At    time.Time
	Cause events.Cause
}

func (Request) command()    {}
func (Start) command()      {}
func (Run) command()        {}
func (Background) command() {}
func (WriteStdin) command() {}
func (Stop) command()       {}
func (Exit) command()       {}
func (Abandon) command()    {}
func (Refuse) command()     {}
func (Evict) command()      {}

// Decide returns the events cmd causes in state s, in order, or an error
// that says why cmd is refused, naming the command and its status. The
// returned envelopes have Type, V, Data, At, Cause and Agg set; the caller
// assigns ID and Ver. s is not modified.
//
// Errors wrap events.ErrNotFound for any command but Request when s was
// never requested, and events.ErrRejected when cmd does not fit s:
//   - Request: an invalid spec, or an existing id with another spec (the
//     same spec again is a retry: no events, no error);
//   - Start: any status but requested (a second Start included);
//   - Run: any status but started, a second Run, or another worker than
//     the one whose Start landed;
//   - Refuse: any status but requested, except a started command with no
//     Run yet refused by the worker that started it;
//   - WriteStdin, Exit and Abandon: any status but started, and Abandon
//     naming another worker than the one that started it;
//   - Stop, Background and Evict: an ended command, or a second one;
//   - any command: an invalid argument (no worker, a negative ms count, …).
//
// Stop of a command still waiting for a worker also refuses it, so it
// never starts. Evict of a started command also asks it to stop, unless a
// stop was asked for already.
func Decide(s State, cmd Command) ([]events.Envelope, error) {
	if _, ok := cmd.(Request); !ok && !s.Exists() {
		return nil, fmt.Errorf("%s: %w: command %s was never requested (status %s)", opName(cmd), events.ErrNotFound, s.ID, s.status())
	}
	switch c := cmd.(type) {
	case Request:
		return decideRequest(s, c)
	case Start:
		if c.Worker == "" || c.Host == "" {
			return nil, invalid("start", s, "worker %q and host %q: both are required", c.Worker, c.Host)
		}
		if s.Status != StatusRequested {
			return nil, refuse("start", s)
		}
		return emitOne(s, c.At, c.Cause, events.CommandStarted{Worker: c.Worker, Host: c.Host}), nil
	case Run:
		if c.Worker == "" || c.Pid <= 0 {
			return nil, invalid("run", s, "worker %q and pid %d: both are required", c.Worker, c.Pid)
		}
		if s.Status != StatusStarted {
			return nil, refuse("run", s)
		}
		if c.Worker != s.Worker {
			return nil, rejectf("run", s, "was started by worker %s, not %s", s.Worker, c.Worker)
		}
		if s.Pid != 0 {
			return nil, rejectf("run", s, "already runs as pid %d", s.Pid)
		}
		return emitOne(s, c.At, c.Cause, events.CommandRunning{Pid: c.Pid, ProcStart: c.ProcStart, Boot: c.Boot, Cgroup: c.Cgroup}), nil
	case Background:
		if c.AfterMS < 0 {
			return nil, invalid("background", s, "negative wait %d ms", c.AfterMS)
		}
		if s.Ended() {
			return nil, refuse("background", s)
		}
		if s.Background {
			return nil, rejectf("background", s, "is already in the background")
		}
		return emitOne(s, c.At, c.Cause, events.CommandBackgrounded{AfterMS: c.AfterMS}), nil
	case WriteStdin:
		if c.Bytes < 1 {
			return nil, invalid("write stdin", s, "%d bytes: want at least 1", c.Bytes)
		}
		if c.SHA256 != "" && !isSHA256(c.SHA256) {
			return nil, invalid("write stdin", s, "sha256 %q: want 64 lowercase hex digits or nothing", c.SHA256)
		}
		if s.Status != StatusStarted {
			return nil, refuse("write stdin", s)
		}
		return emitOne(s, c.At, c.Cause, events.CommandStdinWritten{Bytes: c.Bytes, SHA256: c.SHA256}), nil
	case Stop:
		if c.By == "" {
			return nil, invalid("stop", s, "no requester (By)")
		}
		if s.Ended() {
			return nil, refuse("stop", s)
		}
		if s.StopRequested {
			return nil, rejectf("stop", s, "already has a stop requested by %s", s.StopBy)
		}
		d := newDecider(s, c.At, c.Cause)
		d.emit(events.CommandStopRequested{By: c.By, Reason: c.Reason})
		if s.Status == StatusRequested {
			d.emit(events.CommandRefused{Reason: "stopped by " + c.By + " before it started"})
		}
		return d.out, nil
	case Exit:
		if c.DurationMS < 0 || c.OutputBytes < 0 || c.OutputDropped < 0 {
			return nil, invalid("exit", s, "negative duration %d ms or output %d/%d bytes", c.DurationMS, c.OutputBytes, c.OutputDropped)
		}
		if s.Status != StatusStarted {
			return nil, refuse("exit", s)
		}
		d := newDecider(s, c.At, c.Cause)
		d.emit(events.CommandExited{Code: c.Code, Signal: c.Signal, Stopped: c.Stopped, DurationMS: c.DurationMS, OutputBytes: c.OutputBytes,
			OutputDropped: c.OutputDropped, Limits: c.Limits, Lingering: c.Lingering, NotRun: c.NotRun})
		return d.out, nil
	case Abandon:
		if c.Reason == "" {
			return nil, invalid("abandon", s, "no reason")
		}
		if c.OutputBytes < 0 {
			return nil, invalid("abandon", s, "negative output %d bytes", c.OutputBytes)
		}
		if s.Status != StatusStarted {
			return nil, refuse("abandon", s)
		}
		worker := c.Worker
		if worker == "" {
			worker = s.Worker
		}
		if worker != s.Worker {
			return nil, rejectf("abandon", s, "was started by worker %s, not %s", s.Worker, worker)
		}
		return emitOne(s, c.At, c.Cause, events.CommandAbandoned{Reason: c.Reason, Worker: worker, OutputBytes: c.OutputBytes}), nil
	case Refuse:
		if c.Reason == "" {
			return nil, invalid("refuse", s, "no reason")
		}
		startedOnly := s.Status == StatusStarted && s.Pid == 0 && c.Worker != "" && c.Worker == s.Worker
		if s.Status != StatusRequested && !startedOnly {
			return nil, refuse("refuse", s)
		}
		return emitOne(s, c.At, c.Cause, events.CommandRefused{Reason: c.Reason}), nil
	case Evict:
		if c.By == "" || c.By == s.ID {
			return nil, invalid("evict", s, "evicting command %q: want another command's id", c.By)
		}
		if s.Ended() {
			return nil, refuse("evict", s)
		}
		if s.Evicted {
			return nil, rejectf("evict", s, "was already evicted by %s", s.EvictedBy)
		}
		d := newDecider(s, c.At, c.Cause)
		d.emit(events.CommandEvicted{By: c.By})
		if s.Status == StatusStarted && !s.StopRequested {
			d.emit(events.CommandStopRequested{By: c.By, Reason: "evicted"})
		}
		return d.out, nil
	default:
		return nil, fmt.Errorf("%w: unknown command %T", events.ErrRejected, cmd)
	}
}

func decideRequest(s State, c Request) ([]events.Envelope, error) {
	if err := events.ValidID(s.ID); err != nil {
		return nil, fmt.Errorf("request: %w: command id: %w", events.ErrRejected, err)
	}
	if err := validRequest(c); err != nil {
		return nil, invalid("request", s, "%v", err)
	}
	if s.Exists() {
		if sameSpec(s, c) {
			return nil, nil
		}
		return nil, rejectf("request", s, "already exists with another spec")
	}
	d := newDecider(s, c.At, c.Cause)
	d.emit(events.CommandRequested{
		Session: c.Session, Argv: slices.Clone(c.Argv), Cwd: c.Cwd, Workspace: c.Workspace,
		Mode: c.Mode, TTY: c.TTY, Env: slices.Clone(c.Env), WaitMS: c.WaitMS, RequestedBy: c.RequestedBy,
		Elevation: c.Elevation,
	})
	return d.out, nil
}

// validRequest reports what is wrong with c's spec, or nil.
func validRequest(c Request) error {
	if err := events.ValidID(c.Session); err != nil {
		return fmt.Errorf("session: %v", err)
	}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return fmt.Errorf("empty argv %q", c.Argv)
	}
	switch c.Mode {
	case events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeFullAccess:
	default:
		return fmt.Errorf("mode %q: want %s, %s or %s", c.Mode, events.ModeReadOnly, events.ModeWorkspaceWrite, events.ModeFullAccess)
	}
	if !path.IsAbs(c.Workspace) {
		return fmt.Errorf("workspace %q is not an absolute path", c.Workspace)
	}
	if err := CheckEnv(c.Env); err != nil {
		return err
	}
	if c.WaitMS < 0 {
		return fmt.Errorf("negative wait %d ms", c.WaitMS)
	}
	if c.RequestedBy == "" {
		return fmt.Errorf("no requester (RequestedBy)")
	}
	return nil
}

// sameSpec reports whether c asks for exactly the command s holds.
func sameSpec(s State, c Request) bool {
	return s.Session == c.Session && slices.Equal(s.Argv, c.Argv) && s.Cwd == c.Cwd &&
		s.Workspace == c.Workspace && s.Mode == c.Mode && s.TTY == c.TTY &&
		slices.Equal(s.Env, c.Env) && s.WaitMS == c.WaitMS && s.RequestedBy == c.RequestedBy && s.Elevation == c.Elevation
}

func isSHA256(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// refuse rejects op because of s's status, saying what that status means.
func refuse(op string, s State) error {
	switch s.Status {
	case StatusRequested:
		return rejectf(op, s, "has not started")
	case StatusStarted:
		if op == "start" {
			return rejectf(op, s, "was already started by worker %s on %s", s.Worker, s.Host)
		}
		return rejectf(op, s, "has started")
	case StatusExited:
		return rejectf(op, s, "has exited")
	case StatusAbandoned:
		return rejectf(op, s, "was abandoned")
	case StatusRefused:
		return rejectf(op, s, "was refused")
	case StatusEvicted:
		return rejectf(op, s, "was evicted by %s", s.EvictedBy)
	}
	return rejectf(op, s, "is in an unknown status")
}

// rejectf returns an error wrapping events.ErrRejected: "op: …: command
// <id> <why> (status <status>)".
func rejectf(op string, s State, why string, args ...any) error {
	return fmt.Errorf("%s: %w: command %s %s (status %s)", op, events.ErrRejected, s.ID, fmt.Sprintf(why, args...), s.status())
}

// invalid rejects op for a bad argument.
func invalid(op string, s State, why string, args ...any) error {
	return fmt.Errorf("%s: %w: command %s (status %s): %s", op, events.ErrRejected, s.ID, s.status(), fmt.Sprintf(why, args...))
}

func opName(cmd Command) string {
	switch cmd.(type) {
	case Start:
		return "start"
	case Run:
		return "run"
	case Background:
		return "background"
	case WriteStdin:
		return "write stdin"
	case Stop:
		return "stop"
	case Exit:
		return "exit"
	case Abandon:
		return "abandon"
	case Refuse:
		return "refuse"
	case Evict:
		return "evict"
	}
	return fmt.Sprintf("%T", cmd)
}

// decider accumulates the events of one decision, folding each into its
// working copy of the state.
type decider struct {
	s     State
	agg   events.Aggregate
	at    time.Time
	cause *events.Cause
	out   []events.Envelope
}

func newDecider(s State, at time.Time, cause events.Cause) *decider {
	d := &decider{s: s, agg: events.Aggregate{Kind: events.KindCommand, ID: s.ID}, at: at}
	if cause != (events.Cause{}) {
		d.cause = &cause
	}
	return d
}

// emitOne returns the decision of the single event p on s, at at for
// cause.
func emitOne(s State, at time.Time, cause events.Cause, p events.Payload) []events.Envelope {
	d := newDecider(s, at, cause)
	d.emit(p)
	return d.out
}

func (d *decider) emit(p events.Payload) {
	e := events.Envelope{Type: p.EventType(), V: 1, Agg: d.agg, At: d.at, Data: p}
	if d.cause != nil {
		c := *d.cause
		e.Cause = &c
	}
	d.out = append(d.out, e)
	e.Ver = d.s.Ver + 1
	d.s = Evolve(d.s, e)
}

// StopReasonSessionEnded is the reason of the stop a session's end asks
// of its commands.
const StopReasonSessionEnded = "session_ended"

// StopReasonWorkerStopping is the reason of the stop a worker asks of
// the commands it runs when it stops itself (its process shutting down:
// serve or `logbook worker` told to stop).
const StopReasonWorkerStopping = "worker_stopping"

// StopForSessionEnd returns the Stop that end (a session.ended envelope)
// asks of command s, and whether one is due: s belongs to end's session,
// has not ended and has no stop yet. The stop is by "session <id>" with
// reason StopReasonSessionEnded, at end's time, with the cause
// {session, session.ended, <end reason>, ref: end's id}; Decide turns it
// into command.stop_requested (and command.refused for a command no
// worker has taken yet). Cancelling a turn ends no session and stops
// nothing.
func StopForSessionEnd(s State, end events.Envelope) (Stop, bool) {
	d, ok := end.Data.(events.SessionEnded)
	if !ok || end.Agg.Kind != events.KindSession || end.Agg.ID != s.Session || !s.Exists() || s.Ended() || s.StopRequested {
		return Stop{}, false
	}
	return Stop{
		By:     "session " + end.Agg.ID,
		Reason: StopReasonSessionEnded,
		At:     end.At,
		Cause:  events.Cause{Kind: "session", Event: end.Type, Detail: d.Reason, Ref: end.ID.String()},
	}, true
}
