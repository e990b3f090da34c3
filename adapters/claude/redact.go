package claude

import "github.com/logbook-dev/logbook/adapters/redact"

// Redactor replaces secrets in text with "[REDACTED:<rule>]"; see package
// redact for the rules (built-in shapes, gitleaks' rule set,
// assignments) and how JSON is redacted over its decoded strings.
type Redactor = redact.Redactor

// PatternError reports a redaction pattern that does not compile.
type PatternError = redact.PatternError

// NewRedactor returns redact.New(extra): the built-in rules, gitleaks'
// rules and the assignment rule, then extra, Go regular expressions whose
// matches become "[REDACTED:custom-<i>]". It returns a *PatternError for
// the first extra pattern that does not compile.
func NewRedactor(extra []string) (*Redactor, error) { return redact.New(extra) }
