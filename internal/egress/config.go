package egress

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of Config fields left zero.
const (
	// MaxRequestsDefault bounds the requests to other domains in flight at once, all hosts
	// together: a few times what the deliverers (10 per instance), the inbox processors and the
	// relay need, and far below the file descriptors of a process.
	MaxRequestsDefault = 64
	// MaxRequestsPerHostDefault bounds the requests in flight to one host (host:port of the URL):
	// one domain, however many of our requests it draws, holds at most this many.
	MaxRequestsPerHostDefault = 16
	// TimeoutDefault bounds one request, waiting for a slot, connecting and reading the body
	// included.
	TimeoutDefault = 10 * time.Second
	// DialTimeoutDefault bounds one connection attempt.
	DialTimeoutDefault = 5 * time.Second
	// MaxResponseBytesDefault bounds a response body: above the largest document federation
	// reads (a collection page, 16 MiB; a chunk file, 10 MB). Callers bound tighter.
	MaxResponseBytesDefault = 32 << 20
)

// maxResponseHeaderBytes bounds a response's header block.
const maxResponseHeaderBytes = 64 << 10

// Config configures a Guard.
type Config struct {
	// Allowed lifts the refusal of special-purpose addresses for the destinations it names
	// (ParseAllowed): how a deployment reaches peers on its own network, and how tests reach
	// domains on loopback.
	Allowed Allowed
	// Refused names listen addresses (host:port) that are refused whatever Allowed says: the
	// node's own admin listener, as configured and as bound. A host that is empty or
	// unspecified (":8081", "0.0.0.0:8081") refuses the port on loopback and on every address of
	// this host's interfaces; a name is resolved when the Guard is made; port 0 names nothing.
	Refused []string
	// MaxRequests and MaxRequestsPerHost cap the requests in flight; a request waits for a
	// slot until its context (or Timeout) ends.
	MaxRequests        int
	MaxRequestsPerHost int
	// Timeout bounds each request made through Client.
	Timeout time.Duration
	// DialTimeout bounds each connection attempt.
	DialTimeout time.Duration
	// MaxResponseBytes bounds every response body; reading past it fails with ErrTooLarge.
	MaxResponseBytes int64
	Logger           *slog.Logger
	Registerer       prometheus.Registerer
}

func (c Config) withDefaults() Config {
	c.MaxRequests = cmp.Or(c.MaxRequests, MaxRequestsDefault)
	c.MaxRequestsPerHost = cmp.Or(c.MaxRequestsPerHost, MaxRequestsPerHostDefault)
	c.Timeout = cmp.Or(c.Timeout, TimeoutDefault)
	c.DialTimeout = cmp.Or(c.DialTimeout, DialTimeoutDefault)
	c.MaxResponseBytes = cmp.Or(c.MaxResponseBytes, MaxResponseBytesDefault)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func (c Config) validate() error {
	if c.MaxRequests < 1 || c.MaxRequestsPerHost < 1 {
		return fmt.Errorf("max requests %d and max requests per host %d must be positive", c.MaxRequests, c.MaxRequestsPerHost)
	}
	if c.Timeout < 0 || c.DialTimeout < 0 || c.MaxResponseBytes < 0 {
		return errors.New("timeouts and the response bound must not be negative")
	}
	return nil
}

// Allowed is a parsed allowlist: address prefixes, and single addresses with a port.
type Allowed struct {
	prefixes  []netip.Prefix
	addrPorts []netip.AddrPort
}

// maxAllowedEntries bounds an allowlist; a longer one is a mistake, not a deployment.
const maxAllowedEntries = 256

// ParseAllowed reads a comma-separated allowlist. Each entry is a CIDR prefix ("10.1.0.0/16",
// "fd00::/8"), a single address ("10.1.2.3", "::1") or an address with a port
// ("127.0.0.1:8443", "[::1]:8443"); names are not accepted, since what they resolve to can
// change. Empty entries are skipped; an empty list allows nothing.
func ParseAllowed(list string) (Allowed, error) {
	var a Allowed
	entries := strings.Split(list, ",")
	if len(entries) > maxAllowedEntries {
		return Allowed{}, fmt.Errorf("more than %d entries", maxAllowedEntries)
	}
	for _, e := range entries {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return Allowed{}, fmt.Errorf("%q is not a CIDR prefix: %w", e, err)
			}
			if p.Addr().Is4In6() {
				if p.Bits() < 96 {
					return Allowed{}, fmt.Errorf("%q: an IPv4-mapped prefix needs at least 96 bits", e)
				}
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			a.prefixes = append(a.prefixes, p.Masked())
		default:
			if ip, err := netip.ParseAddr(e); err == nil {
				if ip.Zone() != "" {
					return Allowed{}, fmt.Errorf("%q has a zone", e)
				}
				ip = ip.Unmap()
				a.prefixes = append(a.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
				continue
			}
			ap, err := netip.ParseAddrPort(e)
			if err != nil {
				return Allowed{}, fmt.Errorf("%q is neither a CIDR prefix, an IP address nor IP:port", e)
			}
			if ap.Port() == 0 || ap.Addr().Zone() != "" {
				return Allowed{}, fmt.Errorf("%q: the port must not be 0 and the address must have no zone", e)
			}
			a.addrPorts = append(a.addrPorts, netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))
		}
	}
	return a, nil
}

// allows reports whether ap (unmapped) is on the list.
func (a Allowed) allows(ap netip.AddrPort) bool {
	for _, p := range a.prefixes {
		if p.Contains(ap.Addr()) {
			return true
		}
	}
	for _, x := range a.addrPorts {
		if x == ap {
			return true
		}
	}
	return false
}

// String renders the list as ParseAllowed reads it.
func (a Allowed) String() string {
	parts := make([]string, 0, len(a.prefixes)+len(a.addrPorts))
	for _, p := range a.prefixes {
		parts = append(parts, p.String())
	}
	for _, ap := range a.addrPorts {
		parts = append(parts, ap.String())
	}
	return strings.Join(parts, ",")
}
