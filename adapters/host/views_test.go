package host

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/logbook-dev/logbook/adapters/datadir"
	"github.com/logbook-dev/logbook/projections"
)

// TestOpenViews_CannotCreate: projections that cannot be made (the data
// dir is a file) are named as such, with no advice to remove a folder
// that is not there.
func TestOpenViews_CannotCreate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := OpenViews(t.Context(), Views{Dir: datadir.Dir(file)})
	if err == nil || !strings.Contains(err.Error(), "create projections in "+filepath.Join(file, "views")) || strings.Contains(err.Error(), "remove it") {
		t.Errorf("views under a file: %v, want that they could not be made", err)
	}
}

// TestOpenViews_HeldByAnother: projections another process has open
// (Pebble's LOCK, a POSIX record lock) are named as in use by that
// process's pid, with no advice to remove them.
func TestOpenViews_HeldByAnother(t *testing.T) {
	if dir := os.Getenv("LOGBOOK_TEST_HOLD_LOCK"); dir != "" {
		holdLock(dir) // the child: holds the lock until its stdin closes
		return
	}
	dd := datadir.Dir(t.TempDir())
	store, err := projections.Open(dd.Path("views"), projections.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	child := exec.Command(os.Args[0], "-test.run=^TestOpenViews_HeldByAnother$")
	child.Env = append(os.Environ(), "LOGBOOK_TEST_HOLD_LOCK="+dd.Path("views", "LOCK"))
	in, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait()
	defer in.Close()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "held\n" {
		t.Fatalf("the child did not take the lock: %q %v", line, err)
	}
	_, err = OpenViews(t.Context(), Views{Dir: dd})
	want := fmt.Sprintf("open projections in %s: pid %d holds them", dd.Path("views"), child.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "remove it") {
		t.Errorf("views another process holds: %v, want %q and no removal advice", err, want)
	}
}

// holdLock takes a POSIX write lock on file, as Pebble does, says "held"
// on stdout and keeps it until stdin closes.
func holdLock(file string) {
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: io.SeekStart}
	if err := unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("held")
	io.Copy(io.Discard, os.Stdin)
}
