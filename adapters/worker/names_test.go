package worker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/adapters/redact"
	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// TestClient_RefusesSecretNames: a request whose command id, session,
// workspace or cwd a redaction rule matches is refused by the Client,
// naming the field and the rule and never the value, with nothing
// appended: they are kept in the log for good and the folders are where
// the command runs, so none can be redacted.
func TestClient_RefusesSecretNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	secret := "gl" + "pat-" + "Zq3Xv9Lm4Tn7Pw2Rk8Hs"
	for _, tc := range []struct {
		id   string
		mod  func(*command.Request)
		want string
	}{
		{id: secret, want: "command id: holds what looks like a secret (rule "},
		{mod: func(r *command.Request) { r.Session = "s-" + secret }, want: "session: holds what looks like a secret (rule "},
		{mod: func(r *command.Request) { r.Cwd = "dir-" + secret }, want: "cwd: holds what looks like a secret (rule "},
		{mod: func(r *command.Request) { r.Cwd = filepath.Join(r.Workspace, secret) }, want: "cwd: holds what looks like a secret (rule "},
		{mod: func(r *command.Request) { r.Workspace = "/srv/" + secret }, want: "workspace: holds what looks like a secret (rule "},
	} {
		req := e.request(events.ModeReadOnly, "true")
		if tc.mod != nil {
			tc.mod(&req)
		}
		id := tc.id
		if id == "" {
			id = ulid.Make().String()
		}
		_, err := e.client.Request(t.Context(), id, req, nil)
		if !errors.Is(err, events.ErrRejected) || !errors.Is(err, redact.ErrSecretField) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("err %v, want a refusal saying %q without the value", err, tc.want)
		}
	}
	for m, err := range e.log.ReadRaw(t.Context(), "lb.>", 1) {
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(m.Data, []byte(secret)) || strings.Contains(m.Subject, secret) {
			t.Errorf("%s holds the secret: %s", m.Subject, m.Data)
		}
	}
}

// TestWorker_RefusesSecretNamesAppendedDirectly: a request appended
// without the Client whose id, session or cwd a rule matches is refused
// by the worker (cause worker/secrets), the reason naming the field and
// never the value, and nothing runs.
func TestWorker_RefusesSecretNamesAppendedDirectly(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	secret := "gl" + "pat-" + "Zq3Xv9Lm4Tn7Pw2Rk8Hs"
	if err := os.Mkdir(filepath.Join(e.ws, "dir-"+secret), 0o755); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		id   string
		mod  func(*command.Request)
		want string
	}{
		{id: "c-" + secret, want: "command id: holds what looks like a secret (rule "},
		{mod: func(r *command.Request) { r.Session = "s-" + secret }, want: "session: holds what looks like a secret (rule "},
		{mod: func(r *command.Request) { r.Cwd = "dir-" + secret }, want: "cwd: holds what looks like a secret (rule "},
	} {
		req := e.request(events.ModeWorkspaceWrite, "touch", filepath.Join(e.ws, "ran"))
		if tc.mod != nil {
			tc.mod(&req)
		}
		id := tc.id
		if id == "" {
			id = ulid.Make().String()
		}
		agg := events.Aggregate{Kind: events.KindCommand, ID: id}
		req.At = time.Now().UTC().Truncate(time.Microsecond)
		req.Cause = events.Cause{Kind: "api", Event: "raw", Ref: ulid.Make().String()}
		adm, err := command.DecideRequest(command.Init(agg), nil, req)
		if err != nil {
			t.Fatalf("case %d: decide: %v", i, err)
		}
		evs := adm.Events
		for k := range evs {
			evs[k].ID, evs[k].Ver, evs[k].Host, evs[k].Actor = ulid.Make(), uint64(k+1), "elsewhere", "raw-writer"
		}
		if _, err := e.log.Append(t.Context(), events.Batch{Agg: agg, Events: evs}); err != nil {
			t.Fatalf("case %d: append: %v", i, err)
		}
		st, _ := e.follow(id, 20*time.Second)
		if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, tc.want) || strings.Contains(st.EndReason, secret) {
			t.Errorf("case %d: status %s reason %q; want refused saying %q without the value", i, st.Status, st.EndReason, tc.want)
		}
		if got := e.types(id); !slices.Equal(got, []string{"command.requested", "command.refused"}) {
			t.Errorf("case %d: events %v, want requested then refused", i, got)
		}
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Error("a refused command ran")
	}
}

// TestWorker_RefusesMagicLinkWorkspace: a request whose workspace or cwd
// is, or leads through a symbolic link into, /proc or /dev/fd (this
// worker's own directory there, not the one the requester checked) is
// refused by the worker, naming the path, and nothing runs.
func TestWorker_RefusesMagicLinkWorkspace(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	link := filepath.Join(e.ws, "here")
	if err := os.Symlink("/proc/self/cwd", link); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		mod  func(*command.Request)
		want string
	}{
		{func(r *command.Request) { r.Workspace = "/proc/self/cwd" }, "workspace /proc/self/cwd lies in /proc or /dev/fd"},
		{func(r *command.Request) { r.Workspace = "/dev/fd/../../proc/self/cwd" }, "lies in /proc or /dev/fd"},
		{func(r *command.Request) { r.Workspace = link }, "workspace " + link + " leads through " + link + " into /proc"},
		{func(r *command.Request) { r.Cwd = "here" }, "cwd " + link + " leads through " + link + " into /proc"},
	} {
		req := e.request(events.ModeFullAccess, "touch", filepath.Join(e.ws, "ran"))
		req.RequestedBy = "person:test@host"
		tc.mod(&req)
		id := e.submit(req)
		st, _ := e.follow(id, 20*time.Second)
		if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, tc.want) {
			t.Errorf("case %d: status %s reason %q; want refused saying %q", i, st.Status, st.EndReason, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran")); err == nil {
		t.Error("a refused command ran")
	}
}
