package datadir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// TestAdminKey: the admin key and its pin are made once; a data dir
// that holds only the pin has no admin key of its own.
func TestAdminKey(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "data"))
	k, err := d.AdminKey()
	if err != nil {
		t.Fatal(err)
	}
	pin, err := d.Pinned()
	if err != nil || !pin.Equal(k.Public()) {
		t.Fatalf("Pinned: %v, %v: want the admin key's", pin, err)
	}
	again, err := d.AdminKey()
	if err != nil || again.ID != k.ID {
		t.Errorf("second AdminKey: %v, %v: want %s", again, err, k.ID)
	}
	if own, err := d.OwnAdminKey(); err != nil || own == nil || own.ID != k.ID {
		t.Errorf("OwnAdminKey: %v, %v", own, err)
	}
	if err := os.Remove(d.KeyPath("admin.key")); err != nil {
		t.Fatal(err)
	}
	if own, err := d.OwnAdminKey(); err != nil || own != nil {
		t.Errorf("OwnAdminKey with only the pin: %v, %v: want none", own, err)
	}
	if _, err := d.AdminKey(); err == nil {
		t.Errorf("AdminKey with a pin but no key: no error")
	}
	cfg, pinned, err := d.ClusterAttestConfig(natslog.Config{})
	if err != nil || !pinned || cfg.Verifier == nil {
		t.Errorf("ClusterAttestConfig: %v, %v: want the pin's verifier", pinned, err)
	}
}

// TestPrincipalKey: a key is made once with its role; a file of another
// role is refused, naming it.
func TestPrincipalKey(t *testing.T) {
	d := Dir(t.TempDir())
	k, err := d.PrincipalKey("writer.key", attestation.RoleWriter)
	if err != nil || k.Role != attestation.RoleWriter {
		t.Fatalf("PrincipalKey: %v, %v", k, err)
	}
	if _, err := d.PrincipalKey("writer.key", attestation.RoleWorker); err == nil || !strings.Contains(err.Error(), d.KeyPath("writer.key")) {
		t.Errorf("PrincipalKey of another role: %v, want an error naming the file", err)
	}
	for role, want := range map[natslog.Role]string{natslog.RoleServe: "serve.key", natslog.RoleWorker: "worker.key", natslog.RoleReader: ""} {
		k, name, err := d.ClusterKey(role)
		if err != nil || name != want || (want == "") != (k == nil) {
			t.Errorf("ClusterKey(%s): %v, %q, %v: want file %q", role, k, name, err, want)
		}
	}
}

// TestRegisterKeys_ReplacesRevoked: StartSigning refuses a key the log
// revoked, naming it; RegisterKeys replaces the data dir's revoked
// writer key with a new, registered one, with which signing starts.
func TestRegisterKeys_ReplacesRevoked(t *testing.T) {
	d := Dir(filepath.Join(t.TempDir(), "data"))
	s, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: d.Path("jetstream")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Shutdown() })
	cfg, err := d.AttestConfig(natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := natslog.Open(t.Context(), s.Conn(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	serve, err := attestation.NewKey("serve@h", attestation.RoleServe)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.StartSigning(t.Context(), l, serve, true); err != nil {
		t.Fatal(err)
	}
	if err := d.RegisterKeys(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	w, err := d.PrincipalKey("writer.key", attestation.RoleWriter)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := d.AdminKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RevokeKey(t.Context(), admin, w.ID, "test", "h", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := d.StartSigning(t.Context(), l, w, false); !errors.Is(err, natslog.ErrKeyRefused) || !strings.Contains(err.Error(), w.ID) {
		t.Fatalf("StartSigning with the revoked writer key: %v, want ErrKeyRefused naming %s", err, w.ID)
	}
	if err := d.RegisterKeys(t.Context(), l); err != nil {
		t.Fatal(err)
	}
	nw, err := d.PrincipalKey("writer.key", attestation.RoleWriter)
	if err != nil || nw.ID == w.ID {
		t.Fatalf("writer.key after RegisterKeys: %v, %v: want a new key", nw, err)
	}
	if err := d.StartSigning(t.Context(), l, nw, false); err != nil {
		t.Fatalf("StartSigning with the new writer key: %v", err)
	}
}
