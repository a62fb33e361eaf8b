//go:build !race

package anchordtest

const raceEnabled = false
