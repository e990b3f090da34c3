package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logbook-dev/logbook/adapters/attestation"
	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// TestKeys_Commands runs `logbook keys` on data dirs of the embedded
// log: the admin key is made once; a pin is written once and another
// refused; keys show refuses a data dir that does not exist; register
// refuses bad input before it opens the log, and a data dir without the
// admin key; a key registered with the admin's data dir is registered
// once; revoke takes only a key id.
func TestKeys_Commands(t *testing.T) {
	admin := t.TempDir()
	var adm struct{ ID, Public string }
	if err := json.Unmarshal([]byte(cli(t, admin, "--json", "keys", "admin")), &adm); err != nil {
		t.Fatal(err)
	}
	if again := cli(t, admin, "keys", "admin"); again != "admin "+adm.ID+" "+adm.Public+"\n" {
		t.Fatalf("keys admin again: %q, want the same key", again)
	}
	host := filepath.Join(t.TempDir(), "host")
	if out := cli(t, host, "keys", "pin", adm.Public); !strings.Contains(out, "pinned admin key "+adm.ID) {
		t.Fatalf("keys pin: %s", out)
	}
	if out := cli(t, host, "keys", "pin", adm.Public); !strings.Contains(out, "pinned already") {
		t.Fatalf("keys pin again: %s", out)
	}
	other, err := attestation.NewKey("x", attestation.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "typo")
	for _, c := range []struct {
		name string
		data string
		args []string
		code int // cliExit's: 1 for any error, usage errors included
		want string
	}{
		{"another pin", host, []string{"keys", "pin", other.PublicText()}, 1, "pins another admin key"},
		{"pin not a key", host, []string{"keys", "pin", "bm90IGEga2V5"}, 1, "want standard base64 of 32 bytes"},
		{"show a missing dir", missing, []string{"keys", "show"}, 1, "does not exist"},
		{"register no role", admin, []string{"keys", "register", "--principal", "p", other.PublicText()}, 1, "--role"},
		{"register admin role", admin, []string{"keys", "register", "--role", "admin", "--principal", "p", other.PublicText()}, 1, "want serve, writer or worker"},
		{"register no principal", admin, []string{"keys", "register", "--role", "writer", other.PublicText()}, 1, "--principal"},
		{"register bad key", admin, []string{"keys", "register", "--role", "writer", "--principal", "p", "xyz"}, 1, "public key"},
		{"register without the admin key", host, []string{"keys", "register", "--role", "writer", "--principal", "p", other.PublicText()}, 1, "no admin key here"},
		{"register in a missing dir", missing, []string{"keys", "register", "--role", "writer", "--principal", "p", other.PublicText()}, 1, "does not exist"},
		{"revoke not an id", admin, []string{"keys", "revoke", "--reason", "r", "signing"}, 1, "16 hex characters"},
		{"revoke no reason", admin, []string{"keys", "revoke", "0123456789abcdef"}, 1, "--reason"},
	} {
		out, errb, code := cliExit(t, c.data, c.args...)
		if code != c.code || !strings.Contains(errb, c.want) {
			t.Errorf("%s: exit %d, want %d with %q:\n%s%s", c.name, code, c.code, c.want, out, errb)
		}
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("a command made the mistyped data dir %s: %v", missing, err)
	}
	var keys []datadir.KeyLine
	if err := json.Unmarshal([]byte(cli(t, host, "--json", "keys", "show")), &keys); err != nil || len(keys) != 3 {
		t.Fatalf("keys show: %v %+v", err, keys)
	}
	// On the data dir's own server the cluster's serve key is not the
	// one serve signs with: said, not left to look like a key unused.
	if out := cli(t, host, "keys", "show"); !strings.Contains(out, "note: the serve key above is the one serve signs with on a cluster (--nats-url)") {
		t.Errorf("keys show on a data dir of its own:\n%s", out)
	}
	w := keys[1]
	if w.Role != attestation.RoleWriter {
		t.Fatalf("keys show: second key %+v, want the writer's", w)
	}
	if out := cli(t, admin, "keys", "register", "--role", "writer", "--principal", w.Principal, w.Public); !strings.Contains(out, "registered key "+w.ID) {
		t.Fatalf("keys register: %s", out)
	}
	if out := cli(t, admin, "keys", "register", "--role", "writer", "--principal", w.Principal, w.Public); !strings.Contains(out, "registered already") {
		t.Fatalf("keys register again: %s", out)
	}
	if _, errb, code := cliExit(t, admin, "keys", "register", "--role", "worker", "--principal", w.Principal, w.Public); code != 1 || !strings.Contains(errb, "registered once") {
		t.Fatalf("keys register with another role: exit %d\n%s", code, errb)
	}
	if out := cli(t, admin, "keys", "revoke", "--reason", "host retired", w.ID); !strings.Contains(out, "revoked key "+w.ID) {
		t.Fatalf("keys revoke: %s", out)
	}
	if _, errb, code := cliExit(t, admin, "keys", "revoke", "--reason", "again", w.ID); code != 1 || !strings.Contains(errb, "revoked already") {
		t.Fatalf("keys revoke again: exit %d\n%s", code, errb)
	}
}

