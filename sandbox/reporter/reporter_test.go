package reporter

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// forkExecPath runs a command found through PATH as execvp(3) does,
// going on past entries that name nothing, a file it may not run and a
// directory, and forks only for entries that name something.
func TestForkExecPath_AsExecvp(t *testing.T) {
	const name = "lb-reporter-cmd"
	missing := filepath.Join(t.TempDir(), "missing")
	file := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	notExec, isDir, runs := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(notExec, name), []byte("#!/bin/sh\nexit 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(isDir, name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(runs, name), []byte("#!/bin/sh\nexit 7\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var forks int
	forkExec = func(argv0 string, argv []string, attr *syscall.ProcAttr) (int, error) {
		forks++
		return syscall.ForkExec(argv0, argv, attr)
	}
	t.Cleanup(func() { forkExec = syscall.ForkExec })

	for _, tc := range []struct {
		name      string
		path      []string
		wantErr   error // nil: runs, exit 7
		wantForks int
	}{
		{"Found", []string{missing, missing + "/x", file, notExec, isDir, runs}, nil, 3},
		{"FirstEntry", []string{runs, missing}, nil, 1},
		{"NameNothing", []string{missing, file, missing + "/y"}, syscall.ENOENT, 0},
		{"NotExecutable", []string{missing, notExec, missing}, syscall.EACCES, 1},
		{"DirectoryOnly", []string{isDir}, syscall.EACCES, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("PATH", strings.Join(tc.path, ":"))
			forks = 0
			pid, err := forkExecPath([]string{name})
			if err != tc.wantErr {
				t.Fatalf("forkExecPath(%s) error = %v, want %v", name, err, tc.wantErr)
			}
			if err == nil {
				var ws syscall.WaitStatus
				if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
					t.Fatal(err)
				}
				if !ws.Exited() || ws.ExitStatus() != 7 {
					t.Errorf("the command found ended %v, want exit 7 (the one in %s)", ws, runs)
				}
			}
			if forks != tc.wantForks {
				t.Errorf("forks = %d, want %d: a fork for each entry that names something, none for the rest", forks, tc.wantForks)
			}
		})
	}
}
