package gate

import (
	"cmp"
	"path/filepath"
	"strings"
	"testing"
)

// TestDecide_GitWritesItsWorkTree checks that a git command which writes
// files anywhere in a work tree (reset --hard, pull, stash, a branch
// checked out, …) meets the Write deny and review rules as a write of
// that whole tree: the tree --work-tree or -C names, else the one the
// directory lies in, from its top (the nearest folder holding .git, on
// disk); that init, clone and worktree add write the folder they make;
// and that git commands which leave the files alone stay allowed.
func TestDecide_GitWritesItsWorkTree(t *testing.T) {
	root, pols := gateLayout(t, []string{"proj/x/y", "proj/.git", "secret", "mono/.git", "mono/secret2", "mono/app"}, `allow = ["Bash(git:*)", "Write(@R/proj/**)"]
deny = ["Write(@R/secret/**)", "Write(@R/mono/secret2/**)"]`)
	for _, tc := range []struct{ cmd, dir, want string }{
		// Each wrote under a denied folder, allowed before.
		{`git -C @R/secret init`, "proj/x", ActionDeny},
		{`git init @R/secret`, "proj/x", ActionDeny},
		{`git clone https://example.com/y @R/secret/y`, "proj/x", ActionDeny},
		{`git clone https://example.com/secret.git`, ".", ActionDeny},
		{`git --work-tree=@R/secret checkout -- key.txt`, "proj/x", ActionDeny},
		{`git --work-tree=@R/secret reset --hard`, "proj/x", ActionDeny},
		{`git -C @R/secret reset --hard`, "proj/x", ActionDeny},
		{`git -C @R/secret stash`, "proj/x", ActionDeny},
		{`git -C @R/secret pull`, "proj/x", ActionDeny},
		{`git worktree add @R/secret/wt`, "proj/x", ActionDeny},
		// A work tree that holds a denied folder: its writes may land
		// there.
		{`git pull`, "mono/app", ActionReview},
		{`git checkout main`, "mono/app", ActionReview},
		{`git reset --merge`, "mono/app", ActionReview},
		{`git stash pop`, "mono/app", ActionReview},
		// A work tree that holds none, or no write of the work tree.
		{`git pull`, "proj/x", ActionAllow},
		{`git reset --hard`, "proj/x", ActionAllow},
		{`git init`, "proj/x", ActionAllow},
		{`git checkout -b feature`, "mono/app", ActionAllow},
		{`git stash list`, "mono/app", ActionAllow},
		{`git status`, "mono/app", ActionAllow},
		{`git reset HEAD~1`, "mono/app", ActionAllow},
	} {
		c := bash(strings.ReplaceAll(tc.cmd, "@R", root))
		c.Dir = filepath.Join(root, tc.dir)
		if m := Decide(pols, c); m.Action != tc.want {
			t.Errorf("%q in %s: %+v, want %q", tc.cmd, tc.dir, m, cmp.Or(tc.want, "none"))
		}
	}
}
