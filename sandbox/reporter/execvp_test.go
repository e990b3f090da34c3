package reporter

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// forkExecPath runs what bubblewrap alone runs (its execvp(3)) and fails
// as it fails: a script without "#!" runs under /bin/sh, and a PATH
// entry where the name is a link loop or too long a name stops the
// search, as glibc's execvp does, rather than let a later entry's
// program run; an empty name is looked up nowhere.
// bubblewrap is the oracle: each case runs under both.
func TestForkExecPath_AsBwrap(t *testing.T) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
	}
	if out, err := exec.Command(bw, "--dev-bind", "/", "/", "--", "/bin/true").CombinedOutput(); err != nil {
		t.Skipf("bubblewrap does not run here: %v: %s", err, out)
	}
	dir := t.TempDir()
	mk := func(sub, name, body string, mode os.FileMode) string {
		t.Helper()
		d := filepath.Join(dir, sub)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(d, name)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Every program writes who it is ($0) and its arguments to $OUT.
	const say = `echo "$0 $*" > "$OUT"` + "\n"
	noShebang := mk("plain", "lb-cmd", say, 0o755)
	good := mk("good", "lb-cmd", "#!/bin/sh\n"+say, 0o755)
	loop := filepath.Join(dir, "loop")
	if err := os.Mkdir(loop, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("lb-cmd", filepath.Join(loop, "lb-cmd")); err != nil {
		t.Fatal(err)
	}
	long := filepath.Join(dir, strings.Repeat("n", 300)) // a component past NAME_MAX

	for _, tc := range []struct {
		name  string
		path  []string // PATH; argv[0] is lb-cmd
		argv  []string // else this argv
		chdir string   // the directory both run in
	}{
		{name: "NoShebang", path: []string{noShebang, good}},
		{name: "NoShebangByPath", argv: []string{filepath.Join(noShebang, "lb-cmd"), "a", "b"}},
		{name: "LinkLoop", path: []string{loop, good}},
		{name: "NameTooLong", path: []string{long, good}},
		{name: "Good", path: []string{dir + "/missing", good}},
		{name: "LongName", path: []string{dir + "/missing"}, argv: []string{strings.Repeat("n", 300)}},
		{name: "EmptyName", path: []string{good}, argv: []string{""}},
		{name: "EmptyEntryNoShebang", path: []string{"", good}, chdir: noShebang},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := tc.argv
			if argv == nil {
				argv = []string{"lb-cmd", "a", "b"}
			}
			path := strings.Join(tc.path, ":")
			if tc.path == nil {
				path = "/usr/bin:/bin"
			}
			t.Setenv("PATH", path)
			if tc.chdir != "" {
				t.Chdir(tc.chdir)
			}

			// bubblewrap alone.
			out := filepath.Join(t.TempDir(), "out")
			t.Setenv("OUT", out)
			c := exec.Command(bw, append([]string{"--dev-bind", "/", "/", "--"}, argv...)...)
			var stderr bytes.Buffer
			c.Stderr = &stderr
			bwErr := c.Run()
			bwRan, _ := os.ReadFile(out)
			bwSays := ""
			if bwErr != nil {
				// "bwrap: execvp lb-cmd: <strerror>"
				msg := strings.TrimSpace(stderr.String())
				bwSays = msg[strings.LastIndex(msg, ": ")+2:]
			}

			// The reporter's lookup.
			out = filepath.Join(t.TempDir(), "out")
			t.Setenv("OUT", out)
			pid, err := forkExecPath(argv)
			repSays := ""
			if err != nil {
				repSays = err.Error()
			} else {
				var ws syscall.WaitStatus
				if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
					t.Fatal(err)
				}
			}
			repRan, _ := os.ReadFile(out)

			if string(bwRan) != string(repRan) || !strings.EqualFold(bwSays, repSays) {
				t.Errorf("PATH %s, argv %q:\nbubblewrap alone ran %q, failed %q\nthe reporter ran %q, failed %q",
					path, argv, bwRan, bwSays, repRan, repSays)
			}
		})
	}
}
