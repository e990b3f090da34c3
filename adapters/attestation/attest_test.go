package attestation

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/events"
)

func TestPermitted(t *testing.T) {
	tests := []struct {
		role Role
		typ  string
		want bool
	}{
		{RoleAdmin, "key.registered", true},
		{RoleAdmin, "signing.began", true},
		{RoleAdmin, "review.decided", false},
		{RoleServe, "review.decided", true},
		{RoleServe, "key.registered", false},
		{RoleServe, "signing.began", false},
		{RoleWriter, "review.decided", false},
		{RoleWriter, "review.breaker_reset", false},
		{RoleWriter, "review.requested", true},
		{RoleWriter, "obs.claude.line", true},
		{RoleWriter, "key.revoked", false},
		{RoleWorker, "command.exited", true},
		{RoleWorker, "session.started", true},
		{RoleWorker, "review.decided", false},
		{RoleWorker, "workspace.ready", false},
		{Role("nobody"), "session.started", false},
		{RoleServe, "", false},
		{RoleWriter, "", false},
	}
	for _, tt := range tests {
		if got := Permitted(tt.role, tt.typ); got != tt.want {
			t.Errorf("Permitted(%s, %s) = %v, want %v", tt.role, tt.typ, got, tt.want)
		}
	}
}

// Each cause is its appenders' (Causes): a worker appends only what it
// caused, a writer no cause of serve's own actors (system/recover,
// restart, session seen, reconcile, the gate, the notifier, the
// reconciler) nor a worker's, and a cause no row names is serve's.
func TestCausePermitted(t *testing.T) {
	for _, tt := range []struct {
		role Role
		c    *events.Cause
		want bool
	}{
		{RoleWorker, &events.Cause{Kind: "worker", Event: "command.exited", Ref: "c1"}, true},
		{RoleWorker, nil, true},
		{RoleWorker, &events.Cause{Kind: "cli", Event: "session.end", Ref: "r"}, false},
		{RoleWorker, &events.Cause{Kind: "gate", Event: "review.allow", Ref: "r"}, false},
		{RoleWorker, &events.Cause{Kind: "hook", Event: "Stop", Ref: "r"}, false},
		{RoleServe, &events.Cause{Kind: "cli", Event: "session.end", Ref: "r"}, true},
		{RoleWriter, &events.Cause{Kind: "hook", Event: "Stop", Ref: "r"}, true},
		{RoleWriter, &events.Cause{Kind: "transcript", Event: "assistant", Ref: "r"}, true},
		{RoleWriter, &events.Cause{Kind: "cli", Event: "exec", Ref: "r"}, true},
		{RoleWriter, &events.Cause{Kind: "system", Event: "command.requested", Ref: "r"}, true},
		{RoleWriter, &events.Cause{Kind: "system", Event: "recover", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "system", Event: "restart", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "system", Event: "session seen", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "system", Event: "reconcile", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "system", Event: "other", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "gate", Event: "PreToolUse", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "notify", Event: "review.requested", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "reconciler", Event: "tick", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "worker", Event: "command.exited", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "session", Event: "session.ended", Ref: "r"}, false},
		{RoleWriter, &events.Cause{Kind: "bogus", Event: "x", Ref: "r"}, false},
		{RoleWriter, nil, true},
		{RoleWorker, &events.Cause{Kind: "session", Event: "session.ended", Ref: "r"}, true},
		{RoleWorker, &events.Cause{Kind: "system", Event: "restart", Ref: "r"}, false},
		{RoleServe, &events.Cause{Kind: "system", Event: "restart", Ref: "r"}, true},
		{RoleServe, &events.Cause{Kind: "worker", Event: "command.exited", Ref: "r"}, true},
		{RoleServe, &events.Cause{Kind: "bogus", Event: "x", Ref: "r"}, true},
		{RoleAdmin, &events.Cause{Kind: "cli", Event: "x", Ref: "r"}, false},
		{RoleAdmin, nil, true},
	} {
		if got := CausePermitted(tt.role, tt.c); got != tt.want {
			t.Errorf("CausePermitted(%s, %+v) = %v, want %v", tt.role, tt.c, got, tt.want)
		}
	}
}

