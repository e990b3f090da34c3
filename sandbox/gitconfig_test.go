package sandbox

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// parseGitConfig reads a configuration file as git itself does: the
// keys and values `git config --list` gives, in order, for sections old
// and new, quotes, escapes, comments and continuation lines.
func TestParseGitConfig_AsGitReadsIt(t *testing.T) {
	t.Parallel()
	text := `[core]
	hooksPath = .githooks ; comment
	fsmonitor = "sh -c \"tools/x.sh\" # not a comment"
[alias] up = !sh tools/up.sh
[filter "My.Filter"]
	clean = tools/clean.sh \
  %f
	smudge
[branch.Main]
	remote = origin
[includeIf "gitdir:~/w/"]
	path = ../inc.gitconfig
# comment
[Diff "x"] TextConv = "a\tb\\c\nd"
[sendemail]
	smtpServer = tools/send # trailing
`
	f := filepath.Join(t.TempDir(), "config")
	must(t, os.WriteFile(f, []byte(text), 0o644))
	out, err := exec.Command("git", "config", "-f", f, "--list", "--null").Output()
	if err != nil {
		t.Fatalf("git config --list: %v", err)
	}
	var want []string
	for _, e := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, v, _ := strings.Cut(e, "\n")
		want = append(want, k+"="+v)
	}
	var got []string
	for _, v := range parseGitConfig([]byte(text), f) {
		got = append(got, v.key+"="+v.value)
	}
	if !slices.Equal(got, want) {
		t.Errorf("parsed\n%q\ngit reads\n%q", got, want)
	}
}

// The words of a command that name paths, and the keys whose values are
// commands.
func TestGitCommandWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key, value string
		kind       gitPathKind
		words      []string
	}{
		{"core.fsmonitor", "touch /tmp/pwned; false", gitCommand, []string{"/tmp/pwned"}},
		{"core.fsmonitor", "./tools/fsmon.sh", gitCommand, []string{"./tools/fsmon.sh"}},
		{"alias.up", "!sh -c 'tools/a.sh && true' --opt=x/y", gitCommand, []string{"tools/a.sh", "x/y"}},
		{"alias.st", "status -- a/b", gitNotPath, nil},
		{"filter.x.clean", `sh "$HOME/x" tools/c.sh`, gitCommand, []string{"tools/c.sh"}},
		{"filter.clean", "tools/c.sh", gitNotPath, nil},
		{"remote.origin.url", "git@host:org/repo.git", gitNotPath, nil},
		{"core.hookspath", ".husky/_", gitDirPath, nil},
		{"includeif.gitdir:/a.b/.path", "x", gitIncludePath, nil},
		{"hook.lint.command", "tools/lint", gitCommand, []string{"tools/lint"}},
	} {
		if k := gitPathKindOf(tc.key, tc.value); k != tc.kind {
			t.Errorf("%s = %q: kind %d, want %d", tc.key, tc.value, k, tc.kind)
		}
		if tc.kind == gitCommand {
			if w := commandWords(tc.value); !slices.Equal(w, tc.words) {
				t.Errorf("%s = %q: words %q, want %q", tc.key, tc.value, w, tc.words)
			}
		}
	}
}

// readSmall's buffer is the file's size, give or take, not its bound: a
// WorkspaceWrite start reads each configuration file of its repository.
func TestReadSmall_BufferFitsTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "config")
	want := "[core]\n\thooksPath = hooks\n"
	if err := os.WriteFile(p, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := readSmall(p, gitConfigMaxBytes)
	if err != nil || string(b) != want {
		t.Fatalf("readSmall = %q, %v; want %q", b, err, want)
	}
	if cap(b) > 64<<10 {
		t.Errorf("readSmall of %d bytes holds a buffer of %d bytes", len(b), cap(b))
	}
	// A file over the bound is read up to it.
	if err := os.WriteFile(p, bytes.Repeat([]byte("#"), 300), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := readSmall(p, 100); err != nil || len(b) != 100 {
		t.Errorf("readSmall of 300 bytes, bound 100 = %d bytes, %v; want 100", len(b), err)
	}
	if _, err := readSmall(filepath.Dir(p), 100); err == nil {
		t.Error("readSmall of a directory: no error")
	}
}
