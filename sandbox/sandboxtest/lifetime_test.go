package sandboxtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// helperEnv names what TestHelperDies does when set: "remove DIR" or
// "child TOKEN".
const helperEnv = "SANDBOXTEST_HELPER"

// TestHelperDies is not a test of its own: run by TestLifetime as a child
// that sets up what it is told, says so on stdout, and waits for its
// SIGKILL, as a test binary stopped by its -timeout would end (no
// cleanup runs).
func TestHelperDies(t *testing.T) {
	what, arg, ok := strings.Cut(os.Getenv(helperEnv), " ")
	if !ok {
		t.Skip("a helper process of TestLifetime")
	}
	switch what {
	case "remove":
		if err := RemoveWhenGone(arg); err != nil {
			t.Fatal(err)
		}
		fmt.Println("ready")
	case "child":
		c := DieWithTest(exec.Command("sleep", arg))
		c.SysProcAttr.Setpgid = true // kept beside Pdeathsig
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		fmt.Println("ready", c.Process.Pid)
	}
	select {}
}

// What a test process leaves is cleared when it is SIGKILLed: the folder
// RemoveWhenGone names is removed, the child DieWithTest marks is killed.
// Each wait is for the condition, up to near the test's own deadline.
func TestLifetime(t *testing.T) {
	helper := func(t *testing.T, what string) {
		t.Helper()
		c := exec.Command(os.Args[0], "-test.run=^TestHelperDies$", "-test.count=1")
		c.Env = append(os.Environ(), helperEnv+"="+what)
		out, err := c.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 64)
		n, _ := out.Read(b)
		if !strings.HasPrefix(string(b[:n]), "ready") {
			c.Process.Kill()
			c.Wait()
			t.Fatalf("helper %q said %q", what, b[:n])
		}
		if err := c.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		c.Wait()
	}
	waitFor := func(t *testing.T, what string, done func() bool) {
		t.Helper()
		end, bounded := t.Deadline()
		end = end.Add(-min(time.Until(end)/10, time.Minute))
		for !done() {
			if bounded && time.Now().After(end) {
				t.Fatalf("still, near the test's deadline: %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	t.Run("RemoveWhenGone", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "bin")
		if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		helper(t, "remove "+dir)
		waitFor(t, dir+" is there after its process was killed", func() bool {
			_, err := os.Stat(dir)
			return os.IsNotExist(err)
		})
	})

	t.Run("DieWithTest", func(t *testing.T) {
		token := strconv.Itoa(900000 + os.Getpid()%99999)
		t.Cleanup(func() {
			for _, pid := range ProcessesWith("sleep " + token) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
		helper(t, "child "+token)
		waitFor(t, "sleep "+token+" runs after its parent was killed", func() bool { return len(ProcessesWith("sleep "+token)) == 0 })
	})
}
