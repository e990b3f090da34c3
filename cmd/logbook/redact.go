package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/redact"
)

// parser returns the Claude Code parser configured from the data dir:
// redact.txt holds extra redaction rules, one Go regular expression per
// line (blank lines and lines starting with # are skipped), applied after
// the built-in ones. A missing file means the built-in rules only; a rule
// that does not compile is an error naming its line.
func (d dataDir) parser() (*claude.Parser, error) {
	b, err := claude.ReadRegular(d.path("redact.txt"), claude.MaxRulesFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("redaction rules: %w", err)
	}
	return d.parseRules(b)
}

// parseRules returns the parser with the redaction rules of b, the text of
// the data dir's redact.txt (see parser).
func (d dataDir) parseRules(b []byte) (*claude.Parser, error) {
	var pats []string
	lines := map[int]int{} // index in pats → line number
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		lines[len(pats)] = n
		pats = append(pats, l)
	}
	p, err := claude.NewParser(claude.Config{RedactPatterns: pats})
	if pe, ok := errors.AsType[*claude.PatternError](err); ok {
		return nil, fmt.Errorf("redaction rules %s:%d: %w", d.path("redact.txt"), lines[pe.Index-1], err)
	}
	if err != nil {
		return nil, fmt.Errorf("redaction rules %s: %w", d.path("redact.txt"), err)
	}
	return p, nil
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
// process): the data dir's
// redact.txt as it is now. Before each use it stats the file (size,
// modification time, inode) and, when that changed, reads and compiles it
// again. A file that no longer compiles (or cannot be read) keeps the last
// rules that did, so nothing is recorded with fewer rules than asked for,
// and is logged once per change, as an ERROR naming the file and line. A
// file removed leaves the built-in rules only. Safe for concurrent use.
type liveRules struct {
	dd   dataDir
	log  io.Writer // the process's log
	prog string    // prefix of its lines: "logbook serve"

	cur atomic.Pointer[rulesAt] // the rules and the stamp they were checked at
	mu  sync.Mutex              // one reload at a time
}

// rulesAt is the redactor of the last good redact.txt and the stamp of the
// file when last looked at (good or not).
type rulesAt struct {
	stamp string
	red   *claude.Redactor
}

// newLiveRules loads dd's redact.txt now; an error (a rule that does not
// compile) refuses it, naming the line, as at start-up. Reloads are
// logged to log, each line prefixed by prog ("logbook serve").
func newLiveRules(dd dataDir, log io.Writer, prog string) (*liveRules, error) {
	lr := &liveRules{dd: dd, log: log, prog: prog}
	stamp := lr.stamp()
	p, err := dd.parser()
	if err != nil {
		return nil, err
	}
	lr.cur.Store(&rulesAt{stamp: stamp, red: p.Redactor()})
	return lr, nil
}

// stamp names the state of redact.txt: "" when it does not exist.
func (lr *liveRules) stamp() string {
	fi, err := os.Stat(lr.dd.path("redact.txt"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return ""
		}
		return "error: " + err.Error()
	}
	var ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		ino = st.Ino
	}
	return fmt.Sprintf("%d/%d/%d", fi.Size(), fi.ModTime().UnixNano(), ino)
}

// current returns the redactor of redact.txt as it is now (or of the last
// good one when it is broken).
func (lr *liveRules) current() *claude.Redactor {
	stamp := lr.stamp()
	if c := lr.cur.Load(); c.stamp == stamp {
		return c.red
	}
	lr.mu.Lock()
	defer lr.mu.Unlock()
	c := lr.cur.Load()
	if stamp = lr.stamp(); c.stamp == stamp {
		return c.red
	}
	next := &rulesAt{stamp: stamp, red: c.red}
	b, err := claude.ReadRegular(lr.dd.path("redact.txt"), claude.MaxRulesFile)
	if errors.Is(err, os.ErrNotExist) {
		err, b = nil, nil
	} else if err != nil {
		err = fmt.Errorf("redaction rules: %w", err)
	}
	var p *claude.Parser
	if err == nil {
		p, err = lr.dd.parseRules(b)
	}
	if err != nil {
		fmt.Fprintf(lr.log, "%s: ERROR: %v; recording with the previous rules until it is fixed\n", lr.prog, err)
	} else {
		next.red = p.Redactor()
		fmt.Fprintf(lr.log, "%s: redaction rules %s reloaded: %s\n", lr.prog, lr.dd.path("redact.txt"), plural(len(p.Redactor().Rules())-len(redact.Default().Rules()), "custom rule"))
	}
	lr.cur.Store(next)
	return next.red
}

// parser returns a parser redacting with the rules of redact.txt as it is
// at each use.
func (lr *liveRules) parser() (*claude.Parser, error) {
	return claude.NewParser(claude.Config{Redactor: redact.Live(lr.current)})
}
