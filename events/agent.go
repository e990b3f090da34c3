package events

import (
	"fmt"
	"time"
)

// Process identifies one operating-system process instance: a pid is
// reused, so the process's start time and the host's boot id go with it,
// and a pid means a process only in one PID namespace, so that goes with
// it too. Hooks record the agent process they run under
// (Observation.Process); the reconciler checks whether it still lives.
type Process struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`   // start time in clock ticks after boot: field 22 of /proc/<pid>/stat
	Host  string `json:"host"`    // host name
	Boot  string `json:"boot_id"` // /proc/sys/kernel/random/boot_id of the host, "" if unknown
	// PidNS is the PID namespace that PID and Chain's pids are numbered
	// in, as `readlink /proc/self/ns/pid` names it on Host, e.g.
	// "pid:[4026531836]"; PidNSUnknown when the recorder could not name
	// it (its /proc showed another namespace's pids). "" on processes
	// recorded before it was kept: checked as if of the checker's own.
	PidNS string `json:"pid_ns,omitempty"`
	Comm  string `json:"comm,omitempty"` // the process's command name, e.g. "claude", for people
	// Chain is set on the process a hook recorded (Observation.Process):
	// that process first, then each of its ancestors that is not a shell
	// or a command wrapper, nearest first, up to and excluding pid 1, all
	// on Host and Boot; at most MaxChain of them. The session's agent is
	// the deepest process the chains of two hooks in a row share
	// (reducers/session): an intermediate process that runs one hook and
	// exits, such as a dispatcher script, is never taken for it. nil on
	// processes recorded before chains were kept, and on every other
	// Process.
	Chain []ProcessRef `json:"chain,omitempty"`
}

// PidNSUnknown is Process.PidNS of a process whose PID namespace its
// recorder could not name: no checker ever looks its pid up.
const PidNSUnknown = "unknown"

// MaxChain is the most entries a Process.Chain holds; a session reads no
// more of a longer one.
const MaxChain = 64

// ProcessRef is one process of a Process.Chain, on its host and boot,
// its pid in the chain's PID namespace.
type ProcessRef struct {
	PID   int    `json:"pid"`
	Start uint64 `json:"start"`          // start time in clock ticks after boot: field 22 of /proc/<pid>/stat
	Comm  string `json:"comm,omitempty"` // the process's command name, for people
}

// Same reports whether p and q name the same process instance: same pid,
// start time, host, boot and PID namespace.
func (p Process) Same(q Process) bool {
	return p.PID == q.PID && p.Start == q.Start && p.Host == q.Host && p.Boot == q.Boot && p.PidNS == q.PidNS
}

// String describes p, e.g. "pid 4242 (claude) on build-3".
func (p Process) String() string {
	s := fmt.Sprintf("pid %d", p.PID)
	if p.Comm != "" {
		s += " (" + p.Comm + ")"
	}
	return s + " on " + p.Host
}

// Process check results.
const (
	ProcessAlive   = "alive"   // the same process instance runs
	ProcessGone    = "gone"    // no such process instance: it exited, its pid was reused, or the host booted since
	ProcessUnknown = "unknown" // could not be checked here: another host or PID namespace, or /proc unreadable
)

// ProcessCheck is what checking a process found.
type ProcessCheck struct {
	Process Process `json:"process"`
	Result  string  `json:"result"`           // ProcessAlive, ProcessGone or ProcessUnknown
	Detail  string  `json:"detail,omitempty"` // the evidence, e.g. "no /proc/4242"
}

// Tick is what the reconciler saw of one session at one moment: the
// evidence its decision rests on, stored in a TickObserved so that
// re-deciding the log (replay --rederive) reproduces its marks. The
// session reducer decides from these fields and its own state alone.
type Tick struct {
	Now          time.Time `json:"now"`              // the reconciler's clock when it looked
	LastObserved time.Time `json:"last_observed"`    // the session's last observation of the agent, as read
	AbandonAfter int64     `json:"abandon_after_ms"` // idle time after which open entries are stale, ms; 0: never
	// Check is the agent process and its check (before a session's hooks
	// agree on its agent, the process its newest hook found); nil: none
	// known.
	Check *ProcessCheck `json:"check,omitempty"`
	// LastRef is the event id of the observation LastObserved was taken
	// from: the mark's evidence resolves to a stored observation. ""
	// in ticks stored before it was kept.
	LastRef string `json:"last_ref,omitempty"`
	// LastReceived is when the appending host last took in an
	// observation of the session (Observation.Received), live or read
	// from history: the quiet period is measured from it. Zero: unknown.
	LastReceived time.Time `json:"last_received,omitzero"`
	// QuietMS is how long after LastReceived nothing may be marked
	// stale, ms: an import in progress is not silence. 0: no quiet
	// period (ticks stored before it was kept).
	QuietMS int64 `json:"quiet_ms,omitempty"`
	// ClockOffsetMS is the agent clock's offset as the session had
	// learned it (Observation.Live), ms: the server's clock minus the
	// agent's; positive when the agent's clock is behind. Evidence
	// only: it is never acted on as silence.
	ClockOffsetMS int64 `json:"clock_offset_ms,omitempty"`
}

// Idle returns how long nothing had been observed at t.Now.
func (t Tick) Idle() time.Duration { return t.Now.Sub(t.LastObserved) }

// TickObserved is one reconciler tick about a session, stored only when
// it causes decisions. Its Observation has Kind "tick", Parser
// "logbook-reconciler/1", Key "tick:<event id>" and Tick set.
type TickObserved struct{ Observation }

// EventType implements Payload.
func (TickObserved) EventType() string { return "obs.reconciler.tick" }

// Sender is the user of the host who sent an observation to serve's
// system socket (serve --socket-dir), as the kernel named the connecting
// process (SO_PEERCRED): never what the payload says. Observations that
// arrived any other way have none.
type Sender struct {
	UID  uint32 `json:"uid"`
	User string `json:"user,omitempty"` // UID's name on serve's host; "" when it has none
}
