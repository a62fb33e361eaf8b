package egress

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseAllowed(t *testing.T) {
	t.Parallel()
	a, err := ParseAllowed(" 10.1.0.0/16, 127.0.0.1:8443,[::1]:9000 ,, fd00::/8,192.168.7.7, ::ffff:172.16.0.0/108")
	require.NoError(t, err)
	require.Equal(t, "10.1.0.0/16,fd00::/8,192.168.7.7/32,172.16.0.0/12,127.0.0.1:8443,[::1]:9000", a.String())
	for _, tt := range []struct {
		ap   string
		want bool
	}{
		{"10.1.2.3:80", true},
		{"10.2.0.1:80", false},
		{"127.0.0.1:8443", true},
		{"127.0.0.1:8444", false},
		{"[::1]:9000", true},
		{"[::1]:9001", false},
		{"[fd00::5]:443", true},
		{"192.168.7.7:1", true},
		{"192.168.7.8:1", false},
		{"172.20.0.1:80", true},
	} {
		require.Equal(t, tt.want, a.allows(netip.MustParseAddrPort(tt.ap)), tt.ap)
	}

	empty, err := ParseAllowed("")
	require.NoError(t, err)
	require.False(t, empty.allows(netip.MustParseAddrPort("127.0.0.1:80")))

	for _, bad := range []string{"localhost:80", "10.0.0.0/33", "127.0.0.1:0", "example.com", "1.2.3.4:x", "fe80::1%eth0", "[fe80::1%eth0]:80", strings.Repeat("1.2.3.4,", 300)} {
		_, err := ParseAllowed(bad)
		require.Error(t, err, bad)
	}
}

// FuzzParseAllowed: whatever the input, the parser answers without panicking, and what it
// accepts it renders as a list it reads back the same.
func FuzzParseAllowed(f *testing.F) {
	for _, s := range []string{"", "10.0.0.0/8", "127.0.0.1:8080,[::1]:80", "::ffff:1.2.3.4/120", "1.2.3.4", ",,,", "a:b:c", "[::1]", "1.2.3.4/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAllowed(s)
		if err != nil {
			return
		}
		b, err := ParseAllowed(a.String())
		require.NoError(t, err, a.String())
		require.Equal(t, a.String(), b.String())
	})
}
