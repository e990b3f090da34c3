//go:build race

package sandboxtest

// raceEnabled reports whether the binary was built with -race.
const raceEnabled = true