// TestServe_RevokesItsEarlierKey starts serve three times on one data
// dir: each start signs with a key of its own and revokes the key of the
// start before, so only the last serve's key is live; the data dir's
// local, writer and worker keys stay live.
func TestServe_RevokesItsEarlierKey(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	for range 3 {
		ctx, stop := context.WithCancel(t.Context())
		served := make(chan error, 1)
		var logs syncBuffer
		go func() {
			served <- runCLI(ctx, []string{"--data", data, "serve", "--workers", "0", "--reconcile-every", "0", "--fsync", "interval"}, strings.NewReader(""), &logs, &logs)
		}()
		waitServer(t, dataDir(data))
		stop()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("serve: %v\n%s", err, logs.String())
		}
	}
	dd := dataDir(data)
	srv, err := natslog.StartEmbedded(t.Context(), natslog.EmbeddedConfig{StoreDir: dd.path("jetstream")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown() })
	cfg, err := dd.dir().AttestConfig(natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := natslog.Open(t.Context(), srv.Conn(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	keys, err := l.Keys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var serves, live []string
	for _, k := range keys {
		if strings.HasPrefix(k.Principal, "serve@") {
			serves = append(serves, k.ID)
			if k.Revoked == 0 {
				live = append(live, k.ID)
			}
		} else if k.Revoked != 0 {
			t.Errorf("key %s (%s, %s) revoked", k.ID, k.Principal, k.Role)
		}
	}
	if len(serves) != 3 || len(live) != 1 || live[0] != serves[2] {
		t.Fatalf("serve keys %v, live %v: want 3, only the last live\n%+v", serves, live, keys)
	}
}

// TestKeysRegister_RefusesControlsInPrincipal: a principal is printed in
// every audit line of an event its key signed, so keys register refuses
// one holding a control character, separator or bidirectional mark as a
// usage error (exit 2) naming it and its byte, before it opens anything.
func TestKeysRegister_RefusesControlsInPrincipal(t *testing.T) {
	admin := t.TempDir()
	cli(t, admin, "keys", "admin")
	other, err := attestation.NewKey("x", attestation.RoleWriter)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ principal, want string }{
		{"writer@host\n#9 review.decided", `\n at byte 11`},
		{"a\x1b[2Kb", `\x1b at byte 1`},
		{"ab\rc", `\r at byte 2`},
		{"a\u2028b", `\u2028 at byte 1`},
		{"a\u202eb", `\u202e at byte 1`},
		{"a\u0085b", `\u0085 at byte 1`},
	} {
		var out, errb bytes.Buffer
		err := runCLI(t.Context(), []string{"--data", admin, "keys", "register", "--role", "writer", "--principal", c.principal, other.PublicText()}, bytes.NewReader(nil), &out, &errb)
		if _, ok := errors.AsType[*usageError](err); !ok || exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Errorf("register --principal %q: %v (exit %d), want a usage error (exit 2) naming %s", c.principal, err, exitCode(err), c.want)
		}
	}
}
