// Package replay answers questions about the past from the log alone:
// the state as of any event (At), whether a live projection is the one
// its log makes (Verify), what happened to a session and why (Timeline),
// what the log holds (Dump), and whether today's reducer still decides
// what was decided then (Rederive).
//
// Everything here reads the log and builds fresh state; nothing writes to
// the log or to a live store. Equal inputs give equal outputs, byte for
// byte, which is what makes the answers worth comparing across hosts and
// years.
package replay
