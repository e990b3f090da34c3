package events

// The command aggregate: one shell command run for a session by a sandbox
// worker, on subject lb.ev.command.<id> (aggregate kind KindCommand). The
// id is a ULID string chosen by the requester, so a retried request names
// the same command. Its lifecycle is
//
//	requested → started → running → exited | abandoned
//	requested → refused | evicted
//	started → refused | abandoned (the process never started, or its worker died first)
//
// with command.backgrounded, command.stdin_written and
// command.stop_requested along the way, and command.evicted also on a
// started command (which then gets a stop request). Bulk output is not an
// event: it goes on lb.out.<id>.
//
// Durations are in milliseconds and sizes in bytes; field names carry the
// unit (_ms, _bytes).

// CommandRequested asks for a command to run. It opens the command
// aggregate; a sandbox worker that follows lb.ev.command.* picks it up.
// The spec mirrors what the sandbox runs: Argv in Workspace (or Cwd) under
// Mode, with exactly Env.
type CommandRequested struct {
	Session string   `json:"session"` // the session aggregate id the command belongs to
	Argv    []string `json:"argv"`    // the command and its arguments; Argv[0] non-empty
	// Cwd is the working directory: absolute, or relative to Workspace;
	// "" means Workspace.
	Cwd string `json:"cwd"`
	// Workspace is the absolute path of the directory the command works
	// on: read-only in read_only mode, writable in workspace_write mode.
	Workspace string `json:"workspace"`
	Mode      string `json:"mode"` // ModeReadOnly, ModeWorkspaceWrite or ModeFullAccess (never ModeAuto)
	TTY       bool   `json:"tty"`  // run on a pseudo-terminal (80×24) instead of pipes
	// Env is the whole environment of the command, as "KEY=VALUE"; the
	// worker's own environment is never inherited. The requester redacts
	// secret values before the request reaches the log.
	Env []string `json:"env,omitempty"`
	// WaitMS is how long the requester waits for the exit, in ms, before
	// the command moves to the background (CommandBackgrounded); 0 means
	// it does not wait.
	WaitMS int64 `json:"wait_ms,omitempty"`
	// RequestedBy names who asked: an agent ("claude-code"), a user name,
	// or "logbook".
	RequestedBy string `json:"requested_by"`
	// Elevation is the gate review whose allow verdict grants this one
	// command full_access beyond the session's mode (`exec --elevate`);
	// "" for none. The worker checks the verdict, its grant and the
	// session's mode revision right before the start.
	Elevation string `json:"elevation,omitempty"`
}

// EventType implements Payload.
func (CommandRequested) EventType() string { return "command.requested" }

// CommandStarted records that a worker took a requested command and is
// about to start its process. It is appended with optimistic concurrency
// on the command's subject before the process exists, so when several
// workers race for one request exactly one start lands and only that
// worker starts a process; the others' appends conflict and they drop
// the command. The process's id follows in CommandRunning. It is a
// transition and needs a complete cause.
type CommandStarted struct {
	Worker string `json:"worker"` // the worker's id, unique among live workers
	Host   string `json:"host"`   // the host the worker runs on
	// Pid is set only in logs written before CommandRunning existed, when
	// the process was started before this event was appended: the process
	// id on Host (bubblewrap in restricted modes), leading the command's
	// process group. Now 0 and left out.
	Pid int `json:"pid,omitempty"`
}

// EventType implements Payload.
func (CommandStarted) EventType() string { return "command.started" }

// CommandRunning records that the worker whose CommandStarted landed has
// started the command's process, and how to find that process again on
// Host: its pid, which leads the command's process group and session,
// its start time and the host's boot id, which together tell it from a
// later process that got the same pid, and the cgroup that holds the
// whole tree where the worker placed it in one. A worker that finds the
// command's worker dead on the same host kills the tree these name
// before it records the abandonment. It needs a complete cause.
type CommandRunning struct {
	Pid int `json:"pid"` // process id on the worker's host (bubblewrap in restricted modes), > 0
	// ProcStart is the process's start time in clock ticks after boot
	// (field 22 of /proc/<pid>/stat); 0 when unknown.
	ProcStart uint64 `json:"proc_start,omitempty"`
	// Boot is the host's boot id (/proc/sys/kernel/random/boot_id); ""
	// when unknown.
	Boot string `json:"boot,omitempty"`
	// Cgroup is the path of the cgroup v2 directory that holds the
	// command's whole tree, "" when it runs in none.
	Cgroup string `json:"cgroup,omitempty"`
}

// EventType implements Payload.
func (CommandRunning) EventType() string { return "command.running" }

// CommandBackgrounded records that the requester's wait expired before the
// command exited. The command goes on; only the requester stopped waiting.
type CommandBackgrounded struct {
	AfterMS int64 `json:"after_ms"` // how long the requester waited, in ms
}

// EventType implements Payload.
func (CommandBackgrounded) EventType() string { return "command.backgrounded" }

