package submitter

import (
	"os"
	"testing"

	"github.com/anchord/anchord/internal/anchordtest"
)

// TestMain runs the tests, or, when the test binary is re-executed as a submitter process by
// the cluster test, that submitter.
func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		os.Exit(runChild())
	}
	anchordtest.WrapTestMain(m)
}
