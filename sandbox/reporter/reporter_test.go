package reporter

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// A command the kernel refuses as "text file busy" (ETXTBSY: open for
// writing, most often by a child its writer forked, until that child's
// exec) is tried again until it runs, as a script without "#!" is; one
// busy for longer than BusyWait is refused with ETXTBSY.
func TestForkExecPath_TextFileBusy(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		busy       int // tries refused as busy
		wantErr    error
	}{
		{"Shebang", "#!/bin/sh\nexit 7\n", 3, nil},
		{"NoShebang", "exit 7\n", 3, nil},
		{"TooLong", "#!/bin/sh\nexit 7\n", 1 << 20, syscall.ETXTBSY},
	} {
		t.Run(tc.name, func(t *testing.T) {
			script := filepath.Join(dir, tc.name)
			if err := os.WriteFile(script, []byte(tc.body), 0o755); err != nil {
				t.Fatal(err)
			}
			var tries int
			forkExec = func(argv0 string, argv []string, attr *syscall.ProcAttr) (int, error) {
				if tries++; tries <= tc.busy {
					return 0, syscall.ETXTBSY
				}
				return syscall.ForkExec(argv0, argv, attr)
			}
			t.Cleanup(func() { forkExec = syscall.ForkExec })
			began := time.Now()
			pid, err := forkExecPath([]string{script})
			if err != tc.wantErr {
				t.Fatalf("forkExecPath after %d busy tries: %v, want %v", min(tries, tc.busy), err, tc.wantErr)
			}
			if err != nil {
				if took := time.Since(began); took < BusyWait {
					t.Errorf("refused after %s of tries, want %s", took, BusyWait)
				}
				return
			}
			var ws syscall.WaitStatus
			if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil {
				t.Fatal(err)
			}
			if !ws.Exited() || ws.ExitStatus() != 7 {
				t.Errorf("the command ended %v, want exit 7", ws)
			}
		})
	}
}
