// Package host holds the parts a running `logbook serve` assembles
// around its log and projection, each with its own lifecycle: the
// embedded server with a user per role (StartRoles, Grants), the
// projector and spool loops, the log's health and the status verb it
// answers (LogHealth), the HTTP surface (HTTP) and the watch on the
// spool directory (SpoolKicks). Serve builds these parts in order from a
// Config that cmd/logbook fills from serve's flags, with the parts of
// cmd/logbook's own (Config.Wire), and runs their loops in one
// run.Group; Open is how another command reaches the log. Every loop
// here runs on the caller's goroutine until its context ends and says
// what happens through a say function (format, args) that the caller
// prints as it likes.
package host
