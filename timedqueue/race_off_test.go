//go:build !race

package timedqueue

// raceEnabled tells tests that the race detector is on, and so that they should do less.
const raceEnabled = false
