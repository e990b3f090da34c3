package sandbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logbook-dev/logbook/sandbox/sandboxtest"
)

// helperSweep makes TestHelperSweepCgroups run SweepCgroups.
const helperSweep = "LOGBOOK_TEST_SWEEP_CGROUPS"

// TestHelperSweepCgroups is not a test: run as another user by
// TestSweepCgroups_OtherUsersLeftAlone, or in a cgroup of its own by
// TestSweepCgroups (helperSweep "after stdin": once its standard input
// has closed), it sweeps and says how long it took and what it found.
func TestHelperSweepCgroups(t *testing.T) {
	switch os.Getenv(helperSweep) {
	case "":
		t.Skip("helper process for TestSweepCgroups_OtherUsersLeftAlone and TestSweepCgroups")
	case "after stdin":
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	start := time.Now()
	if os.Getenv(helperSweep) != "after stdin" {
		removed, killed, err := SweepCgroups(nil)
		fmt.Printf("swept in %d ms: removed %d, killed %d, err %v\n", time.Since(start).Milliseconds(), removed, killed, err)
		os.Exit(0)
	}
	// Two sweeps at once, as two workers of one serve start them: what
	// they report together is each cgroup once.
	var mu sync.Mutex
	var removed, killed int
	var swept []SweptCgroup
	var errs []error
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			r, k, err := SweepCgroups(func(c SweptCgroup) {
				mu.Lock()
				swept = append(swept, c)
				mu.Unlock()
			})
			mu.Lock()
			removed, killed, errs = removed+r, killed+k, append(errs, err)
			mu.Unlock()
		})
	}
	wg.Wait()
	fmt.Printf("swept in %d ms: removed %d, killed %d, err %v\n", time.Since(start).Milliseconds(), removed, killed, errors.Join(errs...))
	for _, c := range swept {
		fmt.Printf("%s owner %d processes %d\n", c.Path, c.Owner, c.Processes)
	}
	os.Exit(0)
}

// A dead command's cgroup that root's worker left, on a host where every
// user's processes share one cgroup (cgroup v1), sits beside an
// unprivileged worker's: that worker's sweep, run at every worker start,
// leaves it to root rather than trying, for a second each, to kill and
// remove what it may not. Root's sweep then removes it.
func TestSweepCgroups_OtherUsersLeftAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("makes a cgroup as root and sweeps as another user")
	}
	u, err := user.Lookup("lbtest")
	if err != nil {
		t.Skipf("no user lbtest on this host (.ci/run makes it): %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	self := selfCgroups()
	p, ok := self["pids"]
	if !ok {
		t.Skip("no cgroup v1 pids hierarchy")
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for range 3 {
		dir := filepath.Join("/sys/fs/cgroup/pids", p, fmt.Sprintf("%s%d-%d", cgPrefix, dead.Process.Pid, len(dirs)+900000))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("make a v1 pids cgroup: %v", err)
		}
		t.Cleanup(func() { _ = syscall.Rmdir(dir) })
		dirs = append(dirs, dir)
	}

	// t.TempDir's parent is root's alone: the copy goes where lbtest may
	// run it.
	tmp, err := os.MkdirTemp("", "sweepcgroups-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(tmp, "sandbox.test")
	if err := sandboxtest.CopyExecutable(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	c := exec.Command(bin, "-test.run=^TestHelperSweepCgroups$")
	c.Dir = "/"
	c.Env = []string{helperSweep + "=1", "PATH=/usr/bin:/bin", "HOME=" + u.HomeDir}
	c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("sweep as lbtest: %v\n%s", err, out)
	}
	var ms, removed, killed int
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "swept in %d ms: removed %d, killed %d", &ms, &removed, &killed); err != nil {
		t.Fatalf("helper said %q: %v", out, err)
	}
	// What it took is said, not checked (speed lives in benchmarks):
	// before the fix it was about a second a cgroup, spent retrying an
	// rmdir that cannot succeed; the fix is that it takes them on not at
	// all, which removed shows (KillCgroup counts each one it took on).
	t.Logf("lbtest's sweep took %d ms", ms)
	if removed != 0 {
		t.Errorf("lbtest's sweep took on root's dead cgroups: %s", out)
	}
	// A root serve of another test on the host sweeps root's dead
	// cgroups too, and may have taken some meanwhile: lbtest's own count
	// above is what says it left them; root's sweep must take what is
	// left.
	left := 0
	for _, dir := range dirs {
		switch _, err := os.Stat(dir); {
		case err == nil:
			left++
		case os.IsNotExist(err):
			t.Logf("root's cgroup %s was swept meanwhile by another process on the host", dir)
		default:
			t.Errorf("root's cgroup %s after lbtest's sweep: %v", dir, err)
		}
	}
	if removed, _, err := SweepCgroups(nil); err != nil || removed < left {
		t.Errorf("root's sweep: removed %d, %v; want at least %d", removed, err, left)
	}
	for _, dir := range dirs {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("root's cgroup %s after root's sweep: %v", dir, err)
		}
	}
}
