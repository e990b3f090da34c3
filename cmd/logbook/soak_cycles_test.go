//go:build !soak

package main

// soakDefaultCycles is how many kill cycles TestSoak runs in the normal
// suite: a short run; build with -tags soak for the long one.
const soakDefaultCycles = 3
