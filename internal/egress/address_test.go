package egress

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		ip, want string
	}{
		// IPv4
		{"0.0.0.0", ReasonUnspecified},
		{"0.1.2.3", ReasonUnspecified},
		{"10.0.0.1", ReasonPrivate},
		{"10.255.255.255", ReasonPrivate},
		{"100.64.0.1", ReasonCGNAT},
		{"100.127.255.254", ReasonCGNAT},
		{"100.128.0.1", ""},
		{"127.0.0.1", ReasonLoopback},
		{"127.1.2.3", ReasonLoopback},
		{"169.254.169.254", ReasonLinkLocal},
		{"172.16.0.1", ReasonPrivate},
		{"172.31.255.255", ReasonPrivate},
		{"172.32.0.1", ""},
		{"192.0.0.8", ReasonReserved},
		{"192.0.2.1", ReasonReserved},
		{"192.88.99.1", ReasonReserved},
		{"192.168.1.1", ReasonPrivate},
		{"198.18.0.1", ReasonReserved},
		{"198.51.100.7", ReasonReserved},
		{"203.0.113.9", ReasonReserved},
		{"224.0.0.1", ReasonMulticast},
		{"239.255.255.250", ReasonMulticast},
		{"240.0.0.1", ReasonReserved},
		{"255.255.255.255", ReasonReserved},
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		// IPv6
		{"::", ReasonUnspecified},
		{"::1", ReasonLoopback},
		{"::7f00:1", ReasonReserved}, // IPv4-compatible 127.0.0.1
		{"64:ff9b::a00:1", ReasonReserved},
		{"64:ff9b:1::1", ReasonReserved},
		{"100::1", ReasonReserved},
		{"2001::1", ReasonReserved}, // Teredo
		{"2001:db8::1", ReasonReserved},
		{"2002:7f00:1::1", ReasonReserved}, // 6to4 of 127.0.0.1
		{"3fff::1", ReasonReserved},
		{"fc00::1", ReasonPrivate},
		{"fd12:3456::1", ReasonPrivate},
		{"fe80::1", ReasonLinkLocal},
		{"fe80::1%eth0", ReasonLinkLocal},
		{"fec0::1", ReasonPrivate},
		{"ff02::1", ReasonMulticast},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001::1", ""},
		// IPv4-mapped IPv6: the IPv4 address decides.
		{"::ffff:127.0.0.1", ReasonLoopback},
		{"::ffff:10.1.2.3", ReasonPrivate},
		{"::ffff:169.254.169.254", ReasonLinkLocal},
		{"::ffff:100.64.0.1", ReasonCGNAT},
		{"::ffff:0.0.0.0", ReasonUnspecified},
		{"::ffff:8.8.8.8", ""},
	} {
		require.Equal(t, tt.want, Classify(netip.MustParseAddr(tt.ip)), tt.ip)
	}
	require.Equal(t, ReasonAddress, Classify(netip.Addr{}))
}
