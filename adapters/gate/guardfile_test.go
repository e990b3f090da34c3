package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/logbook-dev/logbook/reducers/review"
)

// linkedDataDir makes, under a temporary root, a data dir holding
// policy.toml, creds.json and keys/, and a project folder proj (named
// projName) beside it with links into the data dir: dl (absolute), rl
// (relative), chain (a link to dl), dk (to the data dir's keys folder),
// dangling (to a file the data dir does not hold yet), and a src folder.
// It returns the root, the data dir and the project.
func linkedDataDir(t *testing.T, projName string) (root, dd, proj string) {
	t.Helper()
	root = t.TempDir()
	dd = filepath.Join(root, "data")
	proj = filepath.Join(root, projName)
	for _, d := range []string{filepath.Join(dd, "keys"), filepath.Join(proj, "src")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(dd, "policy.toml"), filepath.Join(dd, "creds.json"), filepath.Join(dd, "http-tokens.json"), filepath.Join(proj, "src", "a.go"), filepath.Join(proj, "README.md")} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{
		"dl":       dd,
		"rl":       filepath.Join("..", "data"),
		"chain":    "dl",
		"dk":       filepath.Join(dd, "keys"),
		"dangling": filepath.Join(dd, "new.json"),
	} {
		if err := os.Symlink(to, filepath.Join(proj, link)); err != nil {
			t.Fatal(err)
		}
	}
	return root, dd, proj
}

// toolCall returns a call of tool with input in, from dir.
func toolCall(tool string, in map[string]string, dir string) Call {
	b, _ := json.Marshal(in)
	return Call{Tool: tool, Input: b, Dir: dir}
}

// TestGuard_FileToolPathThroughLinkToDataDir: with every file tool
// allowed by a rule, a file tool's path that reaches the data dir is
// reviewed at critical risk however it gets there: absolute, relative
// to the working directory, through a link at any component (absolute,
// relative, a chain of links), a new file or folder under a linked
// folder, a dangling link, a ".." after a link (which the kernel takes
// from the link's target); a read (Read, NotebookRead) as well as a
// write, and a search (Grep, Glob, LS) of the data dir, of a folder in
// it, or (Grep, Glob) of a tree that holds it. Paths elsewhere are left
// to the rules.
func TestGuard_FileToolPathThroughLinkToDataDir(t *testing.T) {
	root, dd, proj := linkedDataDir(t, "proj")
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dd, filepath.Join(home, "lbdata")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	pol, err := ParsePolicy("p", []byte(`allow = ["Read", "Write", "Edit", "MultiEdit", "NotebookEdit", "NotebookRead", "Grep", "Glob", "LS"]`))
	if err != nil {
		t.Fatal(err)
	}
	pols := []*Policy{builtinFor(dd), pol}
	type tc struct {
		tool     string
		in       map[string]string
		reviewed bool
	}
	fp := func(tool, p string, reviewed bool) tc {
		return tc{tool, map[string]string{"file_path": p}, reviewed}
	}
	for _, c := range []tc{
		fp("Write", filepath.Join(proj, "dl", "policy.toml"), true),
		fp("Write", "dl/policy.toml", true),
		fp("Write", "./dl/policy.toml", true),
		fp("Write", "rl/policy.toml", true),
		fp("Write", "chain/policy.toml", true),
		fp("Write", "dl/newfile", true),
		fp("Write", "dl/newdir/newfile", true),
		fp("Write", "dangling", true),
		fp("Write", "dk/../policy.toml", true),
		fp("Write", "dl", true),
		fp("Write", filepath.Join(dd, "policy.toml"), true),
		fp("Edit", "dl/notify.toml", true),
		fp("MultiEdit", "rl/notify.toml", true),
		{"NotebookEdit", map[string]string{"notebook_path": "dl/x.ipynb"}, true},
		fp("Read", filepath.Join(dd, "creds.json"), true),
		fp("Read", "dl/creds.json", true),
		fp("Read", "rl/http-tokens.json", true),
		fp("Read", "dk/../creds.json", true),
		fp("Read", "~/lbdata/creds.json", true),
		fp("Write", "~/lbdata/notify.toml", true),
		{"NotebookRead", map[string]string{"notebook_path": "dl/x.ipynb"}, true},
		{"Grep", map[string]string{"pattern": "seed", "path": "dl"}, true},
		{"Grep", map[string]string{"pattern": "seed", "path": root}, true},
		{"Glob", map[string]string{"pattern": "dl/**/*.json"}, true},
		{"Glob", map[string]string{"pattern": "d?/*.json"}, true},
		{"Glob", map[string]string{"pattern": "*.json", "path": "rl"}, true},
		{"LS", map[string]string{"path": "dk"}, true},
		{"LS", map[string]string{"path": dd}, true},
		fp("Write", "src/b.go", false),
		fp("Edit", filepath.Join(proj, "src", "a.go"), false),
		fp("Read", "README.md", false),
		fp("Read", filepath.Join(root, "data-other", "x"), false),
		{"Grep", map[string]string{"pattern": "seed", "path": "src"}, false},
		{"Glob", map[string]string{"pattern": "src/**/*.go"}, false},
		{"LS", map[string]string{"path": root}, false},
	} {
		m := Decide(pols, toolCall(c.tool, c.in, proj))
		got := m.Pattern == GuardPattern && m.Action == ActionReview && m.Risk == review.RiskCritical
		if got != c.reviewed {
			t.Errorf("%s %v: %+v, want reviewed at critical risk %v", c.tool, c.in, m, c.reviewed)
		}
	}
}

