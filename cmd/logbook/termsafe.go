package main

import "github.com/logbook-dev/logbook/adapters/term"

// What the CLI prints to a terminal is made safe by adapters/term (see
// term.Sanitize); these are its functions under the names the verbs of
// this package use.
var (
	termSafe = term.Safe // a whole string
)
