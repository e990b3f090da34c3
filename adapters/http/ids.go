package httpapi

import (
	"fmt"
	"strings"

	"github.com/logbook-dev/logbook/events"
	"github.com/logbook-dev/logbook/projections"
)

// maxCandidates is how many ids an ambiguous prefix's error lists.
const maxCandidates = 10

// resolveSession returns the id of the session that id names: id itself
// when a session has it, else the one session whose id begins with it,
// as `git` takes a unique prefix of a hash (and the command line takes
// one of an id). See resolve for the errors.
func (s *Server) resolveSession(id string) (string, error) {
	return s.resolve("session", projections.SessionPrefix, id)
}

// resolveCommand is resolveSession for a command id.
func (s *Server) resolveCommand(id string) (string, error) {
	return s.resolve("command", projections.CommandPrefix, id)
}

// resolve returns the id of the row of kind under rowPrefix that id
// names. An id that is not a valid aggregate id is a bad request; a
// prefix no row begins with wraps events.ErrNotFound; a prefix several
// rows begin with is a bad request listing them.
func (s *Server) resolve(kind, rowPrefix, id string) (string, error) {
	if err := events.ValidID(id); err != nil {
		return "", fmt.Errorf("%w: %s", errBadRequest, invalidID(kind, id))
	}
	ids, err := s.store.IDsWithPrefix(rowPrefix, id, maxCandidates+1)
	if err != nil {
		return "", err
	}
	switch {
	case len(ids) == 0:
		return "", fmt.Errorf("%s %s: %w: no %s id is or begins with it", kind, id, events.ErrNotFound, kind)
	case len(ids) == 1 || ids[0] == id:
		return ids[0], nil // a whole id sorts first among those it begins
	}
	list := ids[:min(len(ids), maxCandidates)]
	more := ""
	if len(ids) > maxCandidates {
		more = ", …"
	}
	return "", fmt.Errorf("%w: %s id prefix %q is ambiguous: it begins %s%s; give more of the id", errBadRequest, kind, id, strings.Join(list, ", "), more)
}

// invalidID says why id is not a valid id of kind, in words a person
// reads: the id is shown only when it is printable ASCII, and never as
// escaped bytes.
func invalidID(kind, id string) string {
	rule := fmt.Sprintf("an id is 1 to %d characters of A-Z, a-z, 0-9, _ and -", events.MaxIDLen)
	switch {
	case id == "":
		return fmt.Sprintf("%s id is empty: %s", kind, rule)
	case len(id) > events.MaxIDLen:
		return fmt.Sprintf("%s id is not valid: it is %d bytes long; %s", kind, len(id), rule)
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return fmt.Sprintf("%s id is not valid: it holds a byte that is not printable ASCII at offset %d; %s", kind, i, rule)
		}
	}
	return fmt.Sprintf("%s id %s is not valid: %s", kind, id, rule)
}
