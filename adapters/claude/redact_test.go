package claude

import (
	"errors"

	"github.com/logbook-dev/logbook/adapters/redact"
	"slices"
	"strings"
	"testing"
)

// TestRedactor covers each default rule with a secret it must hide and a
// look-alike it must leave alone. The secrets are made up.
func TestRedactor(t *testing.T) {
	t.Parallel()
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
		{"url_credentials",
			"git remote add o https://deploy:" + "Zx9pQ2wE7rT4yU1i@git.example.invalid/r.git",
			"git remote add o https://deploy:[REDACTED:url_credentials]@git.example.invalid/r.git",
			"see https://example.invalid:8443/path?a=b and mailto:someone@example.invalid"},
		{"basic_auth",
			"Authorization: Basic " + "ZGVwbG95OnMzY3IzdHBhc3M=",
			"Authorization: Basic [REDACTED:basic_auth]",
			"basic usage is covered in the manual"},
		{"stripe_key",
			"STRIPE=" + "sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc and " + "rk_" + "live_4eC39HqLyjWDarjtT1zdp7dc",
			"STRIPE=[REDACTED:stripe_key] and [REDACTED:stripe_key]",
			"pk_live is publishable; sk_live_short"},
		{"gitlab_token",
			"glpat-" + "xYz12345678901234567",
			"[REDACTED:gitlab_token]",
			"glpat- and glob-patterns-are-fine"},
		{"google_api_key",
			"key=" + "AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY",
			"key=[REDACTED:google_api_key]",
			"AIza is a prefix"},
		{"npm_token",
			"//registry/:_authToken=" + "npm_" + "abcdefghijklmnopqrstuvwxyz0123456789",
			"//registry/:_authToken=[REDACTED:npm_token]",
			"npm_config_cache and npm_short"},
		{"azure_account_key",
			"AccountName=s;AccountKey=" + "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq==;Suffix=x",
			"AccountName=s;AccountKey=[REDACTED:azure_account_key];Suffix=x",
			"AccountKey is a field of the connection string"},
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
	for _, sp := range redact.Builtin() {
		if !covered[sp.Name] {
			t.Errorf("built-in rule %s has no test case", sp.Name)
		}
	}
}

func TestNewRedactor_Custom(t *testing.T) {
	t.Parallel()
	r, err := NewRedactor([]string{`INT-[0-9]{4}`, `x*`})
	if err != nil {
		t.Fatal(err)
	}
	got := r.Rules()
	if !slices.Contains(got, "private_key") || !slices.Contains(got, "generic-api-key") || !slices.Equal(got[len(got)-3:], []string{"assignment", "custom-1", "custom-2"}) {
		t.Errorf("Rules() = %v, want built-ins, gitleaks', assignment, custom-1, custom-2", got)
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
