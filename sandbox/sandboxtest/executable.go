package sandboxtest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// WriteExecutable writes data to a new file at path, mode 0755, ready to
// run. A child process (sh, with data on its standard input) writes it,
// not the calling process: a file the calling process held open for
// writing is inherited by whatever any of its goroutines forks meanwhile
// (a parallel test's command), and running it fails with "text file
// busy" (ETXTBSY) until that child has exec'd (golang.org/issue/22315).
// Errors name the path and carry the shell's message.
func WriteExecutable(path string, data []byte) error {
	c := exec.Command("/bin/sh", "-c", `cat > "$1"`, "sh", path)
	c.Stdin = bytes.NewReader(data)
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("write executable %s: %v: %s", path, err, bytes.TrimSpace(out))
	}
	if err := os.Chmod(path, 0o755); err != nil {
		return fmt.Errorf("write executable %s: %w", path, err)
	}
	return nil
}

// CopyExecutable copies the executable file from to a new file to, mode
// 0755, as WriteExecutable writes one: by cp(1), never open for writing
// in the calling process.
func CopyExecutable(from, to string) error {
	if out, err := exec.Command("cp", "--", from, to).CombinedOutput(); err != nil {
		return fmt.Errorf("copy executable %s to %s: %v: %s", from, to, err, bytes.TrimSpace(out))
	}
	if err := os.Chmod(to, 0o755); err != nil {
		return fmt.Errorf("copy executable %s to %s: %w", from, to, err)
	}
	return nil
}

// ForkAlongside forks /bin/true from n goroutines, over and over, until
// the test ends: the forks of parallel tests, or of a server's other
// goroutines, beside a file written and then run (see WriteExecutable).
func ForkAlongside(t testing.TB, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	var forkers sync.WaitGroup
	for range n {
		forkers.Go(func() {
			for ctx.Err() == nil {
				_ = exec.Command("/bin/true").Run()
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		forkers.Wait()
	})
}
