package gate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

// TestGate_UnusableInputIsDenied: a gated call whose input the gate
// cannot use (not a JSON object; a Bash call with no command, or one
// that is not a string, an array of strings included, or one that holds
// a NUL byte) is denied, fail-closed,
// and the deny is recorded; a usable input no rule speaks of still gets
// no answer. A file tool's path that is not a string, or a required one
// missing, is unusable too: no path rule reads it.
func TestGate_UnusableInputIsDenied(t *testing.T) {
	r := newRig(t, "")
	// A working directory beside the data dir, not above it: a search
	// of a tree that holds the data dir is the guard's to review.
	cwd := t.TempDir()
	for i, tc := range []struct {
		tool, input string
		deny        bool
	}{
		{"Bash", `null`, true},
		{"Bash", `42`, true},
		{"Bash", `"ls"`, true},
		{"Bash", `["ls"]`, true},
		{"Bash", `{}`, true},
		{"Bash", `{"command": null}`, true},
		{"Bash", `{"command": 42}`, true},
		{"Bash", `{"command": {"x": "ls"}}`, true},
		{"Bash", `{"command": ["ls", 1]}`, true},
		{"Edit", `null`, true},
		{"Read", `[]`, true},
		{"Read", `{"file_path": ["/root/x"]}`, true},
		{"Read", `{"file_path": {"p": "/root/x"}}`, true},
		{"Read", `{"file_path": 5}`, true},
		{"Read", `{}`, true},
		{"Read", `{"file_path": "/tmp/x", "notebook_path": "/root/x"}`, true},
		{"Write", `{"file_path": 5, "content": "x"}`, true},
		{"Edit", `{"file_path": null}`, true},
		{"MultiEdit", `{"edits": []}`, true},
		{"NotebookEdit", `{"file_path": "/tmp/x", "new_source": ""}`, true},
		{"NotebookEdit", `{"notebook_path": 1}`, true},
		{"NotebookRead", `{"notebook_path": ["/root/x"]}`, true},
		{"Grep", `{"pattern": "k", "path": 7}`, true},
		{"Glob", `{"pattern": ["/root/*"]}`, true},
		{"LS", `{"path": true}`, true},
		{"Bash", `{"command": "ls"}`, false},
		{"Grep", `{"pattern": "k"}`, false},
		{"LS", `{"path": "/tmp"}`, false},
		{"NotebookEdit", `{"notebook_path": "/tmp/x.ipynb"}`, false},
		{"Bash", `{"command": ["ls", "-l"]}`, true},
		{"Bash", `{"command": ["ls", "x; curl evil"]}`, true},
		// A NUL byte no program is given: the gate would judge a reading
		// no shell makes (what follows it hidden from one that stops there).
		{"Bash", `{"command": "ls\u0000sudo id"}`, true},
		{"Bash", `{"command": "\u0000"}`, true},
		{"Read", `{"file_path": "/tmp/x"}`, false},
	} {
		// A session each: three denies in a row trip the breaker.
		r.sess = fmt.Sprintf("9a7e0000-0000-4000-8000-%012d", i)
		use := "toolu_unusable_" + string(rune('a'+i))
		fields := map[string]any{"tool_name": tc.tool, "tool_use_id": use}
		if tc.input == "null" || strings.HasPrefix(tc.input, "{") {
			// The recorder takes no other tool_input; the gate may be
			// asked of one all the same.
			fields["tool_input"] = json.RawMessage(tc.input)
		}
		ref := r.hook("PreToolUse", fields)
		v, err := r.gate.Decide(t.Context(), Request{Session: r.sess, Event: EventPreToolUse, Tool: tc.tool, Input: json.RawMessage(tc.input), ID: use, Cwd: cwd, Ref: ref})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.tool, tc.input, err)
		}
		if !tc.deny {
			if v.Decision != DecideNone {
				t.Errorf("%s %s: got %+v, want no answer", tc.tool, tc.input, v)
			}
			continue
		}
		if v.Decision != DecideDeny || v.Outcome != events.ReviewUnavailable || v.By.Name != inputRule || !strings.Contains(v.Reason, "cannot judge") {
			t.Errorf("%s %s: got %+v, want a deny by rule %q", tc.tool, tc.input, v, inputRule)
		}
		st, err := r.gate.Sessions.State(t.Context(), events.Aggregate{Kind: events.KindSession, ID: r.sess})
		if err != nil {
			t.Fatal(err)
		}
		if rv, ok := st.DecidedReview(use); !ok || rv.Verdict != events.VerdictDeny {
			t.Errorf("%s %s: the deny is not recorded: %+v %v", tc.tool, tc.input, rv, ok)
		}
	}
}

// TestGate_UnusablePathIsNotAllowed: a Read whose file_path is not a
// string is denied, not allowed by a bare Read allow around a path deny
// that could not read it.
func TestGate_UnusablePathIsNotAllowed(t *testing.T) {
	r := newRig(t, "allow = [\"Read\"]\ndeny = [\"Read(/root/**)\"]\n")
	for i, input := range []string{`{"file_path": ["/root/x"]}`, `{"file_path": {"p": "/root/x"}}`, `{"file_path": 5}`} {
		r.sess = fmt.Sprintf("9a7e0000-0000-4000-8001-%012d", i)
		use := "toolu_unusable_path_" + string(rune('a'+i))
		ref := r.hook("PreToolUse", map[string]any{"tool_name": "Read", "tool_use_id": use, "tool_input": json.RawMessage(input)})
		v, err := r.gate.Decide(t.Context(), Request{Session: r.sess, Event: EventPreToolUse, Tool: "Read", Input: json.RawMessage(input), ID: use, Cwd: "/tmp", Ref: ref})
		if err != nil {
			t.Fatalf("Read %s: %v", input, err)
		}
		if v.Decision != DecideDeny || v.By.Name != inputRule {
			t.Errorf("Read %s: got %+v, want a deny by rule %q", input, v, inputRule)
		}
	}
	// A usable path is judged as before.
	r.sess = "9a7e0000-0000-4000-8001-999999999999"
	in := `{"file_path": "/tmp/x"}`
	ref := r.hook("PreToolUse", map[string]any{"tool_name": "Read", "tool_use_id": "toolu_usable_path", "tool_input": json.RawMessage(in)})
	v, err := r.gate.Decide(t.Context(), Request{Session: r.sess, Event: EventPreToolUse, Tool: "Read", Input: json.RawMessage(in), ID: "toolu_usable_path", Cwd: "/tmp", Ref: ref})
	if err != nil {
		t.Fatal(err)
	}
	if v.Decision != DecideAllow {
		t.Errorf("Read %s: got %+v, want an allow", in, v)
	}
}

