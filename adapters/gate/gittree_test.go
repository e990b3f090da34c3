package gate

import (
	"encoding/json"
	"testing"
)

// TestGuard_GitReadsTrees: git diff --no-index (and git diff of paths
// outside a repository), git grep, git add and git run in another
// directory take a tree along, so given the home directory or the root
// they are reviewed as rm, tar or grep -r are; a path through a magic
// link (/proc/PID/cwd, /proc/PID/fd, /dev/fd) may be any directory.
func TestGuard_GitReadsTrees(t *testing.T) {
	pols := dataDirPolicies(t, `allow = ["Bash(diff:*)", "Bash(gzip:*)", "Bash(chattr:*)", "Bash(fd:*)", "Bash(aws:*)", "Bash(git diff:*)", "Bash(git grep:*)", "Bash(git add:*)", "Bash(git status:*)", "Bash(git -C:*)"]`)
	rows := []bypassRow{
		{"no-index/home", `git diff --no-index /tmp/empty /home/u`, "review"},
		{"no-index/tilde", `git diff --no-index /tmp/empty ~`, "review"},
		{"no-index/root", `git diff --no-index /tmp/empty /`, "review"},
		{"no-index/home-slash", `git diff --no-index /tmp/empty ~/`, "review"},
		{"outside-repo/home", `git diff /tmp/empty ~`, "review"},
		{"grep/no-index", `git grep --no-index seed ~`, "review"},
		{"add/home", `git -C ~ add -A .`, "review"},
		{"dash-C/home", `git -C / diff --no-index /tmp/empty home`, "review"},
		{"proc-cwd/parent", `git diff --no-index /tmp/empty /proc/self/cwd/../..`, "review"},
		{"proc-fd", `git diff --no-index /tmp/empty /proc/self/fd/3`, "review"},
		{"dev-fd", `git diff --no-index /tmp/empty /dev/fd/3`, "review"},
		{"other/diff-r", `diff -rN /tmp/empty ~`, "review"},
		{"other/gzip-r", `gzip -r /home/u`, "review"},
		{"other/chattr-R", `chattr -R +i ~`, "review"},
		{"other/fd-exec", `fd . ~ -x cat`, "review"},
		{"other/aws-sync", `aws s3 sync ~ s3://b/h`, "review"},
		{"plain/diff", `git diff --stat HEAD~1`, "allow"},
		{"plain/diff-files", `diff a.txt b.txt`, "allow"},
		{"plain/no-index", `git diff --no-index a.txt b.txt`, "allow"},
		{"plain/grep", `git grep -n foo`, "allow"},
		{"plain/status", `git status`, "allow"},
	}
	decideRows(t, pols, rows)
	// From the home directory, "." is the home directory.
	for _, tc := range []bypassRow{
		{"dot/home", `git diff --no-index /tmp/empty .`, "review"},
		{"proc-cwd/home", `git diff --no-index /tmp/empty /proc/self/cwd`, "review"},
	} {
		b, _ := json.Marshal(map[string]string{"command": tc.cmd})
		if got := Decide(pols, Call{Tool: "Bash", Input: b, Dir: "/home/u"}); got.Action != tc.want {
			t.Errorf("%s: %q from /home/u: got %q (%s), want %q", tc.name, tc.cmd, got.Action, got.Pattern, tc.want)
		}
	}
}
