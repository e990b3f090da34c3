package redact

import (
	"testing"

	gitleaks "github.com/zricethezav/gitleaks/v8/config"
)

// compiledRules counts the shared rules whose regular expression has
// been compiled.
func compiledRules() int {
	n := 0
	for _, ru := range shared() {
		if ru.re != nil || ru.err != nil {
			n++
		}
	}
	return n
}

// TestLazy: a short text compiles only the few rules its keywords call
// for, not the whole set.
func TestLazy(t *testing.T) {
	r, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	before := compiledRules()
	r.Redact("go test ./... passed in 3.2s; see https://example.invalid/docs")
	if n := compiledRules() - before; n > 10 {
		t.Errorf("redacting one short line compiled %d rules, want a few", n)
	}
	if total := len(shared()); total < 150 {
		t.Errorf("%d shared rules, want gitleaks' set", total)
	}
}

// BenchmarkLoadRules is what a process pays once, on its first
// redaction: parsing gitleaks' rule set and indexing its keywords.
func BenchmarkLoadRules(b *testing.B) {
	for b.Loop() {
		rules, err := parseGitleaks(gitleaks.DefaultConfig)
		if err != nil {
			b.Fatal(err)
		}
		newKeywordIndex(rules)
	}
}

// BenchmarkCompileAll is what compiling every rule up front would cost,
// the price lazy compilation avoids.
func BenchmarkCompileAll(b *testing.B) {
	for b.Loop() {
		rules, _ := parseGitleaks(gitleaks.DefaultConfig)
		for _, ru := range rules {
			ru.compiled()
		}
	}
}
