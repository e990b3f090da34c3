package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/reducers/review"
)

// secretPolicy is a file serve's user may read and a peer may not: its
// text must never come back in a project policy's error.
const secretPolicy = "root:SECRET-hash-7f3a:19000:0:99999:7:::\n"

// projectWith makes a project dir whose .logbook/policy.toml is made by
// mk (given the path it must make), and returns the project dir.
func projectWith(t *testing.T, mk func(t *testing.T, path string)) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, ProjectPolicyDir), 0o755); err != nil {
		t.Fatal(err)
	}
	mk(t, filepath.Join(dir, ProjectPolicyDir, PolicyFile))
	return dir
}

// TestPolicies_ProjectFollowsNoLink: a project's policy file that is a
// symlink, or whose .logbook folder is one, is not read: it is a broken
// policy (every call denied), and the error names the path, not what the
// link points at holds.
func TestPolicies_ProjectFollowsNoLink(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "shadow")
	if err := os.WriteFile(secret, []byte(secretPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "good.toml")
	if err := os.WriteFile(good, []byte(`allow = ["Bash"]`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fileLink := projectWith(t, func(t *testing.T, p string) {
		if err := os.Symlink(secret, p); err != nil {
			t.Fatal(err)
		}
	})
	goodLink := projectWith(t, func(t *testing.T, p string) {
		if err := os.Symlink(good, p); err != nil {
			t.Fatal(err)
		}
	})
	dirLink := t.TempDir()
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, PolicyFile), []byte(`allow = ["Bash"]`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, filepath.Join(dirLink, ProjectPolicyDir)); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"file link to a secret": fileLink, "file link": goodLink, ".logbook link": dirLink} {
		ps := &Policies{}
		pols, broken, _ := ps.For(dir, nil)
		if len(broken) != 1 {
			t.Errorf("%s: broken %v, want the link refused", name, broken)
			continue
		}
		if m := Decide(pols, bash("ls")); m.Action == ActionAllow {
			t.Errorf("%s: the linked policy's allow is in force: %+v", name, m)
		}
		msg := broken[0].Error()
		if strings.Contains(msg, "SECRET") || strings.Contains(msg, "root:") {
			t.Errorf("%s: the error quotes the file: %s", name, msg)
		}
		if !strings.Contains(msg, "link") {
			t.Errorf("%s: the error %q does not say it is a link", name, msg)
		}
	}
}

