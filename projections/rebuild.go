package projections

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// A rebuild of the store in dir lives in dir+".rebuild" while it catches
// up. The swap then runs, with the writer lock and the store's lock held
// and both databases closed:
//
//  1. remove a leftover dir+".old";
//  2. rename dir → dir+".old";
//  3. rename dir+".rebuild" → dir;
//  4. fsync the parent directory;
//  5. remove dir+".old" and reopen dir.
//
// Every directory on the way is a complete projection at its own
// checkpoint, so a crash at any step loses at most progress, never
// consistency. Open repairs an interrupted swap (recoverSwap):
//
//   - dir missing, dir+".old" present: the crash hit between steps 2 and
//     3. dir+".old" only exists once the rebuild has caught up, so
//     dir+".rebuild" is complete and is renamed into place; if it is
//     somehow missing, dir+".old" is renamed back (the store then opens
//     stale and is rebuilt again).
//   - dir and dir+".old" present: the crash hit after step 3; dir+".old"
//     is removed.
//   - dir+".rebuild" present alone: a rebuild was under way. The next
//     rebuild resumes from its checkpoint if its view versions are the
//     code's, and starts over otherwise.

// recoverSwap finishes or undoes a swap that a crash interrupted.
func recoverSwap(fsys vfs.FS, dir string) error {
	old, next := dir+oldSuffix, dir+rebuildSuffix
	hasOld, err := exists(fsys, old)
	if err != nil || !hasOld {
		return err
	}
	hasDir, err := exists(fsys, dir)
	if err != nil {
		return err
	}
	if !hasDir {
		hasNext, err := exists(fsys, next)
		if err != nil {
			return err
		}
		from := old
		if hasNext {
			from = next
		}
		if err := fsys.Rename(from, dir); err != nil {
			return fmt.Errorf("recover swap: %w", err)
		}
		if err := syncDir(fsys, parentDir(fsys, dir)); err != nil {
			return fmt.Errorf("recover swap: %w", err)
		}
		if from == old {
			return nil
		}
	}
	if err := fsys.RemoveAll(old); err != nil {
		return fmt.Errorf("recover swap: remove %s: %w", old, err)
	}
	return nil
}

// rebuildTarget returns the store the rebuild of s is applied to, opening
// dir+".rebuild" on first use: resumed if its view versions are the
// code's, emptied otherwise. s owns it and closes it on swap or Close.
func (s *Store) rebuildTarget() (*Store, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.shadow != nil {
		return s.shadow, nil
	}
	dir := s.dir + rebuildSuffix
	for attempt := 0; ; attempt++ {
		sh, err := newStore(dir, s.opts)
		if err != nil {
			return nil, err
		}
		if err := sh.open(); err != nil {
			return nil, fmt.Errorf("rebuild: %w", err)
		}
		if !sh.stale {
			s.shadow = sh
			return sh, nil
		}
		if err := sh.Close(); err != nil {
			return nil, fmt.Errorf("rebuild: %w", err)
		}
		if attempt > 0 {
			return nil, fmt.Errorf("rebuild %s: fresh directory opens stale", dir)
		}
		if err := s.fs.RemoveAll(dir); err != nil {
			return nil, fmt.Errorf("rebuild: remove stale %s: %w", dir, err)
		}
	}
}

// swap puts the caught-up rebuild in place of s's directory and reopens
// it (see the steps above). After an error the store may be closed.
func (s *Store) swap() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	sh := s.shadow
	if sh == nil {
		return errors.New("swap: no rebuild under way")
	}
	s.shadow = nil
	s.carry = carried{}
	if err := sh.Close(); err != nil {
		return fmt.Errorf("swap: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return ErrClosed
	}
	err := s.db.Close()
	s.db = nil
	if err != nil {
		return fmt.Errorf("swap: close %s: %w", s.dir, err)
	}
	old, next := s.dir+oldSuffix, s.dir+rebuildSuffix
	steps := []func() error{
		func() error { return s.fs.RemoveAll(old) },
		func() error { return s.fs.Rename(s.dir, old) },
		func() error { return s.fs.Rename(next, s.dir) },
		func() error { return syncDir(s.fs, parentDir(s.fs, s.dir)) },
		func() error { return s.fs.RemoveAll(old) },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("swap %s step %d: %w", s.dir, i+1, err)
		}
	}
	if err := s.open(); err != nil {
		return fmt.Errorf("swap: %w", err)
	}
	return nil
}

// parentDir returns the directory holding dir.
func parentDir(fsys vfs.FS, dir string) string {
	p := fsys.PathDir(dir)
	if p == "" {
		return "."
	}
	return p
}
