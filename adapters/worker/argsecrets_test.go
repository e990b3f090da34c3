package worker

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/logbook-dev/logbook/events"
)

// TestClient_RefusesSecretArgs: a request whose argv carries a secret by
// where it stands (a flag that takes one, sshpass -p, curl -u
// user:password, the same in a sh -c script) or whose environment names
// one (MYSQL_PWD) is refused by the Client, as exec refuses it, naming
// the position and never the value, with nothing appended to the log;
// ordinary commands with the same letters are requested.
func TestClient_RefusesSecretArgs(t *testing.T) {
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
	for _, argv := range [][]string{{"git", "log", "-p"}, {"ls", "-p"}, {"ssh", "-p", "2222", "h"}, {"grep", "-p", "x"}} {
		if err := CheckRequest(e.request(events.ModeReadOnly, argv...), nil); err != nil {
			t.Errorf("%q refused: %v", argv, err)
		}
	}
}
