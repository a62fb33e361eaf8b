package main

import (
	"bytes"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

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

// acceptedSoFar reads the accepted count of loadgen's progress lines.
var acceptedSoFar = regexp.MustCompile(`sent +\d+ +accepted +(\d+) `)

// TestLoadgenExitsNonZeroWhenItsTargetDies: the target is killed while `anchord loadgen` loads
// it. The run goes on against nothing, then exits 1 saying requests got no answer; its POST
// latencies are those of the answered requests.
func TestLoadgenExitsNonZeroWhenItsTargetDies(t *testing.T) {
	t.Parallel()
	addr := anchordtest.FreeAddr(t)
	target := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: []string{"serve", "--host-url", addr}, Addr: addr})
	target.WaitHealthy(30 * time.Second)
	gen := anchordtest.StartProcess(t, anchordtest.ProcessConfig{Args: []string{
		"loadgen", "--target", "http://" + addr, "--rate", "100", "--concurrency", "4", "--duration", "6s",
		"--warmup-dids", "0", "--resolve-timeout", "3s",
	}})
	anchordtest.Eventually(t, 20*time.Second, 50*time.Millisecond, func() bool {
		for _, m := range acceptedSoFar.FindAllStringSubmatch(gen.Log(), -1) {
			if n, _ := strconv.Atoi(m[1]); n > 0 {
				return true
			}
		}
		return false
	}, "loadgen's operations are accepted")
	target.Signal(syscall.SIGKILL)

	code, err := gen.Wait(30 * time.Second)
	require.NoError(t, err)
	require.Equal(t, 1, code, gen.Log())
	require.Regexp(t, `anchord loadgen: requests got no answer: \d+ of \d+ \(did the target stop\?\); the first: \S`, gen.Log())
	require.Regexp(t, `no answer: +\d+ requests, not in the latencies`, gen.Log())
}
