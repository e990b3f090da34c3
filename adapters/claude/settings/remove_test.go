package settings

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRemove takes out of a file Edit wired exactly the entries Edit
// added (Added): the user's hooks, an entry the user put into one of
// Logbook's groups and an entry the user edited stay; the edited one is
// named as missing.
func TestRemove(t *testing.T) {
	const user = `{"model": "opus", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]}}`
	wires := InstallWires("", "", true, 10*time.Second)
	added := Added(wires)
	if len(added) != len(Events()) {
		t.Fatalf("Added: %d entries, want one per event (%d)", len(added), len(Events()))
	}
	wired, err := Edit([]byte(user), wires, "")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("AllOfThem", func(t *testing.T) {
		got, missing, err := Remove(wired, added)
		if err != nil || len(missing) != 0 {
			t.Fatalf("Remove: missing %v, %v", missing, err)
		}
		if !jsonEqual(got, []byte(user)) {
			t.Errorf("Remove left:\n%s\nwant the user's settings:\n%s", got, user)
		}
		// Nothing of Logbook's left: removing again finds none and
		// returns the text as it is.
		again, missing, err := Remove(got, added)
		if err != nil || len(missing) != len(added) || string(again) != string(got) {
			t.Errorf("Remove again: %d missing, changed %v, %v; want all missing, unchanged", len(missing), string(again) != string(got), err)
		}
	})

	t.Run("UserEntries", func(t *testing.T) {
		var doc struct {
			Model string                       `json:"model"`
			Hooks map[string][]json.RawMessage `json:"hooks"`
		}
		if err := json.Unmarshal(wired, &doc); err != nil {
			t.Fatal(err)
		}
		// Into Logbook's SessionEnd group, a hook of the user's; the
		// gate's PreToolUse entry given another timeout by the user.
		doc.Hooks["SessionEnd"][0] = json.RawMessage(`{"hooks": [{"type": "command", "command": ` + quote(wires.Recorder) + `}, {"type": "command", "command": "say bye"}]}`)
		doc.Hooks["PreToolUse"][0] = json.RawMessage(`{"matcher": "*", "hooks": [{"type": "command", "command": ` + quote(wires.Gate) + `, "timeout": 600}]}`)
		edited, _ := json.Marshal(doc)
		got, missing, err := Remove(edited, added)
		if err != nil {
			t.Fatal(err)
		}
		want := []Hook{{Event: "PreToolUse", Matcher: "*", Command: wires.Gate, Timeout: GateTimeout(10 * time.Second)}}
		if d := cmp.Diff(want, missing); d != "" {
			t.Errorf("missing (-want +got):\n%s", d)
		}
		s := string(got)
		for _, keep := range []string{`"say bye"`, `"notify-send done"`, `"timeout": 600`, `"model": "opus"`} {
			if !strings.Contains(s, keep) {
				t.Errorf("Remove took out %s:\n%s", keep, s)
			}
		}
		if n := strings.Count(s, quote(wires.Recorder)); n != 0 {
			t.Errorf("%d of the recorder's entries left:\n%s", n, s)
		}
	})

	t.Run("NotSettings", func(t *testing.T) {
		_, _, err := Remove([]byte("{\n  \"hooks\": [,]\n}"), added)
		if err == nil || !strings.Contains(err.Error(), "not valid JSON at line 2, column 13") {
			t.Errorf("Remove of bad JSON: %v; want line 2, column 13", err)
		}
	})
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
