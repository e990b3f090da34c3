package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// An import of a folder holding a folder it cannot read (another
// user's, left by `sudo claude`, say) imports the rest, names that
// folder as an error (exit 1) and counts it apart from the files, in
// both formats; it never gives up on everything.
func TestImport_UnreadableFolder(t *testing.T) {
	bin := soakBuild(t)
	dir, err := os.MkdirTemp("", "lbunread")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	tx, data := filepath.Join(dir, "tx"), filepath.Join(dir, "data")
	for _, d := range []string{dir, tx, filepath.Join(tx, "locked")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	line := `{"type":"user","uuid":"u1","sessionId":"11110000-0000-4000-8000-000000000001","timestamp":"2026-12-07T10:00:00Z","message":{"role":"user","content":"hi"}}` + "\n"
	for _, f := range []string{filepath.Join(tx, "ok.jsonl"), filepath.Join(tx, "locked", "11110000-0000-4000-8000-000000000002.jsonl")} {
		if err := os.WriteFile(f, []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The folder is unreadable to whoever imports: as root, lbtest
	// imports and the folder is root's alone.
	run := func(args ...string) (string, string, int) {
		c := exec.Command(bin, append([]string{"--data", data}, args...)...)
		var out, errb strings.Builder
		c.Stdout, c.Stderr, c.Dir = &out, &errb, "/"
		c.Env = []string{"HOME=" + dir, "PATH=/usr/bin:/bin"}
		err := c.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String(), errb.String(), code
	}
	if os.Geteuid() == 0 {
		u := lookupSystemUser(t, "lbtest")
		if err := os.Chmod(filepath.Join(tx, "locked"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(data, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(data, int(u.uid), int(u.gid)); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
		run = func(args ...string) (string, string, int) {
			return u.run(t, "", "", append([]string{bin, "--data", data}, args...)...)
		}
	} else {
		if err := os.Chmod(filepath.Join(tx, "locked"), 0); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(filepath.Join(tx, "locked"), 0o755) })
	}
	note := filepath.Join(tx, "locked") + ": a folder that cannot be read (permission denied): the files in it were not looked for"

	out, stderr, code := run("import", "claude", tx)
	if code != 1 || !strings.Contains(out, "imported 1 transcript file: 1 line appended, 0 already in the log; 1 folder not read") ||
		!strings.Contains(stderr, "error: "+note) || !strings.Contains(stderr, "logbook: 1 folder not read (errors above)") {
		t.Errorf("import claude: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	out, stderr, code = run("sessions", "--all", "--json")
	if code != 0 || !strings.Contains(out, "11110000-0000-4000-8000-000000000001") {
		t.Errorf("sessions after the import: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = run("import", "codex", tx)
	if code != 1 || !strings.Contains(out, "1 folder not read") || !strings.Contains(stderr, "error: "+note) {
		t.Errorf("import codex: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
}
