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
		return "", fmt.Errorf("%w: %s id %q: %v", errBadRequest, kind, id, err)
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
