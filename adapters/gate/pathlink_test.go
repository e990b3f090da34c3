package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// linkPolicies returns policy text src under the built-in rules for
// bypassDataDir.
func linkPolicies(t *testing.T, src string) []*Policy {
	t.Helper()
	p, err := ParsePolicy("p", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return []*Policy{builtinFor(bypassDataDir), p}
}

// TestDecide_MagicLinkPaths checks that a path through a link that
// resolves in the process following it (/proc/PID/fd, cwd, root, exe,
// /proc/self, /dev/fd, /dev/stdin…), or with a ".." after a component
// that may be a symbolic link, is reviewed whatever the rules allow: the
// gate cannot resolve it as the command will. Ordinary paths keep their
// answers.
func TestDecide_MagicLinkPaths(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	dir := t.TempDir()
	for _, d := range []string{"real", "etc"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "etc"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	pols := linkPolicies(t, `allow = ["Bash(mv:*)", "Bash(echo:*)", "Bash(cat:*)", "Bash(ls:*)", "Bash(cp:*)", "Write(/tmp/ok/**)", "Write(/dev/**)", "Write(`+dir+`/**)"]
deny = ["Write(/etc/**)", "Read(/etc/shadow)"]`)
	for _, tc := range []struct{ cmd, want string }{
		{`mv /tmp/inj.json /proc/4242/fd/12/../spool/NEW.json`, ActionReview},
		{`mv /tmp/inj.json /proc/$P/fd/12/../spool/NEW.json`, ActionReview},
		{`mv /tmp/inj.json /proc/4242/fd/12/NEW.json`, ActionReview},
		{`mv /tmp/inj.json /proc/4242/cwd/NEW.json`, ActionReview},
		{`cp /tmp/inj.json /proc/self/root/tmp/ok/x`, ActionReview},
		{`cp /tmp/inj.json /proc/thread-self/task/1/root/x`, ActionReview},
		{`cp --target-directory=/proc/1/root/etc /tmp/a`, ActionReview},
		{`echo x > /dev/fd/../root/etc/cron.d/x`, ActionReview},
		{`echo hi >> /dev/fd/../root/home/u/.bashrc`, ActionReview},
		{`echo x > /dev/fd/0/../../root/etc/x`, ActionReview},
		{`echo x > /dev/fd/../../self/root/etc/x`, ActionReview},
		{`echo hi > /dev/fd/../cwd/x`, ActionReview},
		{`echo hi > /dev/stdout/../x`, ActionReview},
		{`echo hi > /dev/stdin/x`, ActionReview},
		{`cat < /dev/fd/../root/etc/shadow`, ActionReview},
		{`cat /dev/fd/../root/etc/shadow`, ActionReview},
		{`echo x > /proc/self/root/tmp/x`, ActionReview},
		{`echo x > /proc/self/../1/x`, ActionReview},
		{`A=/dev/fd/../root/etc/x; echo x > $A`, ActionReview},
		{`echo x > ` + dir + `/link/../x`, ActionReview},
		{`echo x > ` + dir + `/missing/../x`, ActionReview},
		{`echo x > /tmp/ok/nothere/../x`, ActionReview},
		// Ordinary paths keep their answers.
		{`echo x > ` + dir + `/real/../x`, ActionAllow},
		{`echo x > ` + dir + `/real/x`, ActionAllow},
		{`echo x > /dev/fd/2`, ActionAllow},
		{`echo x > /dev/stderr`, ActionAllow},
		{`cat /proc/cpuinfo /proc/1/status`, ActionAllow},
		{`cat < /dev/stdin`, ActionAllow},
		{`ls /dev/fd`, ActionAllow},
		{`echo x > /etc/x`, ActionDeny},
		{`cat < /etc/shadow`, ActionDeny},
	} {
		if m := Decide(pols, bash(tc.cmd)); m.Action != tc.want {
			t.Errorf("%q: %+v, want %q", tc.cmd, m, tc.want)
		}
	}
	// A relative path is read from the working directory.
	for cmd, want := range map[string]string{
		`echo x > link/../x`: ActionReview,
		`echo x > real/../x`: ActionAllow,
		`echo x > ../x`:      ActionReview, // outside every Write rule: the guard has no say, nor an allow
	} {
		c := bash(cmd)
		c.Dir = dir
		m := Decide(pols, c)
		if want == ActionReview && cmd == `echo x > ../x` {
			want = ""
		}
		if m.Action != want {
			t.Errorf("%q in %s: %+v, want %q", cmd, dir, m, want)
		}
	}
	// A file tool's path through a magic link is reviewed as well.
	for _, f := range []string{"/dev/fd/../root/etc/x", "/proc/self/root/tmp/x", "/proc/1/cwd/x"} {
		if m := Decide(pols, file("Write", f)); m.Action != ActionReview {
			t.Errorf("Write %s: %+v, want review", f, m)
		}
	}
}

// TestDecide_SymlinkUnderAllowedPath checks that a path is matched
// against the deny and review Write, Edit and Read rules as the kernel
// resolves it too: a symbolic link under an allowed folder that leads
// into a denied one is denied.
func TestDecide_SymlinkUnderAllowedPath(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"ok", "etc/cron.d", "rev"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"ok/link": "etc", "ok/rl": "rev", "ok/shadow": "etc/shadow"} {
		if err := os.Symlink(filepath.Join(root, to), filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	src := strings.ReplaceAll(`allow = ["Bash(echo:*)", "Bash(cat:*)", "Write(@R/ok/**)", "Read(@R/ok/**)", "Edit(@R/ok/**)"]
deny = ["Write(@R/etc/**)", "Edit(@R/etc/**)", "Read(@R/etc/shadow)"]
review = ["Write(@R/rev/**)"]`, "@R", root)
	pols := linkPolicies(t, src)
	for _, tc := range []struct{ cmd, want string }{
		{`echo x > @R/ok/link/cron.d/x`, ActionDeny},
		{`echo x > @R/ok/link/new/deeper`, ActionDeny},
		{`cat < @R/ok/shadow`, ActionDeny},
		{`echo x > @R/ok/rl/x`, ActionReview},
		{`echo x > @R/ok/plain`, ActionAllow},
		{`cat < @R/ok/plain`, ActionAllow},
	} {
		cmd := strings.ReplaceAll(tc.cmd, "@R", root)
		if m := Decide(pols, bash(cmd)); m.Action != tc.want {
			t.Errorf("%q: %+v, want %q", cmd, m, tc.want)
		}
	}
	c := bash(`echo x > link/cron.d/x`)
	c.Dir = filepath.Join(root, "ok")
	if m := Decide(pols, c); m.Action != ActionDeny {
		t.Errorf("relative through a link: %+v, want deny", m)
	}
	for _, tc := range []struct{ tool, f, want string }{
		{"Write", "@R/ok/link/cron.d/x", ActionDeny},
		{"Edit", "@R/ok/link/cron.d/x", ActionDeny},
		{"Read", "@R/ok/shadow", ActionDeny},
		{"Write", "@R/ok/rl/x", ActionReview},
		{"Write", "@R/ok/plain", ActionAllow},
	} {
		f := strings.ReplaceAll(tc.f, "@R", root)
		if m := Decide(pols, file(tc.tool, f)); m.Action != tc.want {
			t.Errorf("%s %s: %+v, want %q", tc.tool, f, m, tc.want)
		}
	}
}

// TestDecide_DotDotAfterALink checks that a ".." after a symbolic link
// is read as the kernel reads it, from the link's target, by the deny and
// review rules: ok/up/../etc/x, with ok/up a link to a folder beside etc,
// is etc/x to the kernel, not ok/etc/x (its letters cleaned).
func TestDecide_DotDotAfterALink(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"ok", "etc/sub", "side/deep"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// ok/up/.. is etc to the kernel, ok/in/.. is side; both are ok by
	// their letters.
	for link, to := range map[string]string{"ok/up": "etc/sub", "ok/in": "side/deep"} {
		if err := os.Symlink(filepath.Join(root, to), filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	src := strings.ReplaceAll(`allow = ["Bash(echo:*)", "Bash(cat:*)", "Write(@R/**)", "Read(@R/**)", "Edit(@R/**)"]
deny = ["Write(@R/etc/**)", "Edit(@R/etc/**)", "Read(@R/etc/**)"]
review = ["Write(@R/side/x)"]`, "@R", root)
	pols := linkPolicies(t, src)
	for _, tc := range []struct{ cmd, want string }{
		{`echo x > @R/ok/up/../x`, ActionDeny},
		{`cat < @R/ok/up/../x`, ActionDeny},
		{`echo x > @R/ok/in/../x`, ActionReview},
		{`echo x > @R/ok/plain`, ActionAllow},
	} {
		cmd := strings.ReplaceAll(tc.cmd, "@R", root)
		if m := Decide(pols, bash(cmd)); m.Action != tc.want {
			t.Errorf("%q: %+v, want %q", cmd, m, tc.want)
		}
	}
	c := bash(`echo x > up/../x`)
	c.Dir = filepath.Join(root, "ok")
	if m := Decide(pols, c); m.Action != ActionDeny {
		t.Errorf("relative, .. after a link: %+v, want deny", m)
	}
	for _, tc := range []struct{ tool, f, want string }{
		{"Write", "@R/ok/up/../x", ActionDeny},
		{"Edit", "@R/ok/up/../x", ActionDeny},
		{"Read", "@R/ok/up/../x", ActionDeny},
		{"Write", "@R/ok/in/../x", ActionReview},
		{"Write", "@R/ok/plain", ActionAllow},
	} {
		f := strings.ReplaceAll(tc.f, "@R", root)
		if m := Decide(pols, file(tc.tool, f)); m.Action != tc.want {
			t.Errorf("%s %s: %+v, want %q", tc.tool, f, m, tc.want)
		}
	}
	w := file("Write", "up/../x")
	w.Dir = filepath.Join(root, "ok")
	if m := Decide(pols, w); m.Action != ActionDeny {
		t.Errorf("Write relative, .. after a link: %+v, want deny", m)
	}
	// A search of the tree ok/up/.. searches etc.
	call := func(tool string, in map[string]any) Call {
		b, _ := json.Marshal(in)
		return Call{Tool: tool, Input: b, Dir: filepath.Join(root, "ok")}
	}
	search := linkPolicies(t, strings.ReplaceAll(`allow = ["Grep", "Glob", "Read(@R/ok/**)"]
deny = ["Read(@R/etc/**)"]`, "@R", root))
	for _, c := range []Call{
		call("Grep", map[string]any{"pattern": "key", "path": root + "/ok/up/.."}),
		call("Glob", map[string]any{"pattern": "**/*", "path": root + "/ok/up/.."}),
		call("Glob", map[string]any{"pattern": root + "/ok/up/../**"}),
	} {
		if m := Decide(search, c); m.Action == ActionAllow {
			t.Errorf("%s %s: %+v, want it held by the deny of etc", c.Tool, c.Input, m)
		}
	}
	if m := Decide(search, call("Grep", map[string]any{"pattern": "key", "path": root + "/ok/in/.."})); m.Action != ActionAllow {
		t.Errorf("Grep of side, through ok/in/..: %+v, want allow", m)
	}
}

// TestDecide_UnknownTargetsMeetFileRules checks that a redirection whose
// target or source the gate cannot know (a parameter, a substitution, a
// glob, a brace list, "~user", a magic link) is reviewed, never allowed,
// when a policy in force has a deny or review rule of that kind (Write
// or Edit for a target, Read for a source): whether it names a denied
// path cannot be proved. With the allow in a project's file and the deny
// in the data dir's alike.
func TestDecide_UnknownTargetsMeetFileRules(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	allow := `allow = ["Bash"]`
	deny := `deny = ["Write(/etc/**)", "Read(/etc/shadow)"]`
	one := linkPolicies(t, allow+"\n"+deny)
	proj, err := ParsePolicy("project", []byte(allow))
	if err != nil {
		t.Fatal(err)
	}
	data, err := ParsePolicy("data", []byte(deny))
	if err != nil {
		t.Fatal(err)
	}
	split := []*Policy{builtinFor(bypassDataDir), data, proj}
	writeOnly := linkPolicies(t, allow+"\n"+`review = ["Write(/etc/**)"]`)
	none := linkPolicies(t, allow)
	for _, tc := range []struct {
		cmd             string
		want, wantWrite string // under one/split; under writeOnly
		wantNone        string // with no file rule
	}{
		{`X=/etc; echo x > $X/cron.d/x`, ActionReview, ActionReview, ActionAllow},
		{`echo x > /e?c/x`, ActionReview, ActionReview, ActionAllow},
		{`echo x > {/etc,/tmp/ok}/x`, ActionReview, ActionReview, ActionAllow},
		{`echo x > {/tmp/a,/tmp/b,/tmp/c,/etc}/x`, ActionReview, ActionReview, ActionAllow},
		{`echo x > /tmp/{1..3}`, ActionReview, ActionReview, ActionAllow},
		// ~root is read as root's home too: /root/../etc/x is /etc/x.
		{`echo x > ~root/../etc/x`, ActionDeny, ActionReview, ActionReview},
		{`echo x > ~root/x`, ActionReview, ActionReview, ActionAllow},
		{`echo x > /proc/self/root/tmp/ok/x`, ActionReview, ActionReview, ActionReview},
		{`echo x > "$(echo /etc)/x"`, ActionReview, ActionReview, ActionReview},
		{`cat < /e*/shadow`, ActionReview, ActionAllow, ActionAllow},
		{`f=/etc/shadow; cat < $f`, ActionReview, ActionAllow, ActionAllow},
		{`echo x > /etc/x`, ActionDeny, ActionReview, ActionAllow},
		{`cat < /etc/shadow`, ActionDeny, ActionAllow, ActionAllow},
		{`echo x > /tmp/x`, ActionAllow, ActionAllow, ActionAllow},
		{`echo x > ~/x`, ActionAllow, ActionAllow, ActionAllow},
	} {
		for _, set := range []struct {
			name string
			pols []*Policy
			want string
		}{{"one", one, tc.want}, {"split", split, tc.want}, {"write", writeOnly, tc.wantWrite}, {"none", none, tc.wantNone}} {
			if m := Decide(set.pols, bash(tc.cmd)); m.Action != set.want {
				t.Errorf("%s: %q: %+v, want %q", set.name, tc.cmd, m, set.want)
			}
		}
	}
}

// TestGuard_NewFileThroughLinkToDataDir checks that a file not yet made,
// under a symbolic link that leads into the data dir, is reviewed as the
// data dir is, even where "Bash" alone allows the rest.
func TestGuard_NewFileThroughLinkToDataDir(t *testing.T) {
	root := t.TempDir()
	dd := filepath.Join(root, "data")
	proj := filepath.Join(root, "proj")
	for _, d := range []string{filepath.Join(dd, "spool"), proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(dd, filepath.Join(proj, "d")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dd, "spool", "new.json"), filepath.Join(proj, "dangling")); err != nil {
		t.Fatal(err)
	}
	pol, err := ParsePolicy("p", []byte(`allow = ["Bash"]`))
	if err != nil {
		t.Fatal(err)
	}
	pols := []*Policy{builtinFor(dd), pol}
	for cmd, want := range map[string]string{
		"echo x > d/spool/new.json":    ActionReview,
		"cp /tmp/x d/spool/new.json":   ActionReview,
		"echo x > dangling":            ActionReview,
		"echo x > proj-file.json":      ActionAllow,
		"cp /tmp/x other/new/file.txt": ActionAllow,
	} {
		c := bash(cmd)
		c.Dir = proj
		if m := Decide(pols, c); m.Action != want {
			t.Errorf("%q: %+v, want %q", cmd, m, want)
		}
	}
}
