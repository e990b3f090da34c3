package events

// The project, workspace and task aggregates.
//
// A project (lb.ev.project.<id>) is a folder Logbook has been pointed at,
// the top level of a git repository. It also holds the storage keys of
// its workspaces, so a key is unique within the project under one
// optimistic concurrency check: a workspace's key is reserved on the
// project (ProjectKeyReserved) before the workspace itself
// (WorkspaceReserved).
//
// A workspace (lb.ev.workspace.<id>) is a git worktree of a project on
// branch worktree/<key>, at a path fixed when it is reserved. Its
// lifecycle is
//
//	initializing → ready | failed
//	initializing | ready | failed → archiving → archived
//
// with each materialization step an event of its own (base resolved,
// worktree added, files synced, setup command run) and cleanup after the
// archive (cleaned or cleanup_failed), which never rolls the archive
// back.
//
// A task (lb.ev.task.<id>) is work a session delegated to a workspace:
//
//	delegated → running → completed | failed
//	delegated | running → interrupted → resumed → completed | failed
//
// Times are the envelopes'; nothing here carries a clock reading.

// KindTask is the task aggregate kind: lb.ev.task.<id>.
const KindTask = "task"

// Who named or acted on a workspace: a chat (an agent's session) or a
// person at the command line.
const (
	ByChat   = "chat"
	ByPerson = "person"
)

// ProjectAdded opens a project aggregate: the top level of a git
// repository at Path (absolute, symlinks resolved), named Name, with
// storage key Key (lowercase ASCII slug, ≤ 48 bytes). Trunk is the
// branch workspaces fork from ("main"), as found when it was added. It
// needs a complete cause.
type ProjectAdded struct {
	Name  string `json:"name"`
	Key   string `json:"key"`
	Path  string `json:"path"`
	Trunk string `json:"trunk"`
}

// EventType implements Payload.
func (ProjectAdded) EventType() string { return "project.added" }

// ProjectKeyReserved records that storage key Key of the project belongs
// to workspace Workspace from now on. A workspace's key is reserved once;
// a second reservation for the same workspace is decided as nothing.
type ProjectKeyReserved struct {
	Workspace string `json:"workspace"`
	Key       string `json:"key"`
}

// EventType implements Payload.
func (ProjectKeyReserved) EventType() string { return "project.key_reserved" }

// WorkspaceReserved opens a workspace aggregate in status initializing:
// its project, name, storage key, absolute path (fixed from now on),
// branch (worktree/<key>) and the base ref asked for ("" means
// origin/<trunk>, else the local trunk). OwnedBy is the owning session
// ("" when a person created it); NamedBy is ByChat or ByPerson;
// Placeholder marks a name the first session naming itself replaces.
// Runner names the process that materializes it (host and pid), so a
// restart can tell a crashed materialization from a live one. It needs a
// complete cause.
type WorkspaceReserved struct {
	Project     string `json:"project"`
	Name        string `json:"name"`
	Key         string `json:"key"`
	Path        string `json:"path"`
	Branch      string `json:"branch"`
	Base        string `json:"base,omitempty"`
	OwnedBy     string `json:"owned_by,omitempty"`
	NamedBy     string `json:"named_by"`
	Placeholder bool   `json:"placeholder,omitempty"`
	Runner      string `json:"runner"`
}

// EventType implements Payload.
func (WorkspaceReserved) EventType() string { return "workspace.reserved" }

// WorkspaceResumed records that a materialization whose runner is gone
// (a crash between reservation and ready) is taken over by Runner: steps
// of the old runner are refused from now on. It needs a complete cause.
type WorkspaceResumed struct {
	Runner string `json:"runner"`
	Was    string `json:"was"` // the runner that was taken over
}

// EventType implements Payload.
func (WorkspaceResumed) EventType() string { return "workspace.resumed" }

