//go:build race

package anchordtest

// raceEnabled reports whether this test binary was built with -race; binaries built for
// process tests then get -race too.
const raceEnabled = true
