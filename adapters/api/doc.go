// Package api is what a running `logbook serve` answers, and its clients:
// the request/reply verbs on logbook.api.* (hooks, sessions, commands,
// workspaces, status, verify), their request and reply shapes, pages of
// at most one message with a cursor, answers in parts when they exceed a
// message; the hook intake (the socket's journal drained into the log,
// in order, each hook once) and the Service that holds serve's log,
// projection and ingesters. Reads may answer from the projection marked
// stale when the caller allows it (AllowStale) and the log has no quorum;
// decisions never do.
package api
