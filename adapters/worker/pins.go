package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// pinSep parts a pin's resolved path from the directory's identity
// (dirIdentity): NUL, which no path holds. A pin made before identities
// were kept is the path alone.
const pinSep = "\x00"

// dirIdentity returns "<device>:<inode>" of directory dir (stat(2),
// following a last symbolic link).
func dirIdentity(dir string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", dir, err)
	}
	return fmt.Sprintf("%d:%d", st.Dev, st.Ino), nil
}

// cwdPin returns session's directory, resolved (with its identity, after
// pinSep), as the first worker of this host to judge one of its commands
// found it, and whether there is one. When there is none yet and
// resolved (this worker's resolution of the directory now, with its
// identity) is not "", resolved becomes the pin: the first
// resolution wins, for every worker of the data dir, whatever their
// order. Pins are kept in Config.Pins, one file per session, so that
// the workers of one serve and the workers started apart with the same
// data dir judge by one pin; without Pins, or when that directory cannot
// be used, each worker keeps its own (the first resolution it made). A
// pin never changes once made.
func (w *Worker) cwdPin(session, resolved string) (string, bool) {
	if pin, ok := w.cwdPins.Load(session); ok {
		return pin.(string), true
	}
	pin, ok, err := pinFile(w.cfg.Pins, session, resolved)
	if err != nil {
		w.log.Warn("session directory pins: kept in this worker only", "session", session, "err", err)
		if resolved == "" {
			return "", false
		}
		pin, ok = resolved, true
	}
	if !ok {
		return "", false
	}
	got, _ := w.cwdPins.LoadOrStore(session, pin)
	return got.(string), true
}

// pinFile is cwdPin's store in dir: the file named for session holds
// its pin. It reads the pin, or makes it from resolved when there is
// none and resolved is not "": written whole in a file of its own and
// linked into place, so that of two workers pinning at once one wins and
// the other reads the winner's, never a part of it. Errors are the file
// system's, naming the path; dir "" is an error.
func pinFile(dir, session, resolved string) (string, bool, error) {
	if dir == "" {
		return "", false, errors.New("no pins directory")
	}
	sum := sha256.Sum256([]byte(session))
	path := filepath.Join(dir, hex.EncodeToString(sum[:16]))
	read := func() (string, bool, error) {
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return "", false, nil
		}
		if err != nil {
			return "", false, err
		}
		if len(b) == 0 || b[len(b)-1] != '\n' {
			return "", false, fmt.Errorf("session directory pin %s: not a whole pin (%d bytes)", path, len(b))
		}
		return string(b[:len(b)-1]), true, nil
	}
	if pin, ok, err := read(); ok || err != nil || resolved == "" {
		return pin, ok, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, err
	}
	tmp, err := os.CreateTemp(dir, ".pin-*")
	if err != nil {
		return "", false, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(resolved + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", false, err
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", false, err
	}
	pin, ok, err := read()
	if err == nil && !ok {
		err = fmt.Errorf("session directory pin %s: gone after it was made", path)
	}
	return pin, ok, err
}
