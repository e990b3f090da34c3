package events_test

import (
	"strings"

	"github.com/logbook-dev/logbook/events"
)

func checkSamples() []events.Payload {
	commit := strings.Repeat("ab", 20)
	return []events.Payload{
		events.CheckStarted{CheckRunSpec: events.CheckRunSpec{Workspace: "wa", Project: "p-0123456789abcdef", Command: "make check", Argv: []string{"sh", "-c", "make check"},
			Mode: "workspace_write", TimeoutMS: 600000, Commit: commit, Tree: "sha256:" + strings.Repeat("cd", 32), Clean: true,
			Fingerprint: commit + ":sha256:" + strings.Repeat("cd", 32), Trigger: "push", By: "person:alice@build-3", Runner: "build-3/4242/1234/01JDQ7Z8V6T8Q2W3E4R5T6Y7R1"}},
		events.CheckCancelRequested{By: "person:alice@build-3", Reason: "wrong branch"},
		events.CheckEnded{Status: "failed", ExitCode: 2, TimedOut: false, DurationMS: 12000, OutputBytes: 65536, OutputTail: "FAIL\tgithub.com/x/y\t0.1s\n"},
		events.CheckPushAllowed{Remote: "origin", Refs: []events.PushRef{{LocalRef: "refs/heads/worktree/fix", LocalSHA: commit,
			RemoteRef: "refs/heads/fix", RemoteSHA: strings.Repeat("0", 40)}}, Reused: true},
	}
}
