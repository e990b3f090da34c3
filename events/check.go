package events

// The check aggregate: one run of a workspace's pre-push check (`check`
// in the project's .logbook/workspace.toml), on subject lb.ev.check.<id>
// (aggregate kind KindCheck). The id is a ULID the runner chooses. Its
// lifecycle is
//
//	running → passed | failed | error | cancelled
//
// with check.cancel_requested along the way (a person asked to stop it)
// and check.push_allowed after a pass (the workspace's pre-push hook
// allowed a push of the commit it judged on the strength of this run; it
// is the hook's permission, not a record that the push reached the remote).
// The whole output goes on lb.out.<id>; the ended event keeps its tail.
//
// A check run is an aggregate of its own, not a command: it belongs to a
// workspace rather than a session (a person's `git push` has none), its
// verdict (passed, failed, error, cancelled, timed out) and the tree it
// judged are what is asked of it later, and it runs where the push is,
// whether or not a server's workers run.
//
// Durations are in milliseconds and sizes in bytes; field names carry the
// unit.

// KindCheck is the check run aggregate kind: lb.ev.check.<id>.
const KindCheck = "check"

// Statuses of a check run, as CheckEnded.Status names them (running is
// the status between CheckStarted and CheckEnded).
const (
	CheckRunning   = "running"
	CheckPassed    = "passed"    // exit status 0, within the timeout
	CheckFailed    = "failed"    // a non-zero exit, or killed at the timeout (TimedOut)
	CheckError     = "error"     // it could not run at all: not found, not executable, no sandbox
	CheckCancelled = "cancelled" // a person stopped it
)

// CheckRunSpec is what a check run is, as its start records it: the
// workspace it judges, the command as configured (Command, run as Argv)
// in sandbox Mode with a timeout of TimeoutMS, and the tree it judges:
// HEAD's commit (Commit, 40 hex digits, "" on an unborn branch), a
// digest of the work tree (Tree, "sha256:" and 64 hex digits over every
// tracked and untracked, not ignored, file's path, mode and content) and
// whether the work tree equals HEAD's tree (Clean). Fingerprint is
// "<Commit>:<Tree>". Trigger is "push" (the pre-push hook) or "manual";
// By names who ran it ("person:<user>@<host>"); Runner is the process
// that runs it ("<host>/<pid>/<start>/<ulid>"). CheckStarted and the
// check reducer's State embed it, so its JSON fields sit flat in both.
type CheckRunSpec struct {
	Workspace   string   `json:"workspace"`
	Project     string   `json:"project"`
	Command     string   `json:"command"`
	Argv        []string `json:"argv"`
	Mode        string   `json:"mode"`
	TimeoutMS   int64    `json:"timeout_ms"`
	Commit      string   `json:"commit"`
	Tree        string   `json:"tree"`
	Clean       bool     `json:"clean"`
	Fingerprint string   `json:"fingerprint"`
	Trigger     string   `json:"trigger"`
	By          string   `json:"by"`
	Runner      string   `json:"runner"`
}

// CheckStarted opens a check run with its spec (CheckRunSpec, whose
// fields are the event's own on the wire). It needs a complete cause.
type CheckStarted struct {
	CheckRunSpec
}

// EventType implements Payload.
func (CheckStarted) EventType() string { return "check.started" }

// CheckCancelRequested asks the runner to stop a running check: By is the
// person who asked. The run is running until CheckEnded says otherwise.
// It needs a complete cause.
type CheckCancelRequested struct {
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// EventType implements Payload.
func (CheckCancelRequested) EventType() string { return "check.cancel_requested" }

// CheckEnded records a check run's verdict. Status is CheckPassed,
// CheckFailed, CheckError or CheckCancelled. ExitCode is the command's
// exit status (-1 when it was killed or never ran); TimedOut says it was
// killed, its whole process tree with it, at the timeout (Status is then
// CheckFailed, never CheckPassed); Reason says why it is an error or who
// cancelled it. OutputTail is the redacted end of its output, at most
// CheckTailBytes bytes; OutputBytes counts all of it (stored on
// lb.out.<id>). Terminal; it needs a complete cause.
type CheckEnded struct {
	Status      string `json:"status"`
	ExitCode    int    `json:"exit_code"`
	Signal      string `json:"signal,omitempty"`
	TimedOut    bool   `json:"timed_out"`
	Reason      string `json:"reason,omitempty"`
	DurationMS  int64  `json:"duration_ms"`
	OutputBytes int64  `json:"output_bytes"`
	OutputTail  string `json:"output_tail,omitempty"`
}

// EventType implements Payload.
func (CheckEnded) EventType() string { return "check.ended" }

// CheckTailBytes caps CheckEnded.OutputTail: the last 4 KiB of output,
// where a test runner prints its verdict and its failures' summary.
const CheckTailBytes = 4 << 10

// PushRef is one line git gives a pre-push hook: the local ref and commit
// pushed, and the remote ref and the commit it had (40 zeros for none).
// For an annotated tag git names the tag object: LocalSHA is then the
// commit the tag points to, and Tag the tag object's id ("" otherwise).
type PushRef struct {
	LocalRef  string `json:"local_ref"`
	LocalSHA  string `json:"local_sha"`
	RemoteRef string `json:"remote_ref"`
	RemoteSHA string `json:"remote_sha"`
	Tag       string `json:"tag,omitempty"`
}

// CheckPushAllowed records that the workspace's pre-push hook allowed a
// push on the strength of this passed run: the remote's name and the refs
// git asked to push, each of whose local commit is the run's Commit. It
// is a permission, not a push: git sends the push after the hook and may
// still fail it (another hook, a rejected update), and `git push
// --no-verify` runs no hook, so records nothing. Reused says the
// run was an earlier one whose fingerprint matched the tree at the push,
// so the check was not run again. It needs a complete cause.
type CheckPushAllowed struct {
	Remote string    `json:"remote"`
	Refs   []PushRef `json:"refs"`
	Reused bool      `json:"reused,omitempty"`
}

// EventType implements Payload.
func (CheckPushAllowed) EventType() string { return "check.push_allowed" }

// registerCheck adds the check run aggregate's types; each needs a
// complete cause.
func registerCheck(r *Registry) {
	r.Register(CheckStarted{}, 1, true)
	r.Register(CheckCancelRequested{}, 1, true)
	r.Register(CheckEnded{}, 1, true)
	r.Register(CheckPushAllowed{}, 1, true)
}