// WorkspaceBaseResolved records the commit the workspace forks from: Ref
// as resolved ("origin/main", "main", or the ref asked for) and its
// Commit (40 hex digits). Fetched says origin was fetched first;
// Fallback, when set, says why the local trunk was used instead of
// origin/<trunk>.
type WorkspaceBaseResolved struct {
	Runner   string `json:"runner"`
	Ref      string `json:"ref"`
	Commit   string `json:"commit"`
	Fetched  bool   `json:"fetched"`
	Fallback string `json:"fallback,omitempty"`
}

// EventType implements Payload.
func (WorkspaceBaseResolved) EventType() string { return "workspace.base_resolved" }

// WorkspaceWorktreeAdded records that git made the worktree: Path and
// Branch as git reports them, at Commit. Adopted is set when the worktree
// was found already made (by a runner that crashed after making it).
type WorkspaceWorktreeAdded struct {
	Runner  string `json:"runner"`
	Path    string `json:"path"`
	Branch  string `json:"branch"`
	Commit  string `json:"commit"`
	Adopted bool   `json:"adopted,omitempty"`
}

// EventType implements Payload.
func (WorkspaceWorktreeAdded) EventType() string { return "workspace.worktree_added" }

// WorkspaceSynced records the project files copied into the worktree
// (relative paths): Files from sync, Protected from protected_sync
// (read-only to sandboxed commands). Missing lists configured files the
// project does not have.
type WorkspaceSynced struct {
	Runner    string   `json:"runner"`
	Files     []string `json:"files,omitempty"`
	Protected []string `json:"protected,omitempty"`
	Missing   []string `json:"missing,omitempty"`
}

// EventType implements Payload.
func (WorkspaceSynced) EventType() string { return "workspace.synced" }

// WorkspaceSetupRan records one setup command, run under the sandbox in
// workspace_write mode in the worktree: its index in setup_commands, its
// argv, its exit code (-1 when it did not exit on its own) and where its
// output went (a file beside the workspace's folder; the output itself is
// not in the log, as it may hold anything the project's tools print).
type WorkspaceSetupRan struct {
	Runner      string   `json:"runner"`
	Index       int      `json:"index"`
	Argv        []string `json:"argv"`
	Exit        int      `json:"exit"`
	OutputBytes int64    `json:"output_bytes"`
	Log         string   `json:"log,omitempty"`
}

// EventType implements Payload.
func (WorkspaceSetupRan) EventType() string { return "workspace.setup_ran" }

// WorkspaceReady records that materialization finished: the workspace
// can be worked in. It needs a complete cause.
type WorkspaceReady struct {
	Runner string `json:"runner"`
}

// EventType implements Payload.
func (WorkspaceReady) EventType() string { return "workspace.ready" }

// WorkspaceFailed records that materialization stopped at Step
// ("base", "worktree", "verify", "sync", "setup", "recover") for Reason.
// It needs a complete cause.
type WorkspaceFailed struct {
	Runner string `json:"runner,omitempty"`
	Step   string `json:"step"`
	Reason string `json:"reason"`
}

// EventType implements Payload.
func (WorkspaceFailed) EventType() string { return "workspace.failed" }

// WorkspaceRenamed records a new name and branch. The storage key and
// the folder never change. NamedBy is ByChat or ByPerson; Session is the
// session that named it (ByChat). It needs a complete cause.
type WorkspaceRenamed struct {
	Name    string `json:"name"`
	Branch  string `json:"branch"`
	NamedBy string `json:"named_by"`
	Session string `json:"session,omitempty"`
}

// EventType implements Payload.
func (WorkspaceRenamed) EventType() string { return "workspace.renamed" }

// WorkspaceArchiving records the logical archive: the workspace can no
// longer be worked in, its commands are asked to stop, and cleanup
// follows. By is the session that archived it, or "" for a person; ByKind
// is ByChat or ByPerson. It needs a complete cause.
type WorkspaceArchiving struct {
	By     string `json:"by,omitempty"`
	ByKind string `json:"by_kind"`
}