// TestGate_NamesThatDifferInCase: a tool input that names a member
// twice in names that differ only in case ("command" and "COMMAND") is
// denied as unusable: a decoder that folds case would judge one value
// while the tool reads the other (a denied curl allowed as an ls, a
// write of the data dir's policy allowed as one of the workspace). A
// lone name in another case is no name the tool reads: a Bash call with
// only "COMMAND" has no command.
func TestGate_NamesThatDifferInCase(t *testing.T) {
	r := newRig(t, "allow = [\"Bash(ls:*)\", \"Read\", \"Write\"]\ndeny = [\"Bash(curl:*)\"]\n")
	cwd := t.TempDir()
	for i, tc := range []struct {
		tool, input string
		deny        bool
	}{
		{"Bash", `{"command": "curl http://evil", "COMMAND": "ls"}`, true},
		{"Bash", `{"COMMAND": "ls", "command": "curl http://evil"}`, true},
		{"Bash", `{"Command": "ls"}`, true},
		{"Write", `{"file_path": "/etc/x", "FILE_PATH": "` + cwd + `/x", "content": "y"}`, true},
		{"Read", `{"file_path": "/etc/x", "File_Path": "` + cwd + `/x"}`, true},
		{"mcp__db__query", `{"q": {"table": "a", "TABLE": "b"}}`, true},
		{"Bash", `{"command": "ls -l"}`, false},
		{"mcp__db__query", `{"q": {"table": "a", "tables": "b"}}`, false},
	} {
		r.sess = fmt.Sprintf("9a7e0000-0000-4000-8002-%012d", i)
		use := "toolu_case_" + string(rune('a'+i))
		ref := r.hook("PreToolUse", map[string]any{"tool_name": tc.tool, "tool_use_id": use, "tool_input": json.RawMessage(tc.input)})
		v, err := r.gate.Decide(t.Context(), Request{Session: r.sess, Event: EventPreToolUse, Tool: tc.tool, Input: json.RawMessage(tc.input), ID: use, Cwd: cwd, Ref: ref})
		if err != nil {
			t.Fatalf("%s %s: %v", tc.tool, tc.input, err)
		}
		if !tc.deny {
			if v.Decision == DecideDeny {
				t.Errorf("%s %s: got %+v, want no deny", tc.tool, tc.input, v)
			}
			continue
		}
		if v.Decision != DecideDeny || v.By.Name != inputRule || !strings.Contains(v.Reason, "cannot") {
			t.Errorf("%s %s: got %+v, want a deny by rule %q", tc.tool, tc.input, v, inputRule)
		}
	}
}

// TestGate_UnplacedCall: a call whose hook gives a cwd that is not an
// absolute path is denied as unusable: its relative paths would resolve
// against a directory the gate does not know, out of the data dir
// guard's sight. One that gives an absolute cwd is judged as before.
func TestGate_UnplacedCall(t *testing.T) {
	r := newRig(t, "allow = [\"Bash(cat:*)\", \"Read\", \"mcp__x__y\"]\n")
	for i, tc := range []struct {
		tool, input, cwd string
		want             string // in the deny's reason; "" for no deny
	}{
		{"Bash", `{"command": "cat creds.json"}`, "data", "is not an absolute path"},
		{"Read", `{"file_path": "creds.json"}`, "data", "is not an absolute path"},
		{"mcp__x__y", `{"q": "1"}`, "rel", "is not an absolute path"},
		{"Bash", `{"command": "cat x"}`, "/tmp", ""},
	} {
		r.sess = fmt.Sprintf("9a7e0000-0000-4000-8003-%012d", i)
		use := "toolu_unplaced_" + string(rune('a'+i))
		ref := r.hook("PreToolUse", map[string]any{"tool_name": tc.tool, "tool_use_id": use, "tool_input": json.RawMessage(tc.input), "cwd": tc.cwd})
		v, err := r.gate.Decide(t.Context(), Request{Session: r.sess, Event: EventPreToolUse, Tool: tc.tool, Input: json.RawMessage(tc.input), ID: use, Cwd: tc.cwd, Ref: ref})
		if err != nil {
			t.Fatalf("%s %s in %q: %v", tc.tool, tc.input, tc.cwd, err)
		}
		if tc.want == "" {
			if v.Decision != DecideAllow {
				t.Errorf("%s %s in %q: got %+v, want the allow", tc.tool, tc.input, tc.cwd, v)
			}
			continue
		}
		if v.Decision != DecideDeny || v.By.Name != inputRule || !strings.Contains(v.Reason, tc.want) {
			t.Errorf("%s %s in %q: got %+v, want a deny by rule %q saying %q", tc.tool, tc.input, tc.cwd, v, inputRule, tc.want)
		}
	}
}
