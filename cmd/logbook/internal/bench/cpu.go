package bench

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system) this process has
// used so far, or 0 when the system does not say: the bench's workloads,
// the serve they run against and its embedded server together, which a
// loaded machine stretches less than it stretches wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childrenCPU returns the CPU time (user and system) of the child
// processes of this process that have been waited for so far, or 0 when
// the system does not say: the command rows' exec clients and the
// commands (and bubblewrap) the serve's workers started.
func childrenCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
