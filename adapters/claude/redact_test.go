package claude

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestRedactor covers each default rule with a secret it must hide and a
// look-alike it must leave alone. The secrets are made up.
func TestRedactor(t *testing.T) {
	tests := []struct {
		rule     string
		positive string // input
		want     string // redacted output
		negative string // left unchanged
	}{
		{"private_key",
			"key: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx\n-----END RSA PRIVATE KEY----- done",
			"key: [REDACTED:private_key] done",
			"-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----"},
		{"private_key",
			`{"content":"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA`, // cut before its END line
			`{"content":"[REDACTED:private_key]`,
			"the BEGIN PRIVATE KEY marker is described in RFC 7468"},
		{"jwt",
			"token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2lnbmF0dXJlLXBhcnQ ok",
			"token [REDACTED:jwt] ok",
			"eyJhbGciOiJIUzI1NiJ9 alone is only a header"},
		{"bearer",
			`curl -H "Authorization: Bearer abcdef0123456789ABCDEF.xyz" https://api.example.invalid`,
			`curl -H "Authorization: Bearer [REDACTED:bearer]" https://api.example.invalid`,
			"the bearer of this letter is welcome"},
		{"anthropic_key",
			"ANTHROPIC=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
			"ANTHROPIC=[REDACTED:anthropic_key]",
			"run task-ant-colony with sk-ant-short"},
		{"openai_key",
			"export OPENAI=sk-proj-AbCdEfGhIjKlMnOpQrStUvWx",
			"export OPENAI=[REDACTED:openai_key]",
			"scikit uses sk-learn; a risk-assessment-of-the-whole-thing"},
		{"aws_access_key",
			"aws_access_key_id AKIAIOSFODNN7EXAMPLE and ASIAABCDEFGHIJKLMNOP",
			"aws_access_key_id [REDACTED:aws_access_key] and [REDACTED:aws_access_key]",
			"AKIA is a prefix; AKIAIOSFODNN7 is too short; XAKIAIOSFODNN7EXAMPLEX"},
		{"github_token",
			"git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r and github_pat_11ABCDEFG0123456789_abcdefghij",
			"git clone https://[REDACTED:github_token]@github.com/o/r and [REDACTED:github_token]",
			"ghp_short and the ghx_ prefix and github_pat_tiny"},
		{"slack_token",
			"SLACK xoxb-1234567890-abcdefghij and xoxp-0000000000-1111",
			"SLACK [REDACTED:slack_token] and [REDACTED:slack_token]",
			"xoxo-hugs and xoxb-short"},
		{"assignment",
			`password=hunter22 DB_PASSWORD: "s3cr3t!!" {\"api_key\": \"abcd1234\"} GITHUB_TOKEN='tok_value'`,
			`password=[REDACTED:assignment] DB_PASSWORD: "[REDACTED:assignment]" {\"api_key\": \"[REDACTED:assignment]\"} GITHUB_TOKEN='[REDACTED:assignment]'`,
			`the password is stored in a vault; "max_tokens": 4096, "input_tokens":6, token: 42`},
	}
	r, err := NewRedactor(nil)
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		covered[tt.rule] = true
		t.Run(tt.rule, func(t *testing.T) {
			if got := r.Redact(tt.positive); got != tt.want {
				t.Errorf("Redact(%q)\n = %q\nwant %q", tt.positive, got, tt.want)
			}
			if got := r.Redact(tt.negative); got != tt.negative {
				t.Errorf("Redact(%q) = %q, want it unchanged", tt.negative, got)
			}
		})
	}
	for _, name := range r.Rules() {
		if !covered[name] {
			t.Errorf("rule %s has no test case", name)
		}
	}
}

func TestNewRedactor_Custom(t *testing.T) {
	r, err := NewRedactor([]string{`INT-[0-9]{4}`, `x*`})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"private_key", "jwt", "bearer", "anthropic_key", "openai_key", "aws_access_key", "github_token", "slack_token", "assignment", "custom-1", "custom-2"}
	if got := r.Rules(); !slices.Equal(got, want) {
		t.Errorf("Rules() = %v, want %v", got, want)
	}
	// A pattern that matches the empty string replaces only real matches.
	if got, want := r.Redact("ticket INT-4242 by xx"), "ticket [REDACTED:custom-1] by [REDACTED:custom-2]"; got != want {
		t.Errorf("Redact = %q, want %q", got, want)
	}
	_, err = NewRedactor([]string{`ok`, `a(b`})
	pe, ok := errors.AsType[*PatternError](err)
	if !ok || pe.Index != 2 || pe.Pattern != "a(b" || !strings.Contains(err.Error(), `"a(b"`) {
		t.Errorf("error %v, want a *PatternError naming pattern 2", err)
	}
}
