package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestConfigPrintsTheEffectiveConfiguration(t *testing.T) {
	t.Parallel()
	env := func(k string) (string, bool) {
		if k == "ANCHORD_BATCH_WRITER_TIMEOUT" {
			return "750ms", true
		}
		return "", false
	}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runWithEnv([]string{"config", "--did-method", "ion"}, env, &stdout, &stderr))
	require.Contains(t, stdout.String(), `--did-method="ion"`)
	require.Contains(t, stdout.String(), `--batch-writer-timeout="750ms"`, "the environment counts")

	stdout.Reset()
	require.Equal(t, 2, runWithEnv([]string{"config", "--did-method", "ION!"}, env, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--did-method")
	require.Empty(t, stdout.String())
}
