// Package ratelimit holds token buckets per key (a client address, an actor, a domain) whose
// memory stays bounded however many keys a client can make up. What a key is, and what a
// refusal answers, is the caller's.
package ratelimit

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Keyed is a token bucket per key: rate requests per second sustained, burst at once. It is
// safe for concurrent use.
//
// Its memory is bounded: it tracks at most maxClients clients. An entry idle long enough for its
// bucket to refill is equivalent to no entry, so such entries are forgotten, by a sweep that runs
// only when the table is full and at most once per sweep interval (a full table must not cost a
// scan per request). While the table stays full, clients without an entry share one overflow
// bucket: together they get the rate of one client, so no set of clients, however large, can
// exceed its share by being too many to track.
type Keyed struct {
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

// New returns a Keyed limiter of perSecond (> 0) sustained and burst (≥ 1) at once per key,
// tracking at most maxClients keys.
func New(perSecond float64, burst, maxClients int) *Keyed {
	idle := time.Duration(float64(burst) / perSecond * float64(time.Second))
	return &Keyed{
		limit: rate.Limit(perSecond), burst: burst, maxClients: maxClients, idle: idle, now: time.Now,
		clients:  make(map[string]*rateClient),
		overflow: rate.NewLimiter(rate.Limit(perSecond), burst),
	}
}

// Allow takes a token from key's bucket. When there is none it reports false and the time until
// there will be one.
func (l *Keyed) Allow(key string) (bool, time.Duration) {
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
func (l *Keyed) sweep(now time.Time) {
	l.lastSweep = now
	for k, c := range l.clients {
		if now.Sub(c.seen) >= l.idle {
			delete(l.clients, k)
		}
	}
}

// Len returns the number of keys tracked.
func (l *Keyed) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.clients)
}
