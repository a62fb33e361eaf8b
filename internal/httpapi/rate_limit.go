package httpapi

import (
	"math"
	"net"
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// rateLimiter is a token bucket per client: rate requests per second sustained, burst at once.
//
// Its memory is bounded: it tracks at most maxClients clients. An entry idle long enough for its
// bucket to refill is equivalent to no entry, so such entries are forgotten, by a sweep that runs
// only when the table is full and at most once per sweep interval (a full table must not cost a
// scan per request). While the table stays full, clients without an entry share one overflow
// bucket: together they get the rate of one client, so no set of clients, however large, can
// exceed its share by being too many to track.
type rateLimiter struct {
	limit      rate.Limit
	burst      int
	maxClients int
	idle       time.Duration // time for an empty bucket to refill
	now        func() time.Time

	mu        sync.Mutex
	clients   map[string]*rateClient
	overflow  *rate.Limiter
	lastSweep time.Time
}

type rateClient struct {
	lim  *rate.Limiter
	seen time.Time
}

// rateSweepInterval is the least time between two sweeps of a full table.
const rateSweepInterval = time.Second

func newRateLimiter(perSecond float64, burst, maxClients int) *rateLimiter {
	idle := time.Duration(float64(burst) / perSecond * float64(time.Second))
	return &rateLimiter{
		limit: rate.Limit(perSecond), burst: burst, maxClients: maxClients, idle: idle, now: time.Now,
		clients:  make(map[string]*rateClient),
		overflow: rate.NewLimiter(rate.Limit(perSecond), burst),
	}
}

// allow takes a token from key's bucket. When there is none it reports false and the time until
// there will be one.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	lim := l.overflow
	if c := l.clients[key]; c != nil {
		c.seen = now
		lim = c.lim
	} else {
		if len(l.clients) >= l.maxClients && now.Sub(l.lastSweep) >= rateSweepInterval {
			l.sweep(now)
		}
		if len(l.clients) < l.maxClients {
			lim = rate.NewLimiter(l.limit, l.burst)
			l.clients[key] = &rateClient{lim: lim, seen: now}
		}
	}
	if lim.AllowN(now, 1) {
		return true, 0
	}
	missing := 1 - lim.TokensAt(now)
	return false, time.Duration(math.Ceil(missing / float64(l.limit) * float64(time.Second)))
}

// sweep forgets the clients whose buckets are full again.
func (l *rateLimiter) sweep(now time.Time) {
	l.lastSweep = now
	for k, c := range l.clients {
		if now.Sub(c.seen) >= l.idle {
			delete(l.clients, k)
		}
	}
}

// len returns the number of clients tracked.
func (l *rateLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}

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
