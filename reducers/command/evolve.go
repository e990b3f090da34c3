package command

import (
	"slices"

	"github.com/logbook-dev/logbook/events"
)

// Evolve returns s after e. It only applies facts and never fails: events
// of other aggregate kinds leave s unchanged, and types it does not know
// change only Ver. s is not modified; slices in the result are fresh, so
// states stay independent values.
func Evolve(s State, e events.Envelope) State {
	if e.Agg.Kind != events.KindCommand {
		return s
	}
	s.ID = e.Agg.ID
	s.Ver = e.Ver
	switch d := e.Data.(type) {
	case events.CommandRequested:
		s.Status = StatusRequested
		s.Session = d.Session
		s.Argv = slices.Clone(d.Argv)
		s.Cwd, s.Workspace, s.Mode, s.TTY = d.Cwd, d.Workspace, d.Mode, d.TTY
		s.Env = slices.Clone(d.Env)
		s.WaitMS, s.RequestedBy, s.Elevation = d.WaitMS, d.RequestedBy, d.Elevation
		s.RequestedAt = e.At
	case events.CommandStarted:
		s.Status = StatusStarted
		s.Worker, s.Host, s.Pid = d.Worker, d.Host, d.Pid
		s.StartedAt = e.At
	case events.CommandRunning:
		s.Pid, s.ProcStart, s.Boot, s.Cgroup = d.Pid, d.ProcStart, d.Boot, d.Cgroup
	case events.CommandBackgrounded:
		s.Background = true
	case events.CommandStdinWritten:
		s.StdinBytes += int64(d.Bytes)
	case events.CommandStopRequested:
		s.StopRequested = true
		s.StopBy, s.StopReason = d.By, d.Reason
	case events.CommandExited:
		s.Status = StatusExited
		code := d.Code
		s.ExitCode = &code
		s.Signal, s.Stopped = d.Signal, d.Stopped
		s.DurationMS, s.OutputBytes = d.DurationMS, d.OutputBytes
		s.OutputDropped, s.Limits = d.OutputDropped, d.Limits
		s.Lingering, s.NotRun = d.Lingering, d.NotRun
		s.EndedAt = e.At
	case events.CommandAbandoned:
		s.Status = StatusAbandoned
		s.EndReason = d.Reason
		s.OutputBytes = d.OutputBytes
		if d.Worker != "" {
			s.Worker = d.Worker
		}
		s.EndedAt = e.At
	case events.CommandEvicted:
		s.Evicted = true
		s.EvictedBy = d.By
		if s.Status == StatusRequested {
			s.Status = StatusEvicted
			s.EndedAt = e.At
		}
	case events.CommandRefused:
		s.Status = StatusRefused
		s.EndReason = d.Reason
		s.EndedAt = e.At
	}
	return s
}

// Fold folds records into init, in order.
func Fold(init State, recs []events.Record) State {
	for _, r := range recs {
		init = Evolve(init, r.Envelope)
	}
	return init
}
