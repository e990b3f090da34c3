package claude

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

	"github.com/logbook-dev/logbook/adapters/redact"
)

// ReadRules returns the parser configured from the rules file at path (a
// data dir's redact.txt): extra redaction rules, one Go regular
// expression per line (blank lines and lines starting with # are
// skipped), applied after the built-in ones. A missing file means the
// built-in rules only; the file is read as ReadRegular reads, at most
// MaxRulesFile bytes. A rule that does not compile is an error naming
// path and its line.
func ReadRules(path string) (*Parser, error) {
	b, err := ReadRegular(path, MaxRulesFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("redaction rules: %w", err)
	}
	return ParseRules(path, b)
}

// ParseRules returns the parser with the redaction rules of b, the text
// of the rules file at path (see ReadRules; path only names it in
// errors).
func ParseRules(path string, b []byte) (*Parser, error) {
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
	p, err := NewParser(Config{RedactPatterns: pats})
	if pe, ok := errors.AsType[*PatternError](err); ok {
		return nil, fmt.Errorf("redaction rules %s:%d: %w", path, lines[pe.Index-1], err)
	}
	if err != nil {
		return nil, fmt.Errorf("redaction rules %s: %w", path, err)
	}
	return p, nil
}

// LiveRules is the redaction of a long-running process (serve, a
// worker): the rules file as it is now. Before each use it stats the file
// (size, modification time, inode) and, when that changed, reads and
// compiles it again. A file that no longer compiles (or cannot be read)
// keeps the last rules that did, so nothing is recorded with fewer rules
// than asked for, and is logged once per change, as an ERROR naming the
// file and line. A file removed leaves the built-in rules only. Safe for
// concurrent use.
type LiveRules struct {
	path string
	log  io.Writer // the process's log
	prog string    // prefix of its lines: "logbook serve"

	cur atomic.Pointer[rulesAt] // the rules and the stamp they were checked at
	mu  sync.Mutex              // one reload at a time
}

// rulesAt is the redactor of the last good rules file and the stamp of
// the file when last looked at (good or not).
type rulesAt struct {
	stamp string
	red   *Redactor
}

// NewLiveRules loads the rules file at path now; an error (a rule that
// does not compile) refuses it, naming the line, as at start-up. Reloads
// are logged to log, each line prefixed by prog ("logbook serve").
func NewLiveRules(path string, log io.Writer, prog string) (*LiveRules, error) {
	lr := &LiveRules{path: path, log: log, prog: prog}
	stamp := lr.stamp()
	p, err := ReadRules(path)
	if err != nil {
		return nil, err
	}
	lr.cur.Store(&rulesAt{stamp: stamp, red: p.Redactor()})
	return lr, nil
}

// stamp names the state of the rules file: "" when it does not exist.
func (lr *LiveRules) stamp() string {
	fi, err := os.Stat(lr.path)
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

// Current returns the redactor of the rules file as it is now (or of the
// last good one when it is broken).
func (lr *LiveRules) Current() *Redactor {
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
	b, err := ReadRegular(lr.path, MaxRulesFile)
	if errors.Is(err, os.ErrNotExist) {
		err, b = nil, nil
	} else if err != nil {
		err = fmt.Errorf("redaction rules: %w", err)
	}
	var p *Parser
	if err == nil {
		p, err = ParseRules(lr.path, b)
	}
	if err != nil {
		fmt.Fprintf(lr.log, "%s: ERROR: %v; recording with the previous rules until it is fixed\n", lr.prog, err)
	} else {
		next.red = p.Redactor()
		n, rules := len(p.Redactor().Rules())-len(redact.Default().Rules()), "custom rules"
		if n == 1 {
			rules = "custom rule"
		}
		fmt.Fprintf(lr.log, "%s: redaction rules %s reloaded: %d %s\n", lr.prog, lr.path, n, rules)
	}
	lr.cur.Store(next)
	return next.red
}

// Parser returns a parser redacting with the rules of the file as it is
// at each use.
func (lr *LiveRules) Parser() (*Parser, error) {
	return NewParser(Config{Redactor: redact.Live(lr.Current)})
}
