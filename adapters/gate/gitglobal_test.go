package gate

import "testing"

// TestDecide_GitGlobalOptionsMeetDenyRules: git's options before its
// subcommand (-C DIR, --no-pager, --git-dir …) do not carry a command
// past a deny or review rule of that subcommand, nor past
// require_check; an allow rule is matched as written.
func TestDecide_GitGlobalOptionsMeetDenyRules(t *testing.T) {
	pols := annPolicies(t, "allow = [\"Bash\"]\ndeny = [\"Bash(git push:*)\"]\nreview = [\"Bash(git reset:*)\"]\n")
	for _, tc := range []struct {
		cmd  string
		want string
	}{
		{"git push origin x", ActionDeny},
		{"git -C . push", ActionDeny},
		{"git --no-pager push", ActionDeny},
		{"git -C . push --no-verify origin HEAD", ActionDeny},
		{"git --git-dir .git --work-tree . push", ActionDeny},
		{"/usr/bin/git -C /tmp push", ActionDeny},
		{"cd x && git --no-pager -C y reset --hard", ActionReview},
		{"git -C . status", ActionAllow},
		{"git -C push status", ActionAllow}, // push is -C's value
	} {
		if got := Decide(pols, bash(tc.cmd)); got.Action != tc.want {
			t.Errorf("%q: %s (%s), want %s", tc.cmd, got.Action, got.Pattern, tc.want)
		}
	}
}
