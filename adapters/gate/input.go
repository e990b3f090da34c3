package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/internal/jsonx"
	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
)

// MaxJudgedInput is the most bytes of a tool's input the gate judges:
// 512 KiB. A hook payload over claude.MaxHookSend is recorded cut (each
// string to claude.MaxHookString bytes), so the hook sends the whole
// tool_input beside it (HookGateRequest.Input), and the request stays
// well under the embedded NATS server's maximum payload (1 MiB) with the
// prepared payload (at most 256 KiB) beside it. A gated call whose tool
// input is larger is denied without being judged: by the hook, which
// does not ask the server (TooLargeError), and by the server, should a
// request carry one.
const MaxJudgedInput = 512 << 10

// judgeRule is the DecidedBy name of the deny the gate gives a call it
// does not judge: the policy sees whole inputs only.
const judgeRule = "whole input"

// inputRule is the DecidedBy name of the deny the gate gives a call
// whose input it cannot use (unusableInput).
const inputRule = "usable input"

// unusableInput returns why the gate cannot use tool input in of a call
// to tool, or "" when it can: an input that is not a JSON object (null,
// a number, a string, an array, nothing), one that names a member twice
// in one object at any depth, names that differ only in case counted as
// one (the gate cannot tell which the tool reads), a Bash call whose "command"
// is missing or not a string (an array of strings included: Claude
// Code's Bash takes a string; Codex's shell tool, whose command is an
// argument vector, is not Bash), and a built-in file tool's call whose path is unusable
// (unusablePath: a path field not a string, a required one missing).
// No rule reads such an input, so the call is denied, never
// left to the agent's own permission flow: the gate fails closed.
func unusableInput(tool string, in json.RawMessage) string {
	t := bytes.TrimSpace(in)
	if len(t) == 0 || t[0] != '{' || !json.Valid(t) {
		return fmt.Sprintf("the %s call's tool input is %s, not a JSON object: the gate cannot judge it", tool, jsonKind(t))
	}
	// Names that differ only in case are one name to a decoder that
	// matches them as Go's encoding/json does, and two to the tool: the
	// gate could judge one value while the tool runs the other.
	if k, dup := jsonx.DuplicateKey(t, true); dup {
		return fmt.Sprintf("the %s call's tool input names %s more than once (names that differ only in case count as one): the gate cannot tell which the tool reads", tool, strconv.Quote(k))
	}
	if fields, ok := pathFields[tool]; ok {
		return unusablePath(tool, t, fields)
	}
	if !shellTool(tool) {
		return ""
	}
	var v map[string]json.RawMessage // names as the tool reads them: exact
	if json.Unmarshal(t, &v) != nil {
		return fmt.Sprintf("the %s call's tool input does not decode: the gate cannot judge it", tool)
	}
	c := bytes.TrimSpace(v["command"])
	var str string
	switch {
	case len(c) == 0 || string(c) == "null":
		return fmt.Sprintf("the %s call's tool input has no command: the gate cannot judge it", tool)
	case json.Unmarshal(c, &str) == nil && strings.IndexByte(str, 0) >= 0:
		// No program gets a NUL byte in its arguments (execve ends a
		// string there): what would run is no reading the gate can
		// judge, and a reading up to it could hide what follows.
		return fmt.Sprintf("the %s call's command holds a NUL byte, which no shell is given: the gate cannot judge it", tool)
	case json.Unmarshal(c, &str) == nil:
		return ""
	}
	// An array too: Claude Code's Bash takes a string, and what the
	// agent would make of an array (its words joined with commas, by
	// JavaScript's own rule, say) is no reading the gate can judge.
	return fmt.Sprintf("the %s call's command is not a string: the gate cannot judge it", tool)
}

// unplacedCall returns why the gate cannot place a call to tool in the
// file system, or "" when it can: cwd, the working directory the hook
// payload gives, is given but not an absolute path. Its relative paths
// would resolve against a directory the gate does not know, out of the
// data dir guard's sight. (A call that gives none is placed in its
// session's directory, as before; one of a session that knows none is
// judged on its paths as they are.)
func unplacedCall(tool, cwd string) string {
	if cwd != "" && events.WorkDir(cwd) == "" {
		return fmt.Sprintf("the %s call's cwd %s is not an absolute path: the gate cannot place its relative paths", tool, strconv.Quote(redact.CutText(cwd, 200)))
	}
	return ""
}

// pathFields holds, for each built-in file tool, the input fields the
// gate reads as a path and whether each is required. Glob's "pattern"
// is a path too: its fixed head places the tree searched.
var pathFields = map[string][]pathField{
	"Read":         {{"file_path", true}, {"notebook_path", false}},
	"Write":        {{"file_path", true}, {"notebook_path", false}},
	"Edit":         {{"file_path", true}, {"notebook_path", false}},
	"MultiEdit":    {{"file_path", true}, {"notebook_path", false}},
	"NotebookEdit": {{"notebook_path", true}, {"file_path", false}},
	"NotebookRead": {{"notebook_path", true}, {"file_path", false}},
	"Grep":         {{"path", false}},
	"Glob":         {{"path", false}, {"pattern", false}},
	"LS":           {{"path", false}},
}

