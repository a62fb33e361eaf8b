package secret

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ in, want string }{
		{"", ""},
		{"postgres://postgres@127.0.0.1:5432/anchord", "postgres://postgres@127.0.0.1:5432/anchord"},
		{"postgres://u:hunter2@db:5432/x?sslmode=disable", "postgres://u:xxxxx@db:5432/x?sslmode=disable"},
		{"postgres://db/x?password=hunter2&sslmode=require", "postgres://db/x?password=xxxxx&sslmode=require"},
		{"amqp://guest:guest@127.0.0.1:5672/", "amqp://guest:xxxxx@127.0.0.1:5672/"},
		{"http://ledger:8008/?Token=abc", "http://ledger:8008/?Token=xxxxx"},
		{"just-a-token", "<redacted>"},
		{"://bad", "<redacted>"},
	} {
		got := RedactURL(c.in)
		require.Equal(t, c.want, got, c.in)
		require.NotContains(t, got, "hunter2")
	}
}
