package events_test

import "github.com/logbook-dev/logbook/events"

// workspaceSamples are golden samples of the project, workspace and task
// types.
func workspaceSamples() []events.Payload {
	const runner = "build-3/4242/01JDQ7Z8V6T8Q2W3E4R5T6Y7R1"
	commit := "0123456789abcdef0123456789abcdef01234567"
	return []events.Payload{
		events.ProjectAdded{Name: "shop", Key: "shop", Path: "/home/user/shop", Trunk: "main"},
		events.ProjectKeyReserved{Workspace: "01JDQ7Z8V6T8Q2W3E4R5T6Y7W1", Key: "fix-login-2"},
		events.WorkspaceReserved{Project: "p-1f2e3d4c5b6a7988", Name: "Fix login", Key: "fix-login-2", Path: "/home/user/.local/share/logbook/workspaces/shop/fix-login-2", Branch: "worktree/fix-login-2", Base: "v1.2", OwnedBy: "s1", NamedBy: events.ByChat, Placeholder: true, Runner: runner},
		events.WorkspaceResumed{Runner: runner, Was: "build-3/4100/01JDQ7Z8V6T8Q2W3E4R5T6Y7R0"},
		events.WorkspaceBaseResolved{Runner: runner, Ref: "main", Commit: commit, Fallback: "origin unreachable: fatal: could not read from remote repository"},
		events.WorkspaceWorktreeAdded{Runner: runner, Path: "/home/user/.local/share/logbook/workspaces/shop/fix-login-2", Branch: "worktree/fix-login-2", Commit: commit, Adopted: true},
		events.WorkspaceSynced{Runner: runner, Files: []string{".env"}, Protected: []string{"secrets.json"}, Missing: []string{".env.local"}},
		events.WorkspaceSetupRan{Runner: runner, Index: 0, Argv: []string{"sh", "-c", "make deps"}, Exit: 0, OutputBytes: 1234, Log: "/home/user/.local/share/logbook/workspaces/shop/.fix-login-2.setup-1.log"},
		events.WorkspaceReady{Runner: runner},
		events.WorkspaceFailed{Runner: runner, Step: "worktree", Reason: "branch worktree/fix-login-2 exists already"},
		events.WorkspaceRenamed{Name: "Login form", Branch: "worktree/login-form", NamedBy: events.ByChat, Session: "s1"},
		events.WorkspaceArchiving{By: "s1", ByKind: events.ByChat},
		events.WorkspaceArchived{},
		events.WorkspaceCleaned{},
		events.WorkspaceCleanupFailed{Step: "folder", Reason: "permission denied"},
		events.TaskDelegated{Workspace: "01JDQ7Z8V6T8Q2W3E4R5T6Y7W1", Parent: "s1", Title: "Fix the login form"},
		events.TaskRunning{Session: "s2"},
		events.TaskEnded{Session: "s2", Outcome: "completed", Reason: "prompt_input_exit"},
		events.TaskInterrupted{Reason: "host_restarted"},
		events.TaskResumed{Session: "s2"},
	}
}
