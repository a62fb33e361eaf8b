package failpoint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

func TestParse(t *testing.T) {
	t.Parallel()
	require.Nil(t, parse(""))
	require.Equal(t, map[string]int{"a": 3, "b": 1}, parse("a=3, b=1,c=0,d=x,e,f=/tmp/gate"))
}

func TestParseGates(t *testing.T) {
	t.Parallel()
	require.Nil(t, parseGates(""))
	require.Nil(t, parseGates("a=3,b=relative/gate"))
	require.Equal(t, map[string]string{"f": "/tmp/gate"}, parseGates("a=3, f=/tmp/gate"))
}

func TestHitDisarmedIsANoop(t *testing.T) {
	t.Parallel()
	require.Nil(t, armed, "tests run without "+EnvVar)
	require.Nil(t, gates, "tests run without "+EnvVar)
	Hit(BatchAfterCAS) // returns
	require.NoError(t, Pause(t.Context(), ObserverBeforeIndex))
}

func TestPauseWaitsWhileTheGateExists(t *testing.T) {
	t.Parallel()
	gate := filepath.Join(t.TempDir(), "gate")
	require.NoError(t, pauseAt(t.Context(), "p", gate), "no gate file: no wait")

	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, pauseAt(ctx, "p", gate), context.Canceled, "a closed gate holds the caller until its context ends, and says so")

	done := make(chan error, 1)
	go func() { done <- pauseAt(t.Context(), "p", gate) }()
	require.NoError(t, os.Remove(gate))
	require.NoError(t, anchordtest.WaitOrTimeout(t, done, 10*time.Second), "the gate opened")
}
