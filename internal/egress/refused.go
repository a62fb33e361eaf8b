package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
)

// ErrRefused is wrapped by every RefusedError: errors.Is(err, ErrRefused) tells a destination
// the guard will never reach (a permanent failure) from one that failed this time.
var ErrRefused = errors.New("egress: destination refused")

// RefusedError is a destination the guard refused, and why.
type RefusedError struct {
	// Addr is the refused address (ip:port), or the URL's host when the scheme was refused.
	Addr string
	// Reason is one of the Reason constants.
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("egress: %s refused: %s", e.Addr, describe(e.Reason))
}

// Unwrap makes errors.Is(err, ErrRefused) hold.
func (e *RefusedError) Unwrap() error { return ErrRefused }

func describe(reason string) string {
	switch reason {
	case ReasonAdmin:
		return "the node's own admin listener"
	case ReasonScheme:
		return "not an http(s) URL"
	case ReasonAddress:
		return "not an IP address and port"
	default:
		return "a " + reason + " address, not allowed by --peer-allowed-addresses"
	}
}

// listenerRule refuses one port on a range of addresses: a listener of this node.
type listenerRule struct {
	prefix netip.Prefix
	port   uint16
}

// listenerRules turns listen addresses into the destinations that reach them. A listener on
// an unspecified address accepts on every address of the host: loopback, and each interface's.
func listenerRules(ctx context.Context, addrs []string) ([]listenerRule, error) {
	var rules []listenerRule
	var ifaces []netip.Prefix
	for _, a := range addrs {
		host, portText, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("refused listener %q: %w", a, err)
		}
		port, err := strconv.ParseUint(portText, 10, 16)
		if err != nil {
			return nil, fmt.Errorf("refused listener %q: port: %w", a, err)
		}
		if port == 0 {
			continue
		}
		var ips []netip.Addr
		if host == "" {
			ips = []netip.Addr{netip.IPv4Unspecified()}
		} else if ip, err := netip.ParseAddr(host); err == nil {
			ips = []netip.Addr{ip.Unmap().WithZone("")}
		} else {
			resolved, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
			if err != nil {
				return nil, fmt.Errorf("refused listener %q: %w", a, err)
			}
			for _, ip := range resolved {
				ips = append(ips, ip.Unmap().WithZone(""))
			}
		}
		for _, ip := range ips {
			if !ip.IsUnspecified() {
				rules = append(rules, listenerRule{prefix: netip.PrefixFrom(ip, ip.BitLen()), port: uint16(port)})
				continue
			}
			if ifaces == nil {
				if ifaces, err = interfacePrefixes(); err != nil {
					return nil, fmt.Errorf("refused listener %q: %w", a, err)
				}
			}
			for _, p := range ifaces {
				rules = append(rules, listenerRule{prefix: p, port: uint16(port)})
			}
		}
	}
	return rules, nil
}

// interfacePrefixes are loopback and the single addresses of this host's interfaces.
func interfacePrefixes() ([]netip.Prefix, error) {
	out := []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("0.0.0.0/32"), netip.MustParsePrefix("::/128"),
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list interface addresses: %w", err)
	}
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := pfx.Addr().Unmap().WithZone("")
		out = append(out, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return out, nil
}

func refusesListener(rules []listenerRule, ap netip.AddrPort) bool {
	for _, r := range rules {
		if r.port == ap.Port() && r.prefix.Contains(ap.Addr()) {
			return true
		}
	}
	return false
}
