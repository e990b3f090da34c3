package bench

import (
	"context"
	"slices"
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

// settle waits until this process (the bench, the serve it shares
// between rows and its server) has used less than settleBusy of one CPU
// over a window of settleWindow, or until max has passed or ctx ends;
// it returns how long it waited and whether the process settled.
func settle(ctx context.Context, max time.Duration) (time.Duration, bool) {
	start := time.Now()
	for time.Since(start) < max && ctx.Err() == nil {
		cpu, t := processCPU(), time.Now()
		select {
		case <-ctx.Done():
		case <-time.After(settleWindow):
		}
		used, span := processCPU()-cpu, time.Since(t)
		if span > 0 && float64(used) < settleBusy*float64(span) {
			return time.Since(start), true
		}
	}
	return time.Since(start), false
}

// What settle waits for: a window of settleWindow in which the process
// used less than settleBusy of one CPU, for at most settleMax.
const (
	settleWindow = 250 * time.Millisecond
	settleBusy   = 0.05
	settleMax    = time.Minute
)

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

// pageTouchSample is how much memory pageTouchCost maps at a time: 16
// MiB, 4,096 pages of 4 KiB.
const pageTouchSample = 16 << 20

// pageTouchCost returns what this machine charges for touching a page
// of memory for the first time (the page fault that maps it): the
// median, over runs maps of pageTouchSample bytes of fresh anonymous
// memory, of the time to write one byte in each 4 KiB page, divided by
// the pages. Every process start and every heap that grows pays it per
// page, so the rows that start processes (hook, command, audit, scale)
// move with it from machine to machine: tenths of a microsecond on bare
// metal, several microseconds under nested virtualization. It returns 0
// when memory cannot be mapped.
func pageTouchCost(runs int) time.Duration {
	const page = 4096
	var ds []time.Duration
	for range runs {
		b, err := syscall.Mmap(-1, 0, pageTouchSample, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return 0
		}
		start := time.Now()
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		ds = append(ds, time.Since(start)/(pageTouchSample/page))
		_ = syscall.Munmap(b)
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}
