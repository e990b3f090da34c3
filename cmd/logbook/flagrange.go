package main

import (
	"github.com/spf13/cobra"

	"github.com/logbook-dev/logbook/adapters/flagrange"
)

// Upper bounds of count and size flags, sized for the machines Logbook
// runs on: far above any useful value, far below one that would start a
// goroutine, a worker or a buffer per unit until the machine runs out.
const (
	// maxWorkers bounds serve --workers (each a sandbox worker with
	// consumers and PTYs of its own) and the import commands' --workers
	// (each with up to 4 transcripts under way).
	maxWorkers = 64
	// maxViewsCacheMiB bounds serve --views-cache: 64 GiB.
	maxViewsCacheMiB = 64 << 10
	// maxListed bounds sessions --limit.
	maxListed = 1_000_000
	// maxFollowers bounds creds cluster --followers (a user and a
	// credentials file each).
	maxFollowers = 1000
)

// The ranges of count, size and duration flags (adapters/flagrange):
// bound and boundDuration give a flag its range, said in its help;
// checkRanges (from the root's PersistentPreRunE) refuses a value out of
// it.
var (
	bound         = flagrange.Bound
	boundDuration = flagrange.BoundDuration
	durRangeText  = flagrange.DurationText
)

// checkRanges refuses, as a usage error (exit 2), a value given to one
// of cmd's bounded flags outside its range: `--workers 99999999: want 1
// to 64`.
func checkRanges(cmd *cobra.Command) error {
	if err := flagrange.Check(cmd); err != nil {
		return usageErrorf("%w", err)
	}
	return nil
}
