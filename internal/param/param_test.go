package param

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestNearestSuggestsCloseNamesOnly(t *testing.T) {
	t.Parallel()
	var s string
	var d time.Duration
	byName := map[string]Param{
		"host-url": String(&s, "host-url", ""), "did-method": String(&s, "did-method", ""),
		"batch-writer-timeout": Duration(&d, "batch-writer-timeout", ""), "http-dial-timeout": Refused("http-dial-timeout", "x"),
	}
	for _, tc := range []struct{ typed, want string }{
		{"hst-url", "host-url"},
		{"did-methd", "did-method"},
		{"batch-writer-timout", "batch-writer-timeout"},
		{"http-dial-timout", ""}, // refused names are never suggested
		{"verbose", ""},
	} {
		require.Equal(t, tc.want, nearest(tc.typed, byName), tc.typed)
	}
}

func TestWrapFitsTheWidth(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("word ", 60) + strings.Repeat("x", 120)
	out := wrap(text, "    ", 40)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	for _, l := range lines[:len(lines)-1] {
		require.LessOrEqual(t, len(l), 40)
		require.True(t, strings.HasPrefix(l, "    "))
	}
	require.Equal(t, "    "+strings.Repeat("x", 120), lines[len(lines)-1], "a longer word gets a line of its own")
}

func TestMillisAndRefused(t *testing.T) {
	t.Parallel()
	var d time.Duration
	params := []Param{Duration(&d, "batch-writer-timeout", "").Env("BATCH_WRITER_TIMEOUT").Millis(), Refused("mq-connect-max-retries", "wait").Env("MQ_CONNECT_MAX_RETRIES")}
	env := func(vars map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	}
	var out bytes.Buffer
	require.NoError(t, Parse("serve", nil, env(map[string]string{"BATCH_WRITER_TIMEOUT": "250"}), params, &out))
	require.Equal(t, 250*time.Millisecond, d)
	require.NoError(t, Parse("serve", []string{"--batch-writer-timeout", "3s"}, env(nil), params, &out))
	require.Equal(t, 3*time.Second, d)
	err := Parse("serve", []string{"--mq-connect-max-retries", "5"}, env(nil), params, &out)
	require.EqualError(t, err, "--mq-connect-max-retries is Orb's, and anchord does not have it: wait")
	err = Parse("serve", nil, env(map[string]string{"MQ_CONNECT_MAX_RETRIES": "5"}), params, &out)
	require.EqualError(t, err, "MQ_CONNECT_MAX_RETRIES: --mq-connect-max-retries is Orb's, and anchord does not have it: wait")
}
