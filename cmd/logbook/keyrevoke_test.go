package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/adapters/natslog"
)

// TestKeys_RevokedKeyRefusesAppends revokes, while serve runs, the data
// dir's writer key and then serve's own key. keys show marks the writer
// key revoked; an import signed with it fails (exit 1) naming the key,
// its principal and the revocation's sequence, and appends nothing. A
// hook taken after serve's key was revoked is kept (exit 0), and serve,
// which holds the admin key, says its key was revoked, registers a new
// one and appends the hook. No reader quarantines anything.
func TestKeys_RevokedKeyRefusesAppends(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	logs := serveInProcess(t, data, "--workers", "0", "--reconcile-every", "0", "--fsync", "interval")
	dd := dataDir(data)
	waitServer(t, dd)
	cli(t, data, "import", "claude", filepath.Join("..", "..", "testdata", "claude", "projects"))

	var keys []datadir.KeyLine
	if err := json.Unmarshal([]byte(cli(t, data, "--json", "keys", "show")), &keys); err != nil || len(keys) != 3 {
		t.Fatalf("keys show: %v %+v", err, keys)
	}
	w := keys[1]
	if w.Role != "writer" || w.Registered == 0 || w.Revoked != 0 {
		t.Fatalf("keys show: the writer key %+v, want registered and live", w)
	}
	cli(t, data, "keys", "revoke", "--reason", "test", w.ID)
	if out := cli(t, data, "keys", "show"); !strings.Contains(out, w.ID) || !strings.Contains(out, "REVOKED at seq") {
		t.Fatalf("keys show after the revocation does not mark the writer key:\n%s", out)
	}
	if err := json.Unmarshal([]byte(cli(t, data, "--json", "keys", "show")), &keys); err != nil || keys[1].Revoked == 0 {
		t.Fatalf("keys show --json after the revocation: %v %+v", err, keys)
	}
	rev := keys[1].Revoked

	// A new transcript, signed by the revoked writer key: refused.
	const old, fresh = "5e551011-0000-4000-8000-000000000001", "5e551011-0000-4000-8000-00000000beef"
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "claude", "projects", "-home-user-project", old+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	proj := filepath.Join(t.TempDir(), "projects", "-home-user-project")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, fresh+".jsonl"), []byte(strings.ReplaceAll(string(src), old, fresh)), 0o644); err != nil {
		t.Fatal(err)
	}
	before := lastSeqOf(t, dd)
	out, errb, code := cliExit(t, data, "import", "claude", filepath.Dir(proj))
	if code != 1 || strings.Contains(out, "appended") {
		t.Fatalf("import signed by the revoked writer key: exit %d, want 1:\n%s%s", code, out, errb)
	}
	for _, want := range []string{w.ID, w.Principal, "revoked at seq " + strconv.FormatUint(rev, 10), "keys register"} {
		if !strings.Contains(errb, want) {
			t.Errorf("import's error does not name %q:\n%s", want, errb)
		}
	}
	if after := lastSeqOf(t, dd); after != before {
		t.Errorf("the refused import moved the log from %d to %d", before, after)
	}
	if _, _, code := cliExit(t, data, "session", "show", fresh); code == 0 {
		t.Errorf("session show %s: exit 0 for a session whose import was refused", fresh)
	}

	// serve's own key, revoked by another process while serve runs.
	l := judgedLog(t, dd)
	ks, err := l.Keys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var serveKey string
	for _, k := range ks {
		if strings.HasPrefix(k.Principal, "serve@") && k.Revoked == 0 {
			serveKey = k.ID
		}
	}
	if serveKey == "" {
		t.Fatalf("no live serve key among %+v", ks)
	}
	cli(t, data, "keys", "revoke", "--reason", "test", serveKey)
	if code, errb := runSockHook(t, hookBin(t), data, sockPrompt(1)); code != 0 {
		t.Fatalf("hook: exit %d\n%s", code, errb)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, _, code := cliExit(t, data, "session", "show", sockSession); code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hook taken after serve's key was revoked never went in:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if s := logs.String(); !strings.Contains(s, "its signing key "+serveKey) || !strings.Contains(s, "signing from now on with the new key") {
		t.Errorf("serve did not say its key was revoked and replaced:\n%s", s)
	}
	r := judgedLog(t, dd)
	for _, err := range r.Read(t.Context(), 1) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if qs, n := r.Quarantined(); n != 0 {
		t.Errorf("quarantined %+v: an append signed by a revoked key went in", qs)
	}
}

// TestKeys_EmptyDataDirMakesNoKeys: keys show and checkpoint key refuse
// an empty data dir, as one that does not exist, making nothing there.
func TestKeys_EmptyDataDirMakesNoKeys(t *testing.T) {
	empty := t.TempDir()
	for _, args := range [][]string{{"keys", "show"}, {"checkpoint", "key"}} {
		if _, errb, code := cliExit(t, empty, args...); code != 1 || !strings.Contains(errb, "a mistyped --data") {
			t.Errorf("%s on an empty data dir: exit %d\n%s", strings.Join(args, " "), code, errb)
		}
	}
	if ents, err := os.ReadDir(empty); err != nil || len(ents) != 0 {
		t.Errorf("an empty data dir holds %v after (%v)", ents, err)
	}
}

// judgedLog opens, on the data dir's running serve, a Log that judges
// reads against the data dir's pin.
func judgedLog(t *testing.T, dd dataDir) *natslog.Log {
	t.Helper()
	_, nc := connectAs(t, dd, natslog.RoleWriter)
	cfg, err := dd.dir().AttestConfig(natslog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := natslog.Open(t.Context(), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// lastSeqOf returns the last sequence of the data dir's running serve's log.
func lastSeqOf(t *testing.T, dd dataDir) uint64 {
	t.Helper()
	l, _ := connectAs(t, dd, natslog.RoleWriter)
	seq, err := l.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return seq
}
