package settings

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/logbook-dev/logbook/adapters/gate"
)

// Apply makes c (from Plan, with wires), as `logbook hooks install` and
// `uninstall` do, and says so on w: "<path>: unchanged" when c changes
// nothing; else the diff, then, with dryRun, "(dry run: nothing
// written)" and nothing written; else it writes c (Write), names the
// backup and, for a link, the file written, and says what is wired
// (wires from InstallWires) or that Logbook's hooks are removed (the
// zero Wires). Errors are Write's.
func Apply(w io.Writer, c *Change, wires Wires, dryRun bool) error {
	if c.Unchanged() {
		fmt.Fprintf(w, "%s: unchanged\n", c.Path)
		return nil
	}
	c.WriteDiff(w)
	if dryRun {
		fmt.Fprintln(w, "(dry run: nothing written)")
		return nil
	}
	backup, err := c.Write()
	if backup != "" {
		fmt.Fprintf(w, "backed up the old file to %s\n", backup)
	}
	if err != nil {
		return err
	}
	if c.Target != c.Path {
		fmt.Fprintf(w, "wrote %s (%s links to it)\n", c.Target, c.Path)
	}
	n := len(Events())
	switch {
	case !c.install:
		fmt.Fprintln(w, "removed Logbook's hooks")
	case wires.Gate == "":
		fmt.Fprintf(w, "wired %s to %s\n", hookEvents(n), wires.Recorder)
	default:
		fmt.Fprintf(w, "wired %s to %s, and %s and %s to %s with a timeout of %d s\n",
			hookEvents(n-2), wires.Recorder, gate.EventPreToolUse, gate.EventPermissionRequest, wires.Gate, wires.Timeout)
	}
	return nil
}

// hookEvents counts n hook events: "1 hook event", "3 hook events".
func hookEvents(n int) string {
	if n == 1 {
		return "1 hook event"
	}
	return fmt.Sprintf("%d hook events", n)
}

// Report is what `logbook hooks status` shows: the settings files read
// and, for each event of Events, the Logbook commands wired to it.
type Report struct {
	UserSettings     string   `json:"user_settings"`
	ProjectSettings  []string `json:"project_settings"`
	Events           []Wiring `json:"events"`
	EventsNotWired   int      `json:"events_not_wired"`
	EventsUnderstood int      `json:"events_understood"` // len(Events())
}

// StatusOf returns the Report (Status, with self) on the user's settings
// (UserSettings) and the settings of the project in dir (ProjectPaths;
// "" is the working directory). Errors are UserSettings', Abs's and
// Status's.
func StatusOf(dir, self string) (Report, error) {
	user, err := UserSettings()
	if err != nil {
		return Report{}, err
	}
	if dir == "" {
		dir = "."
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return Report{}, err
	}
	r := Report{UserSettings: user, ProjectSettings: ProjectPaths(dir), EventsUnderstood: len(Events())}
	r.Events, r.EventsNotWired, err = Status(user, r.ProjectSettings, self)
	return r, err
}

// Self returns the running binary's path, "" when it is not known: what
// IsLogbookHook knows this build's own hook entries by.
func Self() string {
	self, err := os.Executable()
	if err != nil {
		return ""
	}
	return self
}
