package worker

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/reducers/command"
)

// TestClient_RefusesSecretArgs: a request whose argv carries a secret by
// where it stands (a flag that takes one, sshpass -p, curl -u
// user:password, the same in a sh -c script) or whose environment names
// one (MYSQL_PWD) is refused by the Client, as exec refuses it, naming
// the position and never the value, with nothing appended to the log;
// ordinary commands with the same letters are requested.
func TestClient_RefusesSecretArgs(t *testing.T) {
	t.Parallel()
	e := newEnv(t, false)
	const pw = "C0rrectH0rse!"
	for _, tc := range []struct {
		argv []string
		env  string
		want string
	}{
		{argv: []string{"curl", "-u", "user:" + pw, "http://x"}, want: "argv[2] looks like a secret (the value of -u (curl))"},
		{argv: []string{"echo", "--token", pw}, want: "argv[2] looks like a secret (the value of --token)"},
		{argv: []string{"sshpass", "-p", pw, "ssh", "h"}, want: "argv[2] looks like a secret (the value of -p (sshpass))"},
		{argv: []string{"mysql", "-uroot", "-p" + pw}, want: "argv[2] looks like a secret (the value of -p (mysql))"},
		{argv: []string{"sh", "-c", "cd /w && sshpass -p '" + pw + "' ssh h"}, want: "argv[2] looks like a secret (the value of -p (sshpass) in its shell script)"},
		{argv: []string{"true"}, env: "MYSQL_PWD=" + pw, want: "environment variable MYSQL_PWD looks like a secret"},
		{argv: []string{"true"}, env: "API_TOKEN=" + pw, want: "environment variable API_TOKEN looks like a secret"},
		{argv: []string{"sh", "-c", "AWS_SECRET_ACCESS_KEY=" + pw + " aws s3 ls"}, want: "argv[2] looks like a secret"},
	} {
		req := e.request(events.ModeReadOnly, tc.argv...)
		if tc.env != "" {
			req.Env = append(req.Env, tc.env)
		}
		_, err := e.client.Request(t.Context(), ulid.Make().String(), req, nil)
		if !errors.Is(err, events.ErrRejected) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), pw) {
			t.Errorf("%q env %q: err %v, want a refusal saying %q without the value", tc.argv, tc.env, err, tc.want)
		}
	}
	for m, err := range e.log.ReadRaw(t.Context(), "lb.>", 1) {
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(m.Data, []byte(pw)) {
			t.Errorf("%s holds the secret: %s", m.Subject, m.Data)
		}
	}
	for _, argv := range [][]string{{"git", "log", "-p"}, {"ls", "-p"}, {"ssh", "-p", "2222", "h"}, {"grep", "-p", "x"},
		{"sh", "-c", "echo ${AWS_SECRET_ACCESS_KEY:-unset}"}, {"sh", "-c", "echo ${DB_PASSWORD=none} ${#API_TOKEN}"}, {"sh", "-c", "echo $GITHUB_TOKEN"}} {
		if err := CheckRequest(e.request(events.ModeReadOnly, argv...), nil); err != nil {
			t.Errorf("%q refused: %v", argv, err)
		}
	}
}

// TestWorker_RefusesSecretArgsAppendedDirectly: a request appended to the
// log without the Client (by anyone who may publish on the command
// subject) is checked for secrets again by the worker that is delivered
// it. One whose argv or environment carries a secret is refused by the
// worker, the reason naming the position and never the value, and
// nothing runs (under bubblewrap); a clean request appended the same way
// runs.
func TestWorker_RefusesSecretArgsAppendedDirectly(t *testing.T) {
	t.Parallel()
	needBwrap(t)
	e := newEnv(t, false)
	e.startWorker(e.workerConfig())
	const pw = "C0rrectH0rse!"
	appendReq := func(req command.Request) string {
		t.Helper()
		id := ulid.Make().String()
		agg := events.Aggregate{Kind: events.KindCommand, ID: id}
		req.At = time.Now().UTC().Truncate(time.Microsecond)
		req.Cause = events.Cause{Kind: "api", Event: "raw", Ref: id}
		adm, err := command.DecideRequest(command.Init(agg), nil, req)
		if err != nil {
			t.Fatalf("decide %q: %v", req.Argv, err)
		}
		evs := adm.Events
		for i := range evs {
			evs[i].ID, evs[i].Ver, evs[i].Host, evs[i].Actor = ulid.Make(), uint64(i+1), "elsewhere", "raw-writer"
		}
		if _, err := e.log.Append(t.Context(), events.Batch{Agg: agg, Events: evs}); err != nil {
			t.Fatalf("append %q: %v", req.Argv, err)
		}
		return id
	}
	for i, tc := range []struct {
		argv []string
		env  string
		want string
	}{
		{argv: []string{"sh", "-c", "touch ran-0", "sh", "--token", pw}, want: "argv[5] looks like a secret (the value of --token)"},
		{argv: []string{"sh", "-c", "touch ran-1; sshpass -p '" + pw + "' ssh h"}, want: "argv[2] looks like a secret (the value of -p (sshpass) in its shell script)"},
		{argv: []string{"touch", "ran-2"}, env: "MYSQL_PWD=" + pw, want: "environment variable MYSQL_PWD looks like a secret"},
		{argv: []string{"touch", "ran-3"}, env: "API_TOKEN=" + pw, want: "environment variable API_TOKEN looks like a secret"},
	} {
		req := e.request(events.ModeWorkspaceWrite, tc.argv...)
		if tc.env != "" {
			req.Env = append(req.Env, tc.env)
		}
		id := appendReq(req)
		st, _ := e.follow(id, 20*time.Second)
		if st.Status != command.StatusRefused || !strings.Contains(st.EndReason, tc.want) || strings.Contains(st.EndReason, pw) {
			t.Errorf("%q env %q: status %s reason %q; want refused saying %q without the value", tc.argv, tc.env, st.Status, st.EndReason, tc.want)
		}
		if got := e.types(id); !slices.Equal(got, []string{"command.requested", "command.refused"}) {
			t.Errorf("%q: events %v, want requested then refused", tc.argv, got)
		}
		recs, _, err := e.log.Load(t.Context(), events.Aggregate{Kind: events.KindCommand, ID: id})
		if err != nil {
			t.Fatal(err)
		}
		if c := recs[len(recs)-1].Cause; c == nil || c.Kind != "worker" || c.Event != "secrets" {
			t.Errorf("%q: refusal cause %+v, want the worker's secrets check", tc.argv, c)
		}
		if _, err := os.Stat(filepath.Join(e.ws, fmt.Sprintf("ran-%d", i))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: ran (stat: %v)", tc.argv, err)
		}
	}
	id := appendReq(e.request(events.ModeWorkspaceWrite, "touch", "ran-clean"))
	if st, _ := e.follow(id, 20*time.Second); st.Status != command.StatusExited || st.ExitCode == nil || *st.ExitCode != 0 {
		t.Fatalf("clean request: status %s reason %q", st.Status, st.EndReason)
	}
	if _, err := os.Stat(filepath.Join(e.ws, "ran-clean")); err != nil {
		t.Errorf("clean request did not run: %v", err)
	}
}
