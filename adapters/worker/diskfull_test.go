package worker

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A worker that starts while the server's store is full waits for it
// instead of failing: the server refuses to create the worker's durable
// consumer ("error creating store for consumer"), and serve, whose
// workers end it when they fail, must outlive a full disk. Once the disk
// is freed the worker takes requests.
func TestWorker_StartsOnAFullStore(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a full disk is a tmpfs mounted for the test: needs root")
	}
	t.Parallel() // its own tmpfs and server; it mostly waits
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=16777216,mode=0700"); err != nil {
		t.Skipf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	e := newEnvIn(t, false, filepath.Join(dir, "js"))

	filler := filepath.Join(dir, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1 << 20, 4 << 10, 512, 1} {
		buf := make([]byte, n)
		for {
			if _, err := f.Write(buf); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("fill: %v", err)
				}
				break
			}
		}
	}
	f.Close()

	w, err := New(e.workerConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("worker Run: %v", err)
		}
	})
	select {
	case err := <-done:
		done <- err
		t.Fatalf("worker on a full store ended: %v", err)
	case <-time.After(3 * time.Second):
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	id := e.submit(e.request("full_access", "sh", "-c", "echo freed"))
	st, out := e.follow(id, 60*time.Second)
	if st.ExitCode == nil || *st.ExitCode != 0 || out.stream("stdout") != "freed\r\n" && out.stream("stdout") != "freed\n" {
		t.Fatalf("after the disk was freed: state %+v, stdout %q", st, out.stream("stdout"))
	}
}
