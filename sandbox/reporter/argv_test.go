package reporter

import (
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// ReadArgv reads back what a worker writes (NUL-ended arguments, empty
// ones and ones longer than its read buffer included) from offset 0,
// whatever the descriptor's offset, and refuses what is not an argv:
// nothing at all, bytes after the last NUL, more than MaxArgv.
func TestReadArgv(t *testing.T) {
	memfd := func(t *testing.T, b []byte) int {
		t.Helper()
		fd, err := unix.MemfdCreate("argv", unix.MFD_CLOEXEC)
		if err != nil {
			t.Skipf("memfd_create: %v", err)
		}
		t.Cleanup(func() { syscall.Close(fd) })
		if _, err := syscall.Write(fd, b); err != nil { // the offset is now at the end
			t.Fatal(err)
		}
		return fd
	}
	argv := []string{"sh", "", "two words\nand a line", strings.Repeat("x", 200<<10), "last"}
	var b []byte
	for _, a := range argv {
		b = append(append(b, a...), 0)
	}
	got, err := ReadArgv(memfd(t, b))
	if err != nil || !slices.Equal(got, argv) {
		t.Fatalf("ReadArgv = %d arguments, %v; want the %d written", len(got), err, len(argv))
	}
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"Empty", nil, syscall.EINVAL},
		{"NoFinalNUL", []byte("sh\x00-c"), syscall.EINVAL},
		{"PastMaxArgv", make([]byte, MaxArgv+1), syscall.E2BIG},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, err := ReadArgv(memfd(t, tc.b)); err != tc.want {
				t.Fatalf("ReadArgv = %d arguments, %v; want %v", len(got), err, tc.want)
			}
		})
	}
	if _, err := ReadArgv(int(os.Stdin.Fd()) + 1000); err != syscall.EBADF {
		t.Fatalf("ReadArgv of a closed descriptor: %v, want EBADF", err)
	}
}
