package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestExec_RefusesSecretBearingArgs: exec refuses argv whose flags carry
// a secret (curl -u user:password, --token, sshpass -p) and --env names
// that hold one (MYSQL_PWD), as it refuses PGPASSWORD and a URL's
// password: the error names the position and never the value, and
// neither the log's messages (read raw) nor serve's log hold the value.
func TestExec_RefusesSecretBearingArgs(t *testing.T) {
	t.Parallel()
	data, ws := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logs := serveInProcess(t, data, "--grace", "300ms", "--workers", "0")
	const sid = "0c7e4a11-0000-4000-8000-00000000a59e"
	promptSession(t, ctx, data, sid, ws)
	secrets := []string{"hunter2hunter2", "hunter2xyz", "C0rrectH0rse!", "C0rrectH0rse"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--", "curl", "-u", "user:hunter2hunter2", "http://x"}, "argv[2] looks like a secret (the value of -u (curl))"},
		{[]string{"--", "echo", "--token", "hunter2xyz"}, "argv[2] looks like a secret (the value of --token)"},
		{[]string{"--", "sshpass", "-p", "C0rrectH0rse!", "ssh", "h"}, "argv[2] looks like a secret (the value of -p (sshpass))"},
		{[]string{"--env", "MYSQL_PWD=C0rrectH0rse", "--", "true"}, "MYSQL_PWD looks like a secret"},
		{[]string{"--env", "PGPASSWORD=C0rrectH0rse", "--", "true"}, "PGPASSWORD looks like a secret"},
		{[]string{"--", "sh", "-c", "mysql -uroot -pC0rrectH0rse db"}, "argv[2] looks like a secret (the value of -p (mysql) in its shell script)"},
	} {
		var out syncBuffer
		args := append([]string{"--data", data, "exec", "--session", sid, "--workspace", ws}, tc.args...)
		err := runCLI(ctx, args, strings.NewReader(""), &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("exec %q: err %v, want a refusal saying %q\n%s", tc.args, err, tc.want, out.String())
			continue
		}
		for _, s := range secrets {
			if strings.Contains(err.Error()+out.String(), s) {
				t.Errorf("exec %q: the refusal shows the value: %v\n%s", tc.args, err, out.String())
			}
		}
	}
	for _, m := range storedMsgs(t, ctx, data, "lb.>") {
		for _, s := range secrets {
			if bytes.Contains(m.Data, []byte(s)) {
				t.Errorf("%s holds %s: %s", m.Subject, s, m.Data)
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(logs.String(), s) {
			t.Errorf("serve's log holds %s:\n%s", s, logs.String())
		}
	}
}
