package httpapi

import (
	"net"
	"net/netip"
)

// clientKey names the client a request comes from: its IPv4 address, or the /64 of its IPv6
// address (one subscriber commonly holds a whole /64, so a per-address limit would be no limit).
// The peer address is used, never a forwarded-for header, which any client can write.
func clientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if addr.Is4() {
		return addr.String()
	}
	p, err := addr.WithZone("").Prefix(64)
	if err != nil {
		return host
	}
	return p.String()
}
