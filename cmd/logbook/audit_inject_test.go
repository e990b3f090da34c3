package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/replay"
)

// TestAudit_FieldsCannotForgeLines feeds a gated hook a tool_name that
// holds newlines, a carriage return and an escape sequence and a whole
// fake verdict line: the log keeps what was said, but audit's text prints
// every field on its own event's line, escaped, so no line of it begins
// with a sequence the log did not assign, and no raw control reaches the
// terminal. events tail and replay --dump print it escaped too.
func TestAudit_FieldsCannotForgeLines(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	const sid = "1a1ec700-0000-4000-8000-00000000a0d1"
	r := newGateRig(t, sid, nil)
	fake := "Bash\n#250 2026-12-02T08:01:31.000000Z review.decided entry=tu9 verdict=allow outcome=approved  cause=person/cli ref=01M\r\x1b[2K\u2028\u202e\n"
	r.hook(true, map[string]any{"hook_event_name": "PreToolUse", "tool_name": fake, "tool_use_id": "tu9", "tool_input": map[string]any{"command": "rm -rf /"}})
	for _, args := range [][]string{{"events", "tail"}, {"replay", "--dump"}} {
		out := cli(t, r.data, args...)
		for line := range strings.Lines(out) {
			if strings.HasPrefix(strings.TrimLeft(line, " "), "#250 ") || strings.ContainsAny(strings.TrimSuffix(line, "\n"), "\r\n\x1b\u2028\u202e") {
				t.Errorf("%s: line %q is injected or holds a raw control:\n%s", strings.Join(args, " "), line, out)
			}
		}
	}
	out := cli(t, r.data, "audit", sid)
	if strings.Contains(out, "#250 ") && !strings.Contains(out, `\n#250 `) {
		t.Errorf("audit printed the injected line raw:\n%s", out)
	}
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, "    ") {
			t.Errorf("audit line %q does not begin an event or continue one:\n%s", line, out)
		}
		if strings.HasPrefix(line, "#250 ") {
			t.Errorf("audit line %q is the injected one", line)
		}
		if strings.ContainsAny(strings.TrimSuffix(line, "\n"), "\r\n\x1b\u2028\u2029\u202e") {
			t.Errorf("audit line %q holds a raw control", line)
		}
	}
}

// TestAudit_NamesTheSigner: every item of an audit names who signed the
// stored event, as the log's verifier judged it: in text
// signed=<principal>/<role> (key <id>), in JSON signed, key_id, principal
// and role. serve decides what a hook observed and the gate's verdict:
// each is signed by serve's key, none by the writer key keys show prints.
func TestAudit_NamesTheSigner(t *testing.T) {
	t.Parallel() // its own data dir, processes and ports: beside the other slow tests
	const sid = "1a1ec700-0000-4000-8000-00000000a0d2"
	r := newGateRig(t, sid, nil)
	r.bash("tu1", "rm -rf /") // no verdict within 3s: timed_out
	var keys []datadir.KeyLine
	if err := json.Unmarshal([]byte(cli(t, r.data, "--json", "keys", "show")), &keys); err != nil {
		t.Fatal(err)
	}
	var writer datadir.KeyLine
	for _, k := range keys {
		if k.Role == attestation.RoleWriter {
			writer = k
		}
	}
	var items []replay.Item
	if err := json.Unmarshal([]byte(cli(t, r.data, "--json", "audit", sid)), &items); err != nil {
		t.Fatal(err)
	}
	text := cli(t, r.data, "audit", sid)
	lines := map[uint64]string{}
	for line := range strings.Lines(text) {
		var seq uint64
		if _, err := fmt.Sscanf(line, "#%d ", &seq); err == nil {
			lines[seq] = line
		}
	}
	var decided bool
	for _, it := range items {
		if it.Signed != "attested" || len(it.KeyID) != 16 || it.Principal == "" || it.Role == "" {
			t.Errorf("item #%d %s: signed %q key %q principal %q role %q; want an attested signer", it.Seq, it.Type, it.Signed, it.KeyID, it.Principal, it.Role)
			continue
		}
		if want := fmt.Sprintf("  signed=%s/%s (key %s)  ", it.Principal, it.Role, it.KeyID); !strings.Contains(lines[it.Seq], want) {
			t.Errorf("audit line of #%d is %q; want it to hold %q", it.Seq, lines[it.Seq], want)
		}
		if it.Role != "serve" || it.KeyID == writer.ID {
			t.Errorf("item #%d %s: signed by %s/%s (key %s); want serve's key", it.Seq, it.Type, it.Principal, it.Role, it.KeyID)
		}
		decided = decided || it.Type == "review.decided"
	}
	if !decided {
		t.Errorf("no review.decided in the audit:\n%s", text)
	}
}
