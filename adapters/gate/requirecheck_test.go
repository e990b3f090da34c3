package gate

import (
	"errors"
	"strings"
	"testing"
)

func TestRequireCheck(t *testing.T) {
	p, err := ParsePolicy("/d/policy.toml", []byte("allow = [\"Bash\"]\nrequire_check = [\"Bash(git push:*)\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]bool{
		"git push origin HEAD":          true,
		"cd sub && git push":            true,
		"env GIT_TRACE=1 git push -f":   true,
		"bash -c 'git push origin x'":   true,
		"$(echo git) push":              true, // any reading: the word may be git
		"git status":                    false,
		"echo git push":                 false,
		"git pushd":                     false,
		"timeout 60 git push --dry-run": true,
		// --no-verify skips the worktree's pre-push hook, never the gate.
		"git push --no-verify origin HEAD":     true,
		"git push origin HEAD --no-verify":     true,
		"git -C /w/x push --no-verify":         true,
		"GIT_DIR=.git git push --no-verify -f": true,
	} {
		pat, path := RequireCheck([]*Policy{p}, bash(cmd))
		if got := pat != ""; got != want || (got && path != "/d/policy.toml") {
			t.Errorf("%q: require_check %q in %q, want %t", cmd, pat, path, want)
		}
	}
	_, err = ParsePolicy("/d/policy.toml", []byte("require_check = [\"Bash(git push\"]\n"))
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Line != 1 || !strings.Contains(err.Error(), "Bash(git push") {
		t.Errorf("bad pattern: %v", err)
	}
	_, err = ParsePolicy("/d/policy.toml", []byte("require_check = \"Bash(git push:*)\"\n"))
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "require_check: want a list") {
		t.Errorf("not a list: %v", err)
	}
}
