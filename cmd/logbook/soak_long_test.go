//go:build soak

package main

// soakDefaultCycles is how many kill cycles TestSoak runs with -tags soak.
const soakDefaultCycles = 20
