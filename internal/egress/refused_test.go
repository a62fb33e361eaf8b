package egress

import (
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAdminListenerIsRefusedEvenWhenAllowed(t *testing.T) {
	t.Parallel()
	all := "0.0.0.0/0,::/0"
	for _, tt := range []struct {
		name    string
		refused []string
		// hit are destinations that reach the listener; miss are ones that do not.
		hit, miss []string
	}{
		{"Loopback", []string{"127.0.0.1:8081"}, []string{"127.0.0.1:8081", "[::ffff:127.0.0.1]:8081"}, []string{"127.0.0.1:8082", "127.0.0.2:8081"}},
		{"IPv6", []string{"[::1]:8081"}, []string{"[::1]:8081"}, []string{"127.0.0.1:8081"}},
		{"Name", []string{"localhost:8081"}, []string{"127.0.0.1:8081"}, []string{"127.0.0.1:8080"}},
		{"Unspecified", []string{":8081"}, []string{"127.0.0.1:8081", "127.9.9.9:8081", "[::1]:8081"}, []string{"127.0.0.1:8080"}},
		{"UnspecifiedV6", []string{"[::]:8081"}, []string{"127.0.0.1:8081", "[::1]:8081"}, nil},
		{"ConfiguredAndBound", []string{"127.0.0.1:0", "127.0.0.1:41234"}, []string{"127.0.0.1:41234"}, []string{"127.0.0.1:0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, Config{Allowed: allow(t, all), Refused: tt.refused})
			for _, hit := range tt.hit {
				requireRefused(t, b.guard.Check(netip.MustParseAddrPort(hit)), ReasonAdmin)
			}
			for _, miss := range tt.miss {
				err := b.guard.Check(netip.MustParseAddrPort(miss))
				var re *RefusedError
				if errors.As(err, &re) {
					require.NotEqual(t, ReasonAdmin, re.Reason, miss)
				}
			}
		})
	}
}

func TestUnspecifiedListenerCoversInterfaceAddresses(t *testing.T) {
	t.Parallel()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	b := setup(t, Config{Allowed: allow(t, "0.0.0.0/0,::/0"), Refused: []string{"0.0.0.0:9099"}})
	checked := 0
	for _, a := range addrs {
		p, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		requireRefused(t, b.guard.Check(netip.AddrPortFrom(p.Addr(), 9099)), ReasonAdmin)
		checked++
	}
	require.NotZero(t, checked, "the host has interface addresses")
}
