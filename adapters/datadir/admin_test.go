package datadir

import (
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
	"github.com/logbook-dev/logbook/events"
)

func TestExisting(t *testing.T) {
	dir := t.TempDir()
	if err := Dir(filepath.Join(dir, "none")).Existing(); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("absent: %v", err)
	}
	if err := Dir(dir).Existing(); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Dir(dir).Existing(); err != nil {
		t.Errorf("with a file: %v", err)
	}
	if err := Dir(filepath.Join(dir, "x")).Existing(); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("a file: %v", err)
	}
}

func TestPin(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "data"))
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	if already, err := d.Pin(pub); err != nil || already {
		t.Fatalf("first Pin = %v, %v", already, err)
	}
	if already, err := d.Pin(pub); err != nil || !already {
		t.Errorf("second Pin = %v, %v; want already", already, err)
	}
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	if _, err := d.Pin(other); err == nil || !strings.Contains(err.Error(), "pins another admin key") {
		t.Errorf("Pin of another key: %v", err)
	}
}

func TestCheckPrincipal(t *testing.T) {
	if err := CheckPrincipal("ops@host"); err != nil {
		t.Errorf("CheckPrincipal(ops@host) = %v", err)
	}
	if err := CheckPrincipal("ops\x1b[31m"); err == nil || !strings.Contains(err.Error(), "at byte 3") {
		t.Errorf("CheckPrincipal with ESC = %v", err)
	}
}

func TestIsKeyID(t *testing.T) {
	for s, want := range map[string]bool{"0123456789abcdef": true, "0123456789ABCDEF": false, "0123": false, "0123456789abcdeg": false} {
		if got := IsKeyID(s); got != want {
			t.Errorf("IsKeyID(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestHasData(t *testing.T) {
	d := Dir(t.TempDir())
	if d.HasData() {
		t.Error("empty dir HasData")
	}
	if err := os.Mkdir(d.Path("jetstream"), 0o700); err != nil {
		t.Fatal(err)
	}
	if !d.HasData() {
		t.Error("dir with jetstream/ has no data")
	}
}

// TestRevoke_RefusesWithoutThePin: a revocation signed by an admin key
// the log's Verifier does not pin (here: none pinned) appends nothing.
func TestRevoke_RefusesWithoutThePin(t *testing.T) {
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	l, err := natslog.Open(t.Context(), srv.Conn(), natslog.Config{Registry: events.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := attestation.NewKey("admin", attestation.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	d := Dir(t.TempDir())
	err = d.Revoke(t.Context(), l, admin, "0123456789abcdef", "test", "host", time.Unix(0, 0))
	if err == nil || !strings.Contains(err.Error(), "does not pin the admin key "+admin.ID) {
		t.Fatalf("Revoke = %v, want a refusal naming the pin", err)
	}
	if seq, err := l.LastSeq(t.Context()); err != nil || seq != 0 {
		t.Errorf("log at seq %d (%v) after a refused revocation, want 0", seq, err)
	}
}

// TestForeignError: a directory holding only what Logbook never writes is
// refused, naming what it holds; a new, empty or Logbook directory, or
// one with any of Logbook's own names (a policy.toml put there first),
// is not.
func TestForeignError(t *testing.T) {
	dir := t.TempDir()
	d := Dir(filepath.Join(dir, "new"))
	if err := d.ForeignError(); err != nil {
		t.Errorf("a new dir: %v", err)
	}
	if err := os.Mkdir(string(d), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := d.ForeignError(); err != nil {
		t.Errorf("an empty dir: %v", err)
	}
	for _, n := range []string{"notes.txt", "src", ".git", "go.mod", "main.go"} {
		if err := os.WriteFile(d.Path(n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	err := d.ForeignError()
	if err == nil || !strings.Contains(err.Error(), "holds files that are not Logbook's (.git, go.mod, main.go, …) and none that are") {
		t.Errorf("a project's dir: %v", err)
	}
	for _, n := range []string{"policy.toml", "creds-reader.json"} {
		if err := os.WriteFile(d.Path(n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := d.ForeignError(); err != nil {
			t.Errorf("with %s: %v", n, err)
		}
		os.Remove(d.Path(n))
	}
}
