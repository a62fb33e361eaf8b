package config

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteShowsTheEffectiveConfiguration(t *testing.T) {
	t.Parallel()
	env := map[string]string{"ANCHORD_DID_METHOD": "ion", "ANCHORD_DATABASE_URL": "postgres://anchord:hunter2@db:5432/anchord"}
	cfg, err := Load([]string{"--batch-writer-timeout", "500ms", "--access-log"}, func(k string) (string, bool) { v, ok := env[k]; return v, ok }, &bytes.Buffer{})
	require.NoError(t, err)
	var b bytes.Buffer
	cfg.Write(&b)
	out := b.String()
	for _, want := range []string{
		"# sidetree\n", `--did-method="ion"`, `--batch-writer-timeout="500ms"`, `--access-log="true"`,
		`--host-url="127.0.0.1:8080"`, "# storage\n",
	} {
		require.Contains(t, out, want)
	}
	require.NotContains(t, out, "hunter2", "secrets are redacted")
	require.Contains(t, out, `--database-url="postgres://anchord:`)
	require.Equal(t, len(cfg.params())+len(logGroups), strings.Count(out, "\n"), "every parameter once, under its group")
}
