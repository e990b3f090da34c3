package gate

import (
	"testing"

	"github.com/logbook-dev/logbook/reducers/review"
)

// TestDecide_LogbookExecIsAWrapper: logbook-exec and logbook exec run
// the command after their flags (or after --): the gate reads it as it
// reads bash -c, env or timeout, so a deny rule meets it there, and the
// flags that reach past the session's own mode or its data dir and
// server (--mode above the session's ceiling, --data, --nats-url,
// --creds, --socket, and LOGBOOK_* in their environment) are levers,
// reviewed at critical risk; --elevate is reviewed by the elevation's
// own review.
func TestDecide_LogbookExecIsAWrapper(t *testing.T) {
	pols := dataDirPolicies(t, `
allow = ["Bash(logbook-exec:*)", "Bash(logbook exec:*)", "Bash(logbook:*)", "Bash(ls:*)", "Bash(make:*)", "Bash(sh:*)"]
deny  = ["Bash(rm -rf:*)", "Bash(curl:*)"]
`)
	rows := []struct {
		name, cmd, mode, want, risk string
	}{
		{"inner/sh-c", `logbook-exec --session S --mode full_access -- sh -c 'r=rm; $r -rf /x'`, "", "deny", ""},
		{"inner/sh-c-no-mode", `logbook-exec --session S -- sh -c 'r=rm; $r -rf /x'`, "", "deny", ""},
		{"inner/rm", `logbook-exec --session S -- rm -rf src`, "", "deny", ""},
		{"inner/rm-no-dashdash", `logbook-exec --session=S rm -rf src`, "", "deny", ""},
		{"inner/curl", `logbook exec --session S -- curl x`, "", "deny", ""},
		{"inner/global-flags", `logbook --json exec --session S -- curl x`, "", "deny", ""},
		{"inner/path", `/usr/local/bin/logbook-exec --session S --wait 5s -- curl x`, "", "deny", ""},
		{"inner/nested", `timeout 5 logbook-exec --session S -- env X=1 curl x`, "", "deny", ""},
		{"inner/not-allowed", `logbook-exec --session S -- rm -r -f src`, "", "", ""},
		{"inner/lever", `logbook-exec --session S -- logbook review allow tu1 --reason ok`, "", "review", review.RiskCritical},
		{"inner/env-path", `logbook-exec --session S --env PATH=/tmp/evil -- ls`, "", "", ""},
		{"inner/env-ld", `logbook-exec --session S --env=LD_PRELOAD=/tmp/x.so -- ls`, "", "", ""},
		{"lever/full-access", `logbook-exec --session S --mode full_access -- ls`, "", "review", review.RiskCritical},
		{"lever/full-access-eq", `logbook-exec --session S --mode=full_access -- ls`, "", "review", review.RiskCritical},
		{"lever/full-access-after", `logbook-exec --session S ls --mode=full_access`, "", "review", review.RiskCritical},
		{"lever/full-access-logbook", `logbook exec --session S --mode full_access -- ls`, "", "review", review.RiskCritical},
		{"lever/full-access-quoted", `logbook-exec --session S --mode 'full_'access -- ls`, "", "review", review.RiskCritical},
		{"lever/unknown-mode", `logbook-exec --session S --mode "$m" -- ls`, "", "review", review.RiskCritical},
		{"lever/above-read-only", `logbook-exec --session S --mode workspace_write -- ls`, "read_only", "review", review.RiskCritical},
		// The elevation is reviewed once, by the gate exec asks, at
		// critical risk (TestGate_ElevationIsAPersonsWord): the command
		// asking for it is no lever of its own, its inner command and
		// other flags read as any.
		{"plain/elevate", `logbook-exec --session S --elevate --justification x -- ls`, "auto", "allow", ""},
		{"inner/elevate-rm", `logbook exec --session S --elevate --justification x -- rm -rf src`, "auto", "deny", ""},
		{"lever/elevate-other-session", `logbook-exec --session T --elevate --justification x -- ls`, "auto", "review", review.RiskCritical},
		{"lever/elevate-data", `logbook-exec --data /tmp/o --session S --elevate --justification x -- ls`, "auto", "review", review.RiskCritical},
		{"lever/data", `logbook-exec --data /tmp/other --session S -- ls`, "", "review", review.RiskCritical},
		{"lever/data-global", `logbook --data=/tmp/other exec --session S -- ls`, "", "review", review.RiskCritical},
		{"lever/nats-url", `logbook-exec --nats-url nats://h:4222 --session S -- ls`, "", "review", review.RiskCritical},
		{"lever/creds", `logbook-exec --creds /tmp/c.json --session S -- ls`, "", "review", review.RiskCritical},
		{"lever/socket", `logbook exec --socket /tmp/s --session S -- ls`, "", "review", review.RiskCritical},
		{"lever/env-data", `LOGBOOK_DATA=/tmp/other logbook-exec --session S -- ls`, "", "review", review.RiskCritical},
		{"lever/env-wrapper", `env LOGBOOK_NATS_URL=nats://h logbook-exec --session S -- ls`, "", "review", review.RiskCritical},
		{"lever/other-session", `logbook-exec --session T -- ls`, "", "review", review.RiskCritical},
		{"lever/other-session-eq", `logbook exec --session=T -- ls`, "", "review", review.RiskCritical},
		{"lever/second-session", `logbook-exec --session S --session T -- ls`, "", "review", review.RiskCritical},
		{"lever/empty-session", `logbook-exec --session '' -- ls`, "", "review", review.RiskCritical},
		// A prefix of the session's own id: exec takes a session by its
		// whole id first, and So may be another session's.
		{"lever/prefix-of-own", `logbook-exec --session So -- ls`, "", "review", review.RiskCritical},
		{"lever/prefix-of-own-eq", `logbook exec --session=So -- ls`, "", "review", review.RiskCritical},
		{"verb/archive-prefix-of-own", `logbook workspace archive w1 --session So`, "", "review", review.RiskCritical},
		{"plain/parent-session", `logbook-exec --session P -- ls`, "", "allow", ""},
		{"plain/ls", `logbook-exec --session S -- ls -la`, "", "allow", ""},
		{"plain/mode-same", `logbook-exec --session S --mode workspace_write -- make test`, "", "allow", ""},
		{"plain/read-only", `logbook-exec --session S --mode read_only -- ls`, "", "allow", ""},
		{"plain/full-access-session", `logbook-exec --session S --mode full_access -- ls`, "full_access", "allow", ""},
		{"plain/flag-after-dashdash", `logbook-exec --session S -- ls --mode=full_access`, "", "allow", ""},
		{"plain/logbook-sessions", `logbook sessions`, "", "allow", ""},
		// Other verbs that would take the gate, the sandbox or the
		// log's trust out of the session's hands.
		{"verb/setup-undo", `logbook setup --undo`, "", "review", review.RiskCritical},
		{"verb/worker", `logbook worker --bwrap /tmp/fake --sandbox-allow /:rw`, "", "review", review.RiskCritical},
		{"verb/keys-register", `logbook keys register --role writer --principal x KEY`, "", "review", review.RiskCritical},
		{"verb/keys-pin", `logbook keys pin PUB`, "", "review", review.RiskCritical},
		{"verb/checkpoint-trust", `logbook checkpoint trust KEY`, "", "review", review.RiskCritical},
		{"plain/keys-show", `logbook keys show`, "", "allow", ""},
		// Verbs that act as the person on another command, review or
		// check run: feeding a command's input around the stdin gate,
		// stopping it, answering a review.
		{"verb/command-stdin", `logbook command stdin c1 'yes'`, "", "review", review.RiskCritical},
		{"verb/command-stdin-eof", `logbook --json command stdin --eof c1`, "", "review", review.RiskCritical},
		{"verb/command-stop", `logbook command stop c1 --reason done`, "", "review", review.RiskCritical},
		{"verb/command-var", `logbook command "$v" c1 yes`, "", "review", review.RiskCritical},
		{"verb/review-allow", `logbook review allow gate-01 --reason ok`, "", "review", review.RiskCritical},
		{"verb/review-deny", `logbook review deny gate-01 --reason no`, "", "review", review.RiskCritical},
		{"verb/top", `logbook top`, "", "review", review.RiskCritical},
		{"verb/cancel-check", `logbook workspace cancel-check r1`, "", "review", review.RiskCritical},
		{"verb/archive-person", `logbook workspace archive w1`, "", "review", review.RiskCritical},
		{"verb/archive-other", `logbook workspace archive w1 --session T`, "", "review", review.RiskCritical},
		{"verb/archive-own-and-other", `logbook workspace archive w1 --session S --session T`, "", "review", review.RiskCritical},
		{"verb/inner-stdin", `logbook-exec --session S -- logbook command stdin c1 yes`, "", "review", review.RiskCritical},
		{"plain/command-output", `logbook command output c1`, "", "allow", ""},
		{"plain/commands", `logbook commands --session S`, "", "allow", ""},
		{"plain/review-list", `logbook sessions --json`, "", "allow", ""},
		{"plain/archive-own", `logbook workspace archive w1 --session S`, "", "allow", ""},
		{"plain/archive-own-force", `logbook workspace archive w1 --session S --force`, "", "allow", ""},
		{"verb/archive-other-force", `logbook workspace archive w1 --force --session T`, "", "review", review.RiskCritical},
		{"plain/workspace-list", `logbook workspace list`, "", "allow", ""},
	}
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			c := bash(tc.cmd)
			c.Mode = tc.mode
			c.Sessions = []string{"S", "P", "Sown"}
			got := Decide(pols, c)
			if got.Action != tc.want || tc.risk != "" && got.Risk != tc.risk {
				t.Errorf("%s: %q (session mode %q): got action %q pattern %q risk %q, want %q risk %q",
					tc.name, tc.cmd, tc.mode, got.Action, got.Pattern, got.Risk, tc.want, tc.risk)
			}
		})
	}
}
