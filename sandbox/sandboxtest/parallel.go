package sandboxtest

import (
	"flag"
	"runtime"
	"strconv"
)

// SetParallel sets -test.parallel to factor times GOMAXPROCS unless the
// command line set it, for a TestMain to call before m.Run. It is for
// packages whose parallel tests mostly wait (on their processes, fsyncs,
// servers and timers), where GOMAXPROCS tests at a time, the testing
// package's default, leave the CPUs idle. Under the race detector, which
// makes each test several times as costly in CPU and memory, the factor
// is at most raceFactorCap, so that a loaded machine still finishes the
// tests inside their waits. It parses the command line (flag.Parse) when
// no one has, and panics on a factor under 1: a TestMain's mistake.
func SetParallel(factor int) {
	if factor < 1 {
		panic("sandboxtest.SetParallel: factor " + strconv.Itoa(factor) + " under 1")
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if set {
		return
	}
	if raceEnabled && factor > raceFactorCap {
		factor = raceFactorCap
	}
	_ = flag.Set("test.parallel", strconv.Itoa(factor*runtime.GOMAXPROCS(0)))
}

// raceFactorCap is SetParallel's most factor under the race detector.
const raceFactorCap = 2