// TestGuard_GlobsMatchedOnDisk: a shell word is read as bash would
// expand it now in the working directory, each match through its links:
// a glob (any form: "*", "?", "[…]", "[!…]", "**", in a brace list,
// after a "~", in a redirection, in a loop's list or a variable's value)
// or a variable the line gives a value that matches a link to the data
// dir, or a folder under one, is reviewed at critical risk, from a
// folder whose name holds blanks and non-ASCII letters too. A glob that
// must list more than 20,000 entries, or a folder it cannot list, is
// taken for the data dir. Globs
// that match nothing of it are left to the rules.
func TestGuard_GlobsMatchedOnDisk(t *testing.T) {
	root, dd, proj := linkedDataDir(t, "my ws ü")
	home := filepath.Join(root, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dd, filepath.Join(home, "lbdata")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dd, filepath.Join(proj, "datalink")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("loop", filepath.Join(proj, "loop")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", "")
	pols := []*Policy{builtinFor(dd), mustPolicy(t, `allow = ["Bash(cat:*)", "Bash(echo:*)", "Bash(ls:*)", "Bash(rm:*)"]`)}
	for _, tc := range []struct {
		cmd      string
		reviewed bool
	}{
		{`cat data*/creds.json`, true},
		{`cat datalin[k]/creds.json`, true},
		{`cat ./d?talink/http-tokens.json`, true},
		{`cat d?/creds.json`, true},
		{`cat [!x]l/creds.json`, true},
		{`cat DATA*/creds.json`, true},
		{`cat */creds.json`, true},
		{`cat */*`, true},
		{`cat **/policy.toml`, true},
		{`cat **/creds.json`, true},
		{`cat d[a-z]/creds.json`, true},
		{`cat "` + proj + `"/d?/creds.json`, true},
		{`cat {d?,x}/creds.json`, true},
		{`cat "$HOME"/lb*/creds.json`, true},
		{`cat ~/lb*/creds.json`, true},
		{`cat ~/lbdata/creds.json`, true},
		{`echo x > d*/policy.toml`, true},
		{`echo x > d?/newfile`, true},
		{`cat < r?/creds.json`, true},
		{`D=dl; cat $D/creds.json`, true},
		{`D='d?'; cat $D/creds.json`, true},
		{`for f in data*; do cat $f/creds.json; done`, true},
		{`ls data*`, true},
		// A folder the gate cannot list (a link that loops): taken for
		// the data dir.
		{`cat loop/*`, true},
		{`cat src/*.go`, false},
		{`cat s?c/a.go`, false},
		{`ls *.md`, false},
		{`D=src; cat $D/a.go`, false},
		{`echo $?`, false},
	} {
		c := bash(tc.cmd)
		c.Dir = proj
		m := Decide(pols, c)
		got := m.Pattern == GuardPattern && m.Action == ActionReview && m.Risk == review.RiskCritical
		if got != tc.reviewed {
			t.Errorf("%q: %+v, want reviewed at critical risk %v", tc.cmd, m, tc.reviewed)
		}
	}

	// A glob past the bound on the entries listed names the data dir.
	// The entries are links to one empty file: as many entries as files
	// of their own would be, made at a fraction of the cost.
	big := filepath.Join(root, "big")
	if err := os.MkdirAll(big, 0o755); err != nil {
		t.Fatal(err)
	}
	first := filepath.Join(big, "f0")
	if err := os.WriteFile(first, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= maxTreeEntries; i++ {
		if err := os.Link(first, filepath.Join(big, "f"+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	c := bash(`cat f1*`)
	c.Dir = big
	if m := Decide(pols, c); m.Pattern != GuardPattern || m.Risk != review.RiskCritical {
		t.Errorf("a glob over %d entries: %+v, want a critical review", maxTreeEntries+1, m)
	}
}

// mustPolicy parses policy text src, failing t when it does not parse.
func mustPolicy(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := ParsePolicy("p", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return p
}
