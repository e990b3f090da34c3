package main

import "github.com/logbook-dev/logbook/adapters/term"

// What the CLI prints to a terminal is made safe by adapters/term (see
// term.Sanitize); these are its functions under the names the verbs of
// this package use.
var (
	termSafe  = term.Safe     // a whole string
	field     = term.Field    // one field of a line, kept on one line
	cell      = term.Cell     // a table cell
	newTable  = term.NewTable // a table measured as printed
	termPrint = term.Print    // a report whose fields come from the log
	dash      = term.Dash     // "-" for an empty value
)
