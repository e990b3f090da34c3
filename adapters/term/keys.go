package term

import (
	"fmt"
	"io"

	"github.com/logbook-dev/logbook/adapters/datadir"
)

// Keys writes the keys `logbook keys show` prints: the pinned admin key
// (pinned, its id; "" for none, with how to pin one), then a line a key
// with its state on the log (registered, REVOKED, not registered; state
// unknown when why, the reason the log was not read, is not ""), then
// why. Errors are w's.
func Keys(w io.Writer, pinned string, lines []datadir.KeyLine, why string) error {
	if pinned != "" {
		fmt.Fprintf(w, "pinned admin %s\n", pinned)
	} else {
		fmt.Fprintf(w, "pinned admin none: run `logbook keys pin` with the cluster's admin key\n")
	}
	for _, l := range lines {
		state := "not registered"
		switch {
		case why != "":
			state = "state unknown"
		case l.Revoked != 0:
			state = fmt.Sprintf("REVOKED at seq %d", l.Revoked)
		case l.Registered != 0:
			state = fmt.Sprintf("registered at seq %d", l.Registered)
		}
		fmt.Fprintf(w, "%s %s %s %s %s\n", Field(string(l.Role)), Field(l.ID), Field(l.Public), Field(l.Principal), state)
	}
	if why != "" {
		_, err := fmt.Fprintf(w, "key state on the log unknown: %s\n", why)
		return err
	}
	return nil
}