// pathField is a path field of a file tool's input (pathFields).
type pathField struct {
	name     string
	required bool
}

// unusablePath returns why the gate cannot use object input t of a call
// to file tool tool, whose path fields are fields, or "" when it can: a
// path field present and not a string, a required one missing (or null,
// or empty), or both "file_path" and "notebook_path" given and not the
// same (the gate reads one, the tool may act on the other).
func unusablePath(tool string, t []byte, fields []pathField) string {
	var in map[string]json.RawMessage
	if json.Unmarshal(t, &in) != nil {
		return fmt.Sprintf("the %s call's tool input does not decode: the gate cannot judge it", tool)
	}
	got := map[string]string{}
	for _, f := range fields {
		raw, ok := in[f.name]
		raw = bytes.TrimSpace(raw)
		var s string
		switch {
		case !ok && !f.required:
			continue
		case !ok || string(raw) == "null" || (json.Unmarshal(raw, &s) == nil && s == "" && f.required):
			return fmt.Sprintf("the %s call's tool input has no %s: the gate cannot judge it", tool, f.name)
		case json.Unmarshal(raw, &s) != nil:
			return fmt.Sprintf("the %s call's %s is %s, not a string: the gate cannot judge it", tool, f.name, jsonKind(raw))
		}
		got[f.name] = s
	}
	f, fok := got["file_path"]
	n, nok := got["notebook_path"]
	if fok && nok && f != n {
		return fmt.Sprintf("the %s call gives both a file_path and a notebook_path that differ: the gate cannot judge it", tool)
	}
	return ""
}

// jsonKind names what JSON text t is, for a reason: "missing", "null",
// "a string", "a number", "an array", "a boolean", "an object", or "not
// JSON".
func jsonKind(t []byte) string {
	switch {
	case len(t) == 0:
		return "missing"
	case !json.Valid(t):
		return "not JSON"
	}
	switch t[0] {
	case 'n':
		return "null"
	case '"':
		return "a string"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case '{':
		return "an object"
	}
	return "a number"
}

// TooLargeError refuses a tool input over MaxJudgedInput bytes: the call
// is denied unjudged.
type TooLargeError struct {
	Size   int    // the tool input's size, bytes
	Cap    int    // MaxJudgedInput
	Digest string // "sha256:" and the hex SHA-256 of the tool input
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the tool input is too large to judge (%d bytes, cap %d)", e.Size, e.Cap)
}

// HookInput returns what a gated hook sends beside its prepared payload
// (HookGateRequest.Input) for hook payload b: "" when claude.PrepareHook
// keeps b whole (its tool_input is judged as recorded); else b's
// tool_input exactly as written ("null" when b has none), for the gate to
// judge whole while the cut copy is recorded. A tool_input over
// MaxJudgedInput bytes is refused with a *TooLargeError. Other errors:
// claude.CheckHook's.
func HookInput(b []byte) (string, error) {
	in, cut, err := claude.ToolInput(b)
	if err != nil || !cut {
		return "", err
	}
	if in == nil {
		in = json.RawMessage("null")
	}
	if len(in) > MaxJudgedInput {
		return "", &TooLargeError{Size: len(in), Cap: MaxJudgedInput, Digest: digest(in)}
	}
	return string(in), nil
}

// InputDigest returns "sha256:" and the hex SHA-256 of a tool input as
// sent, the form of a review's ArgsDigest; "" for an empty one.
func InputDigest(in []byte) string { return digest(in) }

// judged returns the tool input the gate judges for hook request req,
// whose Text reads as h, and why, when it is not judged at all.
//
// A Text that was not cut (it holds no claude.CutMember) is judged on
// its own tool_input; an Input beside it must be that same text. A cut
// Text is judged on req.Input, the whole tool_input the hook read; when
// the request lacks it, or it is over MaxJudgedInput bytes, the call is
// denied unjudged (why says so) and never judged on the cut copy. An
// Input that is not a JSON object or null, or one beside an uncut Text
// that differs from Text's own, is refused with events.ErrMalformed.
func judged(req HookGateRequest, h hookFields) (json.RawMessage, string, error) {
	cut := len(h.Cut) > 0 && string(h.Cut) != "null"
	if req.Input != "" {
		in := bytes.TrimSpace([]byte(req.Input))
		if !json.Valid(in) || (in[0] != '{' && string(in) != "null") {
			return nil, "", fmt.Errorf("gate request: %w: input: want the tool_input's JSON text, an object or null", events.ErrMalformed)
		}
		if !cut && req.Input != string(h.Input) {
			return nil, "", fmt.Errorf("gate request: %w: input differs from the payload's tool_input, which was not cut", events.ErrMalformed)
		}
	}
	switch {
	case !cut:
		return h.Input, "", nil
	case req.Input == "":
		return h.Input, fmt.Sprintf("the hook payload was cut (over %d bytes) and the request lacks the whole tool input: the gate judges no cut copy", claude.MaxHookSend), nil
	case len(req.Input) > MaxJudgedInput:
		in := json.RawMessage(req.Input)
		return in, (&TooLargeError{Size: len(in), Cap: MaxJudgedInput}).Error(), nil
	}
	return json.RawMessage(req.Input), "", nil
}
