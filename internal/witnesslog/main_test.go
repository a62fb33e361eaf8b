package witnesslog

import (
	"os"
	"testing"

	"github.com/anchord/anchord/internal/anchordtest"
)

// TestMain runs the tests, or, when the cluster test re-executes the test binary as a second
// instance, that instance's appender.
func TestMain(m *testing.M) {
	if os.Getenv(envChildURL) != "" {
		os.Exit(runChild())
	}
	anchordtest.WrapTestMain(m)
}
