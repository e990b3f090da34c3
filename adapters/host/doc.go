// Package host holds the parts a running `logbook serve` assembles
// around its log and projection, each with its own lifecycle: the
// embedded server with a user per role (StartRoles, Grants), the
// projector and spool loops, the log's health and the status verb it
// answers (LogHealth), the HTTP surface (HTTP) and the watch on the
// spool directory (SpoolKicks). cmd/logbook parses serve's flags, builds
// these parts in order, runs their loops in one run.Group and prints
// what they report; every loop here runs on the caller's goroutine until
// its context ends and says what happens through a say function
// (format, args) that the caller prints as it likes.
package host
