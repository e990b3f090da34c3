package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/redact"
)

// parser returns the Claude Code parser configured from the data dir's
// redact.txt (claude.ReadRules): its rules over the built-in ones. A
// data dir this user may not read because it is another user's is said
// so (datadir.Dir.OwnerError), not as the rules' permission error.
func (d dataDir) parser() (*claude.Parser, error) {
	p, err := claude.ReadRules(d.path("redact.txt"))
	if errors.Is(err, fs.ErrPermission) {
		if st, serr := os.Stat(string(d)); serr == nil {
			if oerr := d.dir().OwnerError(st); oerr != nil {
				return nil, oerr
			}
		}
	}
	return p, err
}

// redactTyped redacts text a person typed on the command line that goes
// onto the log for good (a reason, a justification) by the data dir's
// rules (redact.txt over the built-in ones), as the HTTP API redacts a
// review's reason. max is the most bytes the receiving side takes (0: no
// limit): text within it that grows past it by a redaction marker is cut
// back to it, so redaction never turns a reason it takes into one it
// refuses; text already over it is left for the receiving side to refuse.
// Errors are the data dir's (redaction rules that do not compile).
func redactTyped(g *globals, text string, max int) (string, error) {
	dd, err := resolveDataDir(g.data)
	if err != nil {
		return "", err
	}
	p, err := dd.parser()
	if err != nil {
		return "", err
	}
	red := p.Redactor().Redact(text)
	if max > 0 && len(text) <= max {
		red = redact.CutText(red, max)
	}
	return red, nil
}

// typedField is a value typed on the command line that names something
// for good: an id, a name (which becomes a branch and a folder), a
// folder a command runs in. values are the value and what is made of it
// (a name's slug).
type typedField struct {
	flag, noun string // "--name", "name": as in redact.FieldError
	values     []string
}

// refuseSecrets refuses, as a usage error prefixed by verb
// ("workspace create"), the first of fields whose value a redaction rule
// of the data dir (redact.txt over the built-in ones) matches, naming
// the flag and the rule, never the value: "workspace create: --name:
// holds what looks like a secret (rule gitlab_pat); choose another
// name". Such a value is kept for good and cannot be redacted (a
// rewritten id or name names something else), only refused. It runs
// before anything is sent; the server, the workers and the workspace
// manager refuse the same values again. Errors are also the data dir's
// (rules that do not compile).
func refuseSecrets(g *globals, verb string, fields ...typedField) error {
	var red *redact.Redactor
	for _, f := range fields {
		if strings.Join(f.values, "") == "" {
			continue
		}
		if red == nil && g.served != nil {
			// serve's rules, as they are now.
			var err error
			if red, err = g.served.b.redactor(); err != nil {
				return err
			}
		}
		if red == nil {
			dd, err := resolveDataDir(g.data)
			if err != nil {
				return err
			}
			p, err := dd.parser()
			if err != nil {
				return err
			}
			red = p.Redactor()
		}
		if err := red.CheckField(f.flag, f.noun, f.values...); err != nil {
			return usageErrorf("%s: %w", verb, err)
		}
	}
	return nil
}

// liveRules is the redaction of a running serve (and of a worker
// process): the data dir's redact.txt as it is at each use
// (claude.LiveRules).
type liveRules = claude.LiveRules

// newLiveRules loads dd's redact.txt now (claude.NewLiveRules); reloads
// are logged to log, each line prefixed by prog ("logbook serve").
func newLiveRules(dd dataDir, log io.Writer, prog string) (*liveRules, error) {
	return claude.NewLiveRules(dd.path("redact.txt"), log, prog)
}
