// Package top is `logbook top`: a live terminal view of a server's
// sessions, grouped by phase, with the gate's pending reviews first,
// keys to allow or deny one, a session's audit and a command's output
// followed. Model holds the state and its rules (a snapshot in, a key
// in, an Action out, the screen as text) without I/O; Run puts it on a
// terminal with bubbletea (charm.land/bubbletea/v2), reading and
// acting through a Source its caller provides. Every text from the
// log is escaped (adapters/term) before it is drawn.
package top
