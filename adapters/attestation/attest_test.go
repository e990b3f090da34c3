package attestation

import (
	"encoding/json"
	"path/filepath"
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

// A worker appends only what it caused: an event it signs that claims a
// person, the gate or a hook as its cause is out of its role.
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
	} {
		if got := CausePermitted(tt.role, tt.c); got != tt.want {
			t.Errorf("CausePermitted(%s, %+v) = %v, want %v", tt.role, tt.c, got, tt.want)
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
