package setup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/logbook-dev/logbook/adapters/claude/settings"
	"github.com/logbook-dev/logbook/adapters/datadir"
)

// Undo takes out what the manifest in data dir dd records, saying each
// step on w, and then removes the manifest:
//
//   - the unit: disabled (`systemctl --user disable --now` when manager,
//     a systemd user manager, answers; without one, its link in
//     default.target.wants is removed when it leads to the unit), then
//     its file removed only when it still holds what setup wrote (an
//     edited one is left, and said so);
//   - the settings file: when it still holds what setup wrote, put back
//     byte for byte as it was (from setup's backup, which is then
//     removed; a file setup created is removed); otherwise only the hook
//     entries setup added are taken out, each only where it is still as
//     setup wrote it (settings.Remove): entries the user added or edited
//     are left, and those setup added but no longer finds are named.
//
// With no manifest it says there is nothing to undo and returns nil. A
// step that fails ends the run with its error; the manifest then keeps
// what is left to undo.
func Undo(ctx context.Context, dd datadir.Dir, manager bool, w io.Writer) error {
	m, ok, err := ReadManifest(dd)
	if err != nil {
		return err
	}
	if !ok {
		say(w, "nothing to undo: no setup is recorded in %s", dd)
		return nil
	}
	if m.Unit != nil {
		if err := undoUnit(ctx, *m.Unit, manager, w); err != nil {
			return err
		}
		m.Unit = nil
		if err := writeManifest(dd, &m); err != nil {
			return err
		}
	}
	if m.Settings != nil {
		if err := undoSettings(*m.Settings, w); err != nil {
			return err
		}
		m.Settings = nil
	}
	if err := writeManifest(dd, &m); err != nil {
		return err
	}
	say(w, "removed %s: setup is undone", dd.Path(ManifestName))
	return nil
}

// undoUnit disables the unit rec records and removes its file when it is
// still what setup wrote.
func undoUnit(ctx context.Context, rec UnitRecord, manager bool, w io.Writer) error {
	say(w, "== service")
	if rec.Enabled {
		if manager {
			if _, err := systemctl(ctx, "disable", "--now", UnitName); err != nil {
				return err
			}
			say(w, "stopped and disabled %s", UnitName)
		} else {
			// What disable does, for a manager that does not answer now.
			link := filepath.Join(filepath.Dir(rec.Path), "default.target.wants", UnitName)
			if dest, err := os.Readlink(link); err == nil && (dest == rec.Path || filepath.Join(filepath.Dir(link), dest) == rec.Path) {
				if err := os.Remove(link); err != nil {
					return fmt.Errorf("disable %s: %w", UnitName, err)
				}
				say(w, "no systemd user manager answers: removed %s, which enabled %s", link, UnitName)
			}
		}
	}
	cur, err := os.ReadFile(rec.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		say(w, "%s: gone already", rec.Path)
		return nil
	case err != nil:
		return fmt.Errorf("read %s: %w", rec.Path, err)
	case digest(cur) != rec.SHA256:
		say(w, "%s: edited since setup wrote it: left as it is", rec.Path)
	default:
		if err := os.Remove(rec.Path); err != nil {
			return fmt.Errorf("remove %s: %w", rec.Path, err)
		}
		say(w, "removed %s", rec.Path)
	}
	if manager {
		if _, err := systemctl(ctx, "daemon-reload"); err != nil {
			return err
		}
	}
	return nil
}