// CommandStdinWritten records that bytes were written to a started
// command's standard input. The bytes themselves are never stored: what is
// typed into a running command is often a secret (a password at a prompt,
// a token piped in), and the log is append-only, kept for years and
// replicated to every subscriber host, so a secret written there could
// never be taken back. The length and hash let an auditor check a
// suspected input against the record. A hash of a short or guessable input
// reveals it to whoever guesses, so a writer that knows the input is a
// secret leaves SHA256 empty.
type CommandStdinWritten struct {
	Bytes  int    `json:"bytes"`  // how many bytes were written, ≥ 1
	SHA256 string `json:"sha256"` // lowercase hex SHA-256 of the bytes, or "" when withheld
}

// EventType implements Payload.
func (CommandStdinWritten) EventType() string { return "command.stdin_written" }

// CommandStopRequested asks the command's worker to stop it: SIGTERM to
// the process group, SIGKILL after the grace period. The command is still
// running until CommandExited says otherwise. It needs a complete cause.
type CommandStopRequested struct {
	By     string `json:"by"`               // who asked: a user, an agent, or the id of the command that evicted it
	Reason string `json:"reason,omitempty"` // e.g. "user", "evicted", "session_ended"
}

// EventType implements Payload.
func (CommandStopRequested) EventType() string { return "command.stop_requested" }

// CommandExited records that a started command's process ended. Terminal;
// it needs a complete cause (the worker's report).
type CommandExited struct {
	// Code is the exit status, or -1 when a signal killed the process.
	Code int `json:"code"`
	// Signal names the signal that killed the process ("SIGKILL"), or "".
	Signal string `json:"signal,omitempty"`
	// Stopped is set when the process ended because a stop was requested.
	Stopped     bool  `json:"stopped"`
	DurationMS  int64 `json:"duration_ms"`  // from start to exit, in ms
	OutputBytes int64 `json:"output_bytes"` // bytes of output published on lb.out.<id>
	// OutputDropped counts the bytes of output past the worker's cap on
	// stored output: read from the command, counted, never stored.
	OutputDropped int64 `json:"output_dropped,omitempty"`
	// Limits says which limits bound the command and by what, as
	// sandbox.Applied's String, e.g. "procs 1024 (cgroup1), memory
	// 4294967296 B (cgroup1), /tmp 1073741824 B"; "" in events from
	// before it was recorded.
	Limits string `json:"limits,omitempty"`
	// Lingering is set when, after the process exited and its group was
	// killed, a descendant outside the group still held its output open:
	// output after that point was not read, and the worker killed every
	// descendant it could still find (see the worker's stop).
	Lingering bool `json:"lingering,omitempty"`
	// NotRun, when set, says why the command itself never ran although
	// its process (bubblewrap, in a restricted mode) was started: the
	// boundary could not be built or the command's exec failed, and
	// bubblewrap exited, with Code, before running it (its message is in
	// the output). "" when the command ran, and in events from before it
	// was recorded.
	NotRun string `json:"not_run,omitempty"`
}

// EventType implements Payload.
func (CommandExited) EventType() string { return "command.exited" }

// CommandAbandoned marks a started command whose worker died before it
// reported an exit: the command's fate is unknown and will never be
// reported. It is appended once the worker is known dead, as a new event,
// never an edit. Terminal; it needs a complete cause.
type CommandAbandoned struct {
	Reason string `json:"reason"` // e.g. "worker_lost", "host_restarted"
	Worker string `json:"worker"` // the dead worker: the one that started the command
	// OutputBytes is how many bytes of output the dead worker stored on
	// lb.out.<id>, as the worker that abandons the command finds them
	// (the end of the last chunk stored); 0 when none was, and in
	// events appended before it was recorded.
	OutputBytes int64 `json:"output_bytes,omitempty"`
}

// EventType implements Payload.
func (CommandAbandoned) EventType() string { return "command.abandoned" }

// CommandEvicted records that a newer request pushed the command out of
// its session's active set (at most 64 active commands per session; the
// oldest goes). A requested command never starts after it; a started one
// also gets a CommandStopRequested. The command stays readable. It needs a
// complete cause.
type CommandEvicted struct {
	By string `json:"by"` // the id of the newer command whose request evicted this one
}

// EventType implements Payload.
func (CommandEvicted) EventType() string { return "command.evicted" }

// CommandRefused records that a requested command will never run: a
// restricted mode without bubblewrap, a spec the worker cannot run (a
// missing workspace, a cwd outside it, an argv[0] not found), a session
// that has ended, or a stop before it started. It also ends a started
// command whose process could not be started (no CommandRunning).
// Terminal; it needs a complete cause.
type CommandRefused struct {
	Reason string `json:"reason"` // readable: what is wrong and what to do about it
}

// EventType implements Payload.
func (CommandRefused) EventType() string { return "command.refused" }

// registerCommand adds the command aggregate's types. Lifecycle moves
// (started, running, stop_requested, exited, abandoned, evicted, refused) need a
// complete cause; the request and the reports along the way do not.
func registerCommand(r *Registry) {
	r.Register(CommandRequested{}, 1, false)
	r.Register(CommandStarted{}, 1, true)
	r.Register(CommandRunning{}, 1, true)
	r.Register(CommandBackgrounded{}, 1, false)
	r.Register(CommandStdinWritten{}, 1, false)
	r.Register(CommandStopRequested{}, 1, true)
	r.Register(CommandExited{}, 1, true)
	r.Register(CommandAbandoned{}, 1, true)
	r.Register(CommandEvicted{}, 1, true)
	r.Register(CommandRefused{}, 1, true)
}
