package redact

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrSecretField is what a FieldError wraps: a value that names things
// for good (an id, a name that becomes a branch and a folder, a working
// directory a command runs in) holds what a rule takes for a secret. Such
// a value is refused, never rewritten: a rewritten id or name would name
// something else, a rewritten folder would be another folder.
var ErrSecretField = errors.New("holds what looks like a secret")

// FieldError reports the field whose value a rule matches. Its message
// names the field and the rules, never the value: "--name: holds what
// looks like a secret (rule gitlab_pat); choose another name".
type FieldError struct {
	Field string   // as the caller names it: "--name", "cwd", "session id"
	Noun  string   // what to choose instead: "name", "id", "folder"
	Rules []string // the rules that match, each once
}

// Error returns the field, the rules and what to do.
func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: %v (rule %s); choose another %s", e.Field, ErrSecretField, strings.Join(e.Rules, ", "), e.Noun)
}

// Unwrap returns ErrSecretField.
func (e *FieldError) Unwrap() error { return ErrSecretField }

// Matches returns the names of the rules that match s, each once, in
// the order their markers stand in r.Redact(s); nil when Redact leaves
// s as it is.
func (r *Redactor) Matches(s string) []string {
	red := r.Redact(s)
	if red == s {
		return nil
	}
	var rules []string
	for rest := red; ; {
		i := strings.Index(rest, "[REDACTED:")
		if i < 0 {
			break
		}
		rest = rest[i+len("[REDACTED:"):]
		j := strings.IndexByte(rest, ']')
		if j < 0 {
			break
		}
		if name := rest[:j]; !strings.Contains(s, "[REDACTED:"+name+"]") && !slices.Contains(rules, name) {
			rules = append(rules, name)
		}
		rest = rest[j:]
	}
	if len(rules) == 0 {
		rules = []string{"unnamed"} // a marker the text held already, moved
	}
	return rules
}

// CheckField returns a *FieldError for field (noun: what to choose
// instead) when a rule of r matches any of values (a name and the slug
// made of it, say), and nil otherwise, or when every value is empty. A
// nil r means Default().
func (r *Redactor) CheckField(field, noun string, values ...string) error {
	if r == nil {
		r = Default()
	}
	for _, v := range values {
		if v == "" {
			continue
		}
		if rules := r.Matches(v); rules != nil {
			return &FieldError{Field: field, Noun: noun, Rules: rules}
		}
	}
	return nil
}