// undoSettings puts the settings file rec records back, or takes setup's
// hook entries out of it.
func undoSettings(rec SettingsRecord, w io.Writer) error {
	say(w, "== hooks")
	target, err := settings.Target(rec.Path)
	if err != nil {
		return err
	}
	cur, err := settings.ReadFile(target)
	if errors.Is(err, fs.ErrNotExist) {
		say(w, "%s: gone already", rec.Path)
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", rec.Path, err)
	}
	backups := append([]string{rec.Backup}, rec.Backups...)
	if digest(cur) == rec.WroteSHA256 {
		if rec.Created {
			return removeCreated(rec, target, backups, "", w)
		}
		if old, ok := readBackup(rec); ok {
			st, err := os.Stat(target)
			if err != nil {
				return err
			}
			if err := datadir.WriteFileAtomic(target, old, st.Mode().Perm()); err != nil {
				return fmt.Errorf("write %s: %w", rec.Path, err)
			}
			removeBackups(backups)
			say(w, "put %s back as it was before setup", rec.Path)
			return nil
		}
	}
	out, missing, err := settings.Remove(cur, rec.Hooks)
	if err != nil {
		return fmt.Errorf("%s: %w; fix it, then run this again", rec.Path, err)
	}
	if rec.Created && len(missing) == 0 && emptyObject(out) {
		// Setup made the file, and what is left once its entries are out
		// is nothing (the file was rewritten since, say by the agent,
		// without a key of its own): there was no file before setup.
		return removeCreated(rec, target, backups, ", and nothing but setup's entries was in it", w)
	}
	if !bytes.Equal(out, cur) {
		c := &settings.Change{Path: rec.Path, Target: target, Old: cur, New: out, Existed: true}
		c.WriteDiff(w)
		backup, err := c.Write()
		if backup != "" {
			say(w, "backed up the file as it was to %s", backup)
		}
		if err != nil {
			return err
		}
		say(w, "took out %s setup added", entries(len(rec.Hooks)-len(missing)))
	}
	if len(missing) > 0 {
		say(w, "%s setup added no longer there as it wrote them (edited or taken out since): left as they are:", entries(len(missing)))
		for _, h := range missing {
			say(w, "  %s: %s", h.Event, h.Command)
		}
	}
	switch _, err := os.Stat(rec.Backup); {
	case rec.Backup == "":
	case err != nil || digest(cur) == rec.WroteSHA256:
		say(w, "setup's backup of the file before it, %s, is gone or changed, so %s was not put back whole", rec.Backup, rec.Path)
	default:
		say(w, "%s changed since setup wrote it, so it was not put back whole; the file before setup is kept in %s", rec.Path, rec.Backup)
	}
	return nil
}

// removeCreated removes target, the settings file rec records setup
// created, with backups and the directories setup made for it, saying
// so (and why, what more is said of it).
func removeCreated(rec SettingsRecord, target string, backups []string, why string, w io.Writer) error {
	if err := os.Remove(target); err != nil {
		return fmt.Errorf("remove %s: %w", rec.Path, err)
	}
	removeBackups(backups)
	say(w, "removed %s: setup created it%s", rec.Path, why)
	removeMadeDirs(w, filepath.Dir(target), rec.CreatedDir)
	return nil
}

// readBackup returns the file before setup, from rec's backup, when it
// still holds what it held.
func readBackup(rec SettingsRecord) ([]byte, bool) {
	if rec.Backup == "" || rec.BackupSHA256 == "" {
		return nil, false
	}
	b, err := os.ReadFile(rec.Backup)
	if err != nil || digest(b) != rec.BackupSHA256 {
		return nil, false
	}
	return b, true
}

// removeBackups removes the backups setup made, "" skipped.
func removeBackups(paths []string) {
	for _, p := range paths {
		if p != "" {
			os.Remove(p)
		}
	}
}

// entries counts hook entries: "1 hook entry", "3 hook entries".
func entries(n int) string {
	if n == 1 {
		return "1 hook entry"
	}
	return fmt.Sprintf("%d hook entries", n)
}

// removeMadeDirs removes dir and each directory above it up to made,
// the outermost one setup made for the settings file (nothing when made
// is ""), while they are empty: one something else was put in since
// stays, and the ones above it with it.
func removeMadeDirs(w io.Writer, dir, made string) {
	if made == "" || (dir != made && !strings.HasPrefix(dir, made+string(filepath.Separator))) {
		return
	}
	for d := dir; ; d = filepath.Dir(d) {
		if err := os.Remove(d); err != nil {
			return // not empty, or gone
		}
		say(w, "removed %s: setup created it", d)
		if d == made {
			return
		}
	}
}

// emptyObject reports whether b is JSON text of an object with no member
// (whitespace around it allowed).
func emptyObject(b []byte) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil && len(m) == 0
}
