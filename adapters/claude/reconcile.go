package claude

import "github.com/logbook-dev/logbook/adapters/ingest"

// The reconciler's names and quiet periods are the engine's
// (ingest.Ingester.Reconcile ticks any agent's sessions): the parser
// name of its tick observations, the actor of its decisions, and how
// long after a session's last receipt a tick marks nothing stale (Quiet;
// QuietImporting while an import is under way).
const (
	ParserTick      = ingest.ParserTick
	ActorReconciler = ingest.ActorReconciler
	Quiet           = ingest.Quiet
	QuietImporting  = ingest.QuietImporting
)
