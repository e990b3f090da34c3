//go:build race

package natslog

// raceEnabled is set when the tests run under the race detector.
const raceEnabled = true