// The actors of serve's reconciler and notifier, of the workers and of
// the admin's key events are their roles' alone (Actors); any other is
// any role's.
func TestActorRefusal(t *testing.T) {
	for _, tt := range []struct {
		role  Role
		actor string
		want  bool // refused
	}{
		{RoleServe, ActorReconciler, false},
		{RoleWriter, ActorReconciler, true},
		{RoleWriter, "logbook-notify", true},
		{RoleWorker, "logbook-notify", true},
		{RoleWriter, "logbook-worker", true},
		{RoleWorker, "logbook-worker", false},
		{RoleServe, "logbook-worker", false},
		{RoleServe, "admin", true},
		{RoleAdmin, "admin", false},
		{RoleWriter, "claude-code", false},
		{RoleWriter, "person:alice@h", false},
		{RoleWorker, "", false},
	} {
		if got := ActorRefusal(tt.role, "p", tt.actor); (got != "") != tt.want {
			t.Errorf("ActorRefusal(%s, %q) = %q, want refused %v", tt.role, tt.actor, got, tt.want)
		}
	}
}

func TestKeyFileRoundTrip(t *testing.T) {
	k, err := NewKey("alice@h", RoleWriter)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.ID) != 16 || strings.ToLower(k.ID) != k.ID {
		t.Errorf("key id %q: want 16 lowercase hex characters", k.ID)
	}
	path := filepath.Join(t.TempDir(), "keys", "writer.key")
	if err := WriteKey(path, k); err != nil {
		t.Fatal(err)
	}
	back, err := ReadKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.ID != k.ID || back.Principal != k.Principal || back.Role != k.Role || !back.Private.Equal(k.Private) {
		t.Errorf("round trip: got %+v, want %+v", back, k)
	}
	b, _ := json.Marshal(k)
	for _, bad := range []string{
		strings.Replace(string(b), k.ID, "0000000000000000", 1),
		strings.Replace(string(b), `"writer"`, `"boss"`, 1),
		`{"key":"x","seed":"AAAA","principal":"p","role":"serve"}`,
	} {
		var k2 Key
		if err := json.Unmarshal([]byte(bad), &k2); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
}

func TestSignedForm(t *testing.T) {
	got := string(Signed("lb.ev.session.a", "", []byte(`{"id":"x"}`)))
	want := "logbook event signature v1\nlb.ev.session.a\n-\n{\"id\":\"x\"}"
	if got != want {
		t.Errorf("Signed = %q, want %q", got, want)
	}
	if string(Signed("s", "12", nil)) != "logbook event signature v1\ns\n12\n" {
		t.Errorf("Signed with expect 12 = %q", Signed("s", "12", nil))
	}
}

// causeLiteral matches a cause written out in the code: its kind and
// event when both are string literals.
var causeLiteral = regexp.MustCompile(`Cause\{\s*Kind:\s*"([^"]+)",\s*Event:\s*"([^"]*)"`)

// Every cause the module's code writes out (outside tests and the
// benchmarks' and checkers' own logs) has its row in Causes: one whose
// kind no row names would be quarantined as out of every role but
// serve's, and for kind system each event has its own row.
func TestCauses_NameEveryCauseInTheCode(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch rel {
			case "testdata", filepath.Join("cmd", "logbook", "internal", "bench"), filepath.Join("adapters", "natslog", "lincheck"), filepath.Join("projections", "synth"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range causeLiteral.FindAllStringSubmatch(string(b), -1) {
			found++
			kind, event := m[1], m[2]
			named := false
			for _, r := range Causes {
				if r.Kind == kind && (r.Event == event || r.Event == "" && kind != "system") {
					named = true
				}
			}
			if !named {
				t.Errorf("%s: cause %s/%s has no row in Causes", rel, kind, event)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < 10 {
		t.Fatalf("found %d causes written out in the code; the pattern no longer matches how they are written", found)
	}
}
