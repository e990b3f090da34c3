package gate

import (
	"encoding/json"
	"strings"

	"github.com/logbook-dev/logbook/events"
)

// ElevateRequest returns the Request that asks the gate to let command
// id (of session, argv run in workspace with working directory cwd) run
// full_access (Grant events.ModeFullAccess), for the requester's reason;
// ref is the ULID of the request. Its Event and Tool are EventExec and
// "exec", its ID "elevate-" and id, so that a policy and a reviewer read
// it as a tool call whose input is {"command", "argv", "workspace",
// "cwd"}, the command being argv joined by spaces. The error is
// encoding/json's.
func ElevateRequest(session, id string, argv []string, workspace, cwd, reason, ref string) (Request, error) {
	in, err := json.Marshal(map[string]any{"command": strings.Join(argv, " "), "argv": argv, "workspace": workspace, "cwd": cwd})
	if err != nil {
		return Request{}, err
	}
	return Request{
		Session: session, Event: EventExec, Tool: "exec", Input: in, ID: "elevate-" + id,
		Cwd: workspace, Ref: ref, Grant: events.ModeFullAccess, Reason: reason,
	}, nil
}

// StdinRequest returns the Request that asks the gate whether input data
// may be written to command (of session); ref is the ULID of the
// request, and names the review, if any (claude.PermissionID(ref)): the
// request has no ID. Its Event and Tool are EventStdin and "stdin", its
// input {"command", "bytes"} and, unless secret, "text" (data as a
// string): the text goes to the gate and a reviewer, never into the log,
// where a review records only its size and digest. The error is
// encoding/json's.
func StdinRequest(session, command string, data []byte, secret bool, ref string) (Request, error) {
	in := map[string]any{"command": command, "bytes": len(data)}
	if !secret {
		in["text"] = string(data)
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return Request{}, err
	}
	return Request{Session: session, Event: EventStdin, Tool: "stdin", Input: raw, Ref: ref}, nil
}
