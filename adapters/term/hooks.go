package term

import (
	"fmt"
	"io"
	"strings"

	"github.com/logbook-dev/logbook/adapters/claude/settings"
)

// HookStatus writes r as `logbook hooks status` prints it: the settings
// files read, a table of each event with the Logbook commands wired to
// it in the user's and the project's settings ("-": none), and how many
// events are not wired. Write it to the terminal directly, not through
// Print. Errors are w's.
func HookStatus(w io.Writer, r settings.Report) error {
	fmt.Fprintf(w, "user:    %s\nproject: %s\n\n", r.UserSettings, strings.Join(r.ProjectSettings, ", "))
	tw := NewTable(w)
	fmt.Fprintln(tw, "EVENT\tUSER\tPROJECT")
	show := func(cmds []string) string {
		if len(cmds) == 0 {
			return "-"
		}
		return strings.Join(cmds, "; ")
	}
	for _, e := range r.Events {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", Cell(e.Event), Cell(show(e.User)), Cell(show(e.Project)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r.EventsNotWired > 0 {
		fmt.Fprintf(w, "\n%s of %d not wired: run `logbook hooks install`\n", Plural(r.EventsNotWired, "event"), r.EventsUnderstood)
	}
	return nil
}
