package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

// TestLoadgenExitsNonZeroWithTheReason: a run that cannot start exits 1 and says why on stderr.
func TestLoadgenExitsNonZeroWithTheReason(t *testing.T) {
	t.Parallel()
	target := "http://" + anchordtest.FreeAddr(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"loadgen", "--target", target, "--duration", "1s"}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, stderr.String(), "anchord loadgen: pre-flight check failed: "+target+" does not answer")
}
