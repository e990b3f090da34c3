package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/logbook-dev/logbook/adapters/claude"
	"github.com/logbook-dev/logbook/adapters/redact"
)

// parser returns the Claude Code parser configured from the data dir:
// redact.txt holds extra redaction rules, one Go regular expression per
// line (blank lines and lines starting with # are skipped), applied after
// the built-in ones. A missing file means the built-in rules only; a rule
// that does not compile is an error naming its line.
func (d dataDir) parser() (*claude.Parser, error) {
	b, err := os.ReadFile(d.path("redact.txt"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("redaction rules: %w", err)
	}
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
