package egress

import "net/netip"

// Reasons a destination is refused; they label anchord_egress_refused_total and name the cause
// in a RefusedError.
const (
	ReasonLoopback    = "loopback"
	ReasonPrivate     = "private"
	ReasonLinkLocal   = "link_local"
	ReasonCGNAT       = "cgnat"
	ReasonMulticast   = "multicast"
	ReasonUnspecified = "unspecified"
	ReasonReserved    = "reserved"
	ReasonAdmin       = "admin_listener"
	ReasonScheme      = "scheme"
	ReasonAddress     = "bad_address"
)

// special is one range of the IANA special-purpose registries that no peer may be reached at.
type special struct {
	prefix netip.Prefix
	reason string
}

// specialRanges are the IPv4 and IPv6 special-purpose ranges (IANA's registries, RFC 6890 and
// later). An address inside none of them is public. IPv4-mapped IPv6 addresses are unmapped
// before they are looked up, so ::ffff:127.0.0.1 is loopback; the other IPv6 forms that embed an
// IPv4 address (NAT64, 6to4, Teredo) are refused whole, as their embedded address could be
// anything.
var specialRanges = func() []special {
	table := []struct{ cidr, reason string }{
		{"0.0.0.0/8", ReasonUnspecified},    // "this network": 0.0.0.0 reaches this host
		{"10.0.0.0/8", ReasonPrivate},       // RFC 1918
		{"100.64.0.0/10", ReasonCGNAT},      // RFC 6598 shared address space
		{"127.0.0.0/8", ReasonLoopback},     // RFC 1122
		{"169.254.0.0/16", ReasonLinkLocal}, // RFC 3927; cloud metadata services live here
		{"172.16.0.0/12", ReasonPrivate},    // RFC 1918
		{"192.0.0.0/24", ReasonReserved},    // IETF protocol assignments
		{"192.0.2.0/24", ReasonReserved},    // TEST-NET-1
		{"192.31.196.0/24", ReasonReserved}, // AS112-v4
		{"192.52.193.0/24", ReasonReserved}, // AMT
		{"192.88.99.0/24", ReasonReserved},  // 6to4 relay anycast
		{"192.168.0.0/16", ReasonPrivate},   // RFC 1918
		{"192.175.48.0/24", ReasonReserved}, // AS112 direct delegation
		{"198.18.0.0/15", ReasonReserved},   // benchmarking
		{"198.51.100.0/24", ReasonReserved}, // TEST-NET-2
		{"203.0.113.0/24", ReasonReserved},  // TEST-NET-3
		{"224.0.0.0/4", ReasonMulticast},    // multicast
		{"240.0.0.0/4", ReasonReserved},     // reserved, and 255.255.255.255 broadcast

		{"::/128", ReasonUnspecified},
		{"::1/128", ReasonLoopback},
		{"::/96", ReasonReserved},             // IPv4-compatible, deprecated
		{"64:ff9b::/96", ReasonReserved},      // NAT64 well-known prefix
		{"64:ff9b:1::/48", ReasonReserved},    // NAT64 local use
		{"100::/64", ReasonReserved},          // discard-only
		{"2001::/23", ReasonReserved},         // IETF protocol assignments, Teredo among them
		{"2001:db8::/32", ReasonReserved},     // documentation
		{"2002::/16", ReasonReserved},         // 6to4
		{"2620:4f:8000::/48", ReasonReserved}, // AS112 direct delegation
		{"3fff::/20", ReasonReserved},         // documentation (RFC 9637)
		{"5f00::/16", ReasonReserved},         // SRv6 SIDs
		{"fc00::/7", ReasonPrivate},           // unique local
		{"fe80::/10", ReasonLinkLocal},
		{"fec0::/10", ReasonPrivate}, // site-local, deprecated
		{"ff00::/8", ReasonMulticast},
	}
	out := make([]special, len(table))
	for i, r := range table {
		out[i] = special{prefix: netip.MustParsePrefix(r.cidr), reason: r.reason}
	}
	return out
}()

// Classify returns why ip is not a public address ("" when it is): one of the Reason
// constants. The most specific range decides (::1 is loopback, not IPv4-compatible).
func Classify(ip netip.Addr) string {
	if !ip.IsValid() {
		return ReasonAddress
	}
	ip = ip.Unmap().WithZone("")
	reason, bits := "", -1
	for _, s := range specialRanges {
		if s.prefix.Contains(ip) && s.prefix.Bits() > bits {
			reason, bits = s.reason, s.prefix.Bits()
		}
	}
	return reason
}

// neverAllowed reports whether a reason stays refused even for an allowed address: nothing a
// peer serves listens on an unspecified or multicast address, and 0.0.0.0 dials this host.
func neverAllowed(reason string) bool {
	return reason == ReasonUnspecified || reason == ReasonMulticast || reason == ReasonAddress
}