// TestPolicies_ProjectErrorQuotesNothing: a project policy that does not
// parse is named by its path, line and column, never by its text; the
// data dir's own policy keeps quoting what is wrong, for its owner.
func TestPolicies_ProjectErrorQuotesNothing(t *testing.T) {
	for _, text := range []string{
		secretPolicy,
		`allow = ["Bash(SECRET-hash-7f3a"]` + "\n",
		`SECRET-hash-7f3a = ["Bash"]` + "\n",
		`allow = "SECRET-hash-7f3a"` + "\n",
		"[risk]\n\"Bash(x)\" = \"SECRET-hash-7f3a\"\n",
	} {
		dir := projectWith(t, func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		ps := &Policies{}
		_, broken, _ := ps.For(dir, nil)
		if len(broken) != 1 {
			t.Errorf("%q: broken %v, want one", text, broken)
			continue
		}
		msg := broken[0].Error()
		if strings.Contains(msg, "SECRET") || strings.Contains(msg, "root:") {
			t.Errorf("%q: the error quotes the file: %s", text, msg)
		}
		if !regexp.MustCompile(regexp.QuoteMeta(filepath.Join(dir, ProjectPolicyDir, PolicyFile)) + `:\d+:\d+: `).MatchString(msg) {
			t.Errorf("%q: the error %q names no path and line", text, msg)
		}
	}
	dd := t.TempDir()
	if err := os.WriteFile(filepath.Join(dd, PolicyFile), []byte(`allow = ["Bash(SECRET-hash-7f3a"]`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ps := &Policies{DataDir: dd}
	if _, broken, _ := ps.For("", nil); len(broken) != 1 || !strings.Contains(broken[0].Error(), "SECRET") {
		t.Errorf("the data dir's policy: %v, want its fault quoted", broken)
	}
}

// TestPolicies_ProjectOwnedByThePeer: in system mode (a peer's uid given)
// a project's policy is read only when it is the peer's own or root's
// (root's with one link only); another user's is refused, quoting
// nothing, and the per-user mode (no peer) reads any.
func TestPolicies_ProjectOwnedByThePeer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	const peer, other = 64101, 64102
	withOwner := func(uid int, text string) string {
		return projectWith(t, func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, uid, uid); err != nil {
				t.Fatal(err)
			}
		})
	}
	deny := `deny = ["Bash(ls)"]` + "\n"
	uid := uint32(peer)
	for _, c := range []struct {
		name string
		dir  string
		ok   bool
	}{
		{"the peer's", withOwner(peer, deny), true},
		{"root's", withOwner(0, deny), true},
		{"another user's", withOwner(other, deny), false},
		{"another user's secret", withOwner(other, secretPolicy), false},
	} {
		ps := &Policies{}
		pols, broken, _ := ps.For(c.dir, &uid)
		if c.ok {
			if len(broken) != 0 || Decide(pols, bash("ls")).Action != ActionDeny {
				t.Errorf("%s: broken %v, rule %+v; want its deny in force", c.name, broken, Decide(pols, bash("ls")))
			}
			continue
		}
		if len(broken) != 1 || !strings.Contains(broken[0].Error(), "owned by uid 64102") || strings.Contains(broken[0].Error(), "SECRET") {
			t.Errorf("%s: broken %v, want it refused as another user's, quoting nothing", c.name, broken)
		}
		if strings.Contains(c.name, "secret") {
			continue
		}
		if pols, broken, _ := (&Policies{}).For(c.dir, nil); len(broken) != 0 || Decide(pols, bash("ls")).Action != ActionDeny {
			t.Errorf("%s in per-user mode: broken %v, want it read", c.name, broken)
		}
	}
	// A second link to a file of root's: a peer could make one to any
	// file of root's it can name (without protected_hardlinks).
	linked := withOwner(0, deny)
	if err := os.Link(filepath.Join(linked, ProjectPolicyDir, PolicyFile), filepath.Join(t.TempDir(), "again")); err != nil {
		t.Fatal(err)
	}
	if _, broken, _ := (&Policies{}).For(linked, &uid); len(broken) != 1 || !strings.Contains(broken[0].Error(), "links") {
		t.Errorf("root's file with two links: broken %v, want it refused", broken)
	}
	// The same file, asked for by two peers: each is judged on its own.
	mine := withOwner(peer, deny)
	ps := &Policies{}
	if _, broken, _ := ps.For(mine, &uid); len(broken) != 0 {
		t.Fatalf("the peer's: %v", broken)
	}
	o := uint32(other)
	if _, broken, _ := ps.For(mine, &o); len(broken) != 1 {
		t.Errorf("the peer's file asked for by another: broken %v, want it refused", broken)
	}
}

