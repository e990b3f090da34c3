// Package term renders Logbook's state as terminal text: what every verb
// and a live view print to a person. It holds the measure of text on a
// terminal (RuneWidth, DisplayWidth: CJK and emoji take two columns,
// combining marks none), the escaping of hostile fields (Sanitize, Safe,
// Field, Cell, Writer: a value from the log never reaches a terminal as
// an escape sequence or a control), tables laid out by the columns their
// escaped cells take (Table), relative times (Ago), and plain functions
// that write the rows of sessions, commands, workspaces, projects, tasks,
// reviews, usage and verify reports to an io.Writer.
//
// Functions here read no clock, no environment and no terminal state
// but IsTerminal and Width: the time, the home directory and whether
// times are relative arrive as arguments, so the same rows print the
// same text in every verb. Nothing here is safe for concurrent use
// unless it says so.
package term
