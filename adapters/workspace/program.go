package workspace

import (
	"os"
	"syscall"
)

// writeProgram creates or truncates the file at path with perm and has
// write fill it, then closes it. When perm has an execute bit it holds
// syscall.ForkLock for reading from the open to the close, so that no
// process this one forks meanwhile (serve forks git, and its workers'
// commands) is given the descriptor: a child holds every descriptor of
// its parent, close-on-exec ones too, until its own exec, and running
// the file in that moment fails with "text file busy" (ETXTBSY;
// golang.org/issue/22315). Forks wait for the write; write must not
// start a process itself, which would wait for the lock forever. Errors
// are the file system's.
func writeProgram(path string, perm os.FileMode, write func(*os.File) error) (err error) {
	if perm&0o111 != 0 {
		syscall.ForkLock.RLock()
		defer syscall.ForkLock.RUnlock()
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	return write(f)
}