// EventType implements Payload.
func (WorkspaceArchiving) EventType() string { return "workspace.archiving" }

// WorkspaceArchived records that the archive is complete. It follows
// WorkspaceArchiving at once. It needs a complete cause.
type WorkspaceArchived struct{}

// EventType implements Payload.
func (WorkspaceArchived) EventType() string { return "workspace.archived" }

// WorkspaceCleaned records that the worktree and its folder are gone.
type WorkspaceCleaned struct{}

// EventType implements Payload.
func (WorkspaceCleaned) EventType() string { return "workspace.cleaned" }

// WorkspaceCleanupFailed records a cleanup that failed at Step
// ("worktree", "folder") for Reason; the workspace stays archived.
type WorkspaceCleanupFailed struct {
	Step   string `json:"step"`
	Reason string `json:"reason"`
}

// EventType implements Payload.
func (WorkspaceCleanupFailed) EventType() string { return "workspace.cleanup_failed" }

// TaskDelegated opens a task aggregate: session Parent delegated work
// titled Title to workspace Workspace. It needs a complete cause.
type TaskDelegated struct {
	Workspace string `json:"workspace"`
	Parent    string `json:"parent"`
	Title     string `json:"title"`
}

// EventType implements Payload.
func (TaskDelegated) EventType() string { return "task.delegated" }

// TaskRunning records that session Session was seen working in the
// task's workspace. It needs a complete cause.
type TaskRunning struct {
	Session string `json:"session"`
}

// EventType implements Payload.
func (TaskRunning) EventType() string { return "task.running" }

// TaskEnded records the real end of the task's session: Outcome
// "completed" or "failed", with the session's end reason. It needs a
// complete cause.
type TaskEnded struct {
	Session string `json:"session"`
	Outcome string `json:"outcome"`
	Reason  string `json:"reason,omitempty"`
}

// EventType implements Payload.
func (TaskEnded) EventType() string { return "task.ended" }

// TaskInterrupted records that the host restarted while the task's
// session neither ended nor was seen again. It needs a complete cause.
type TaskInterrupted struct {
	Reason string `json:"reason"`
}

// EventType implements Payload.
func (TaskInterrupted) EventType() string { return "task.interrupted" }

// TaskResumed records that the same session continues an interrupted
// task. It needs a complete cause.
type TaskResumed struct {
	Session string `json:"session"`
}

// EventType implements Payload.
func (TaskResumed) EventType() string { return "task.resumed" }

// registerWorkspace adds the project, workspace and task types.
// Lifecycle moves need a complete cause; the steps along the way do not.
func registerWorkspace(r *Registry) {
	r.Register(ProjectAdded{}, 1, true)
	r.Register(ProjectKeyReserved{}, 1, false)
	r.Register(WorkspaceReserved{}, 1, true)
	r.Register(WorkspaceResumed{}, 1, true)
	r.Register(WorkspaceBaseResolved{}, 1, false)
	r.Register(WorkspaceWorktreeAdded{}, 1, false)
	r.Register(WorkspaceSynced{}, 1, false)
	r.Register(WorkspaceSetupRan{}, 1, false)
	r.Register(WorkspaceReady{}, 1, true)
	r.Register(WorkspaceFailed{}, 1, true)
	r.Register(WorkspaceRenamed{}, 1, true)
	r.Register(WorkspaceArchiving{}, 1, true)
	r.Register(WorkspaceArchived{}, 1, true)
	r.Register(WorkspaceCleaned{}, 1, false)
	r.Register(WorkspaceCleanupFailed{}, 1, false)
	r.Register(TaskDelegated{}, 1, true)
	r.Register(TaskRunning{}, 1, true)
	r.Register(TaskEnded{}, 1, true)
	r.Register(TaskInterrupted{}, 1, true)
	r.Register(TaskResumed{}, 1, true)
}