// TestPolicies_ProjectRefusedAfterAGoodRead: a project's policy file
// read once, then edited so it no longer parses, keeps the version read
// before in force (stale); replaced by a symbolic link, it has none in
// force (broken: its calls denied), the version read before included;
// removed, it is gone, and serve's log says it was removed, not that it
// parses again.
func TestPolicies_ProjectRefusedAfterAGoodRead(t *testing.T) {
	dir := projectWith(t, func(t *testing.T, p string) {
		if err := os.WriteFile(p, []byte(`allow = ["Bash"]`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	p := filepath.Join(dir, ProjectPolicyDir, PolicyFile)
	// The data dir's policy puts projects' allows in force.
	dd := t.TempDir()
	if err := os.WriteFile(filepath.Join(dd, PolicyFile), []byte("project_allows = true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var lines []string
	g := &Gate{Policies: &Policies{DataDir: dd}, Logf: func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }}
	check := func(what string, wantBroken, wantStale int, wantAllow bool) {
		t.Helper()
		pols, broken, stale := g.Policies.For(dir, nil)
		g.notePolicies(dir, pols, broken, stale)
		if len(broken) != wantBroken || len(stale) != wantStale {
			t.Errorf("%s: broken %v, stale %v; want %d broken, %d stale", what, broken, stale, wantBroken, wantStale)
		}
		if allowed := len(broken) == 0 && Decide(pols, bash("ls")).Action == ActionAllow; allowed != wantAllow {
			t.Errorf("%s: ls allowed %v, want %v", what, allowed, wantAllow)
		}
	}
	check("read once", 0, 0, true)
	version := 0
	replace := func(mk func()) {
		t.Helper()
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		mk()
		version++
		at := time.Unix(1_700_000_000+int64(version), 0)
		_ = os.Chtimes(p, at, at) // a link's own time is not followed: its target's is
	}
	replace(func() {
		if err := os.WriteFile(p, []byte(`allow = ["Bash"`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	check("no longer parses", 0, 1, true)
	target := filepath.Join(t.TempDir(), "shared.toml")
	if err := os.WriteFile(target, []byte(`allow = ["Bash"]`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	replace(func() {
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	})
	check("a link", 1, 0, false)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	check("removed", 0, 0, false)
	if last := lines[len(lines)-1]; !strings.Contains(last, "removed; nothing of it is in force") || strings.Contains(last, "parses again") {
		t.Errorf("the log after the file was removed: %q", lines)
	}
}

// TestPolicies_ProjectAllowsOnlyWhereTheDataDirSaysSo: a project's
// policy file, which whoever commits to the project writes, cannot allow
// a call on its own: its allow rules are in force only where the data
// dir's policy sets project_allows = true, and serve's log says so once;
// its deny and review rules are in force either way. A project's own
// project_allows means nothing.
func TestPolicies_ProjectAllowsOnlyWhereTheDataDirSaysSo(t *testing.T) {
	dir := projectWith(t, func(t *testing.T, p string) {
		if err := os.WriteFile(p, []byte("project_allows = true\nallow = [\"Bash\"]\nreview = [\"Bash(git push:*)\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	dd := t.TempDir()
	var lines []string
	g := &Gate{Policies: &Policies{DataDir: dd}, Logf: func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }}
	decide := func(cmd string) string {
		t.Helper()
		pols, broken, stale := g.Policies.For(dir, nil)
		g.notePolicies(dir, pols, broken, stale)
		if len(broken)+len(stale) != 0 {
			t.Fatalf("broken %v, stale %v", broken, stale)
		}
		return Decide(pols, bash(cmd)).Action
	}
	for _, tc := range []struct {
		data             string // the data dir's policy.toml, "" for none
		wantLS, wantPush string
		wantLogged       bool
	}{
		{"", "", ActionReview, true}, // said once, not again below
		{"deny = [\"Bash(sudo:*)\"]\n", "", ActionReview, false},
		{"project_allows = false\n", "", ActionReview, false},
		{"project_allows = true\n", ActionAllow, ActionReview, false},
	} {
		pf := filepath.Join(dd, PolicyFile)
		os.Remove(pf)
		if tc.data != "" {
			if err := os.WriteFile(pf, []byte(tc.data), 0o600); err != nil {
				t.Fatal(err)
			}
			// A new stamp for the file read again (size and time).
			now := time.Now().Add(time.Duration(len(lines)+1) * time.Second)
			os.Chtimes(pf, now, now)
		}
		lines = nil
		if got := decide("ls"); got != tc.wantLS {
			t.Errorf("data dir %q: ls %q, want %q", tc.data, got, tc.wantLS)
		}
		if got := decide("git push origin main"); got != tc.wantPush {
			t.Errorf("data dir %q: git push %q, want %q", tc.data, got, tc.wantPush)
		}
		said := strings.Contains(strings.Join(lines, "\n"), "its allow rules are not in force")
		if said != tc.wantLogged {
			t.Errorf("data dir %q: log %q; want it to say the project's allows are off (once): %v", tc.data, lines, tc.wantLogged)
		}
	}
}

// TestPolicies_ProjectRulesHoldBelowItsTop: a call made from a folder
// below a project's top (a cd into src/) is under the project's rules as
// at its top, and a folder's own policy file adds to its ancestors'
// rather than replacing them: the strictest answer wins.
func TestPolicies_ProjectRulesHoldBelowItsTop(t *testing.T) {
	dir := projectWith(t, func(t *testing.T, p string) {
		if err := os.WriteFile(p, []byte("deny = [\"Bash(ls:*)\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	dd := t.TempDir()
	if err := os.WriteFile(filepath.Join(dd, PolicyFile), []byte("allow = [\"Bash(ls:*)\", \"Bash(cat:*)\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "src", "deep")
	if err := os.MkdirAll(filepath.Join(sub, ProjectPolicyDir), 0o755); err != nil {
		t.Fatal(err)
	}
	// The nested folder's own file speaks of cat only.
	if err := os.WriteFile(filepath.Join(sub, ProjectPolicyDir, PolicyFile), []byte("review = [\"Bash(cat:*)\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ps := &Policies{DataDir: dd}
	for _, tc := range []struct{ dir, cmd, want string }{
		{dir, "ls -la", ActionDeny},
		{filepath.Join(dir, "src"), "ls -la", ActionDeny},
		{sub, "ls -la", ActionDeny},
		{sub, "cat x", ActionReview},
		{filepath.Join(dir, "src"), "cat x", ActionAllow},
		{dd, "ls -la", ActionAllow}, // outside the project
	} {
		pols, broken, _ := ps.For(tc.dir, nil)
		if len(broken) != 0 {
			t.Fatalf("%s: broken %v", tc.dir, broken)
		}
		if got := Decide(pols, bash(tc.cmd)).Action; got != tc.want {
			t.Errorf("%q from %s: %q, want %q", tc.cmd, tc.dir, got, tc.want)
		}
	}
}

// TestGuard_TreeChangeOfAProjectIsReviewed: a command that changes a
// whole tree holding a project's .logbook (a git work tree checked out,
// reset, switched or stashed; a folder removed) may remove or rewrite the
// project's policy without naming it: reviewed at critical risk, from the
// tree's top or from a folder below it. The same in a tree without
// .logbook is not the guard's.
func TestGuard_TreeChangeOfAProjectIsReviewed(t *testing.T) {
	dir := projectWith(t, func(t *testing.T, p string) {
		if err := os.WriteFile(p, []byte("deny = [\"Bash(echo:*)\"]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	plain := t.TempDir()
	for _, d := range []string{filepath.Join(dir, ".git"), filepath.Join(dir, "src"), filepath.Join(plain, ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ps := &Policies{DataDir: t.TempDir()}
	for _, cmd := range []string{"git checkout HEAD~1", "git reset --hard HEAD~1", "git switch -c tmp HEAD~1", "git stash -u", "rm -rf " + dir} {
		for _, from := range []string{dir, filepath.Join(dir, "src")} {
			pols, _, _ := ps.For(from, nil)
			c := bash(cmd)
			c.Dir = from
			m := Decide(pols, c)
			if m.Action != ActionReview || m.Risk != review.RiskCritical {
				t.Errorf("%q from %s: %s at %q risk, want review at critical", cmd, from, m.Action, m.Risk)
			}
		}
		pols, _, _ := ps.For(plain, nil)
		c := bash(strings.ReplaceAll(cmd, dir, plain))
		c.Dir = plain
		if m := Decide(pols, c); m.Pattern == GuardPattern {
			t.Errorf("%q in a tree without .logbook: %s by %s", cmd, m.Action, m.Pattern)
		}
	}
}

// TestCheckPolicies_SaysTheDataDirsFileRemoved: the data dir's policy
// file in force that is removed while serve runs takes its deny and
// review rules with it: serve's log says so, once, and again after a
// new file was in force and went too.
func TestCheckPolicies_SaysTheDataDirsFileRemoved(t *testing.T) {
	dd := t.TempDir()
	p := filepath.Join(dd, PolicyFile)
	var lines []string
	g := &Gate{Policies: &Policies{DataDir: dd}, Logf: func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }}
	said := func() int { return strings.Count(strings.Join(lines, "\n"), "removed; nothing of it is in force") }
	for round := 1; round <= 2; round++ {
		if err := os.WriteFile(p, []byte(fmt.Sprintf("deny = [\"Bash(rm -rf:*)\"]\n# %d\n", round)), 0o600); err != nil {
			t.Fatal(err)
		}
		g.CheckPolicies()
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		g.CheckPolicies()
		g.CheckPolicies()
		if said() != round {
			t.Fatalf("round %d: the log says the removal %d times, want %d:\n%s", round, said(), round, strings.Join(lines, "\n"))
		}
	}
}
