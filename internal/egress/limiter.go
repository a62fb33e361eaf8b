package egress

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// limiter holds the slots of requests in flight: one of the global cap and one of the cap of
// the request's host. A request takes its host's slot first, so requests queued behind a slow
// host hold none of the global slots while they wait.
type limiter struct {
	global  chan struct{}
	perHost int
	m       *metrics

	mu    sync.Mutex
	hosts map[string]*hostSlots
}

// hostSlots are the slots of one host; the entry lives while a request holds or awaits one.
type hostSlots struct {
	ch    chan struct{}
	users int
}

func newLimiter(global, perHost int, m *metrics) *limiter {
	return &limiter{global: make(chan struct{}, global), perHost: perHost, m: m, hosts: map[string]*hostSlots{}}
}

// acquire waits for a slot of host and a global slot until ctx ends, and returns the function
// that gives both back (call it once).
func (l *limiter) acquire(ctx context.Context, host string) (func(), error) {
	start := time.Now()
	hs := l.join(host)
	select {
	case hs.ch <- struct{}{}:
	default:
		select {
		case hs.ch <- struct{}{}:
		case <-ctx.Done():
			l.leave(host, hs)
			l.m.slotTimeouts.WithLabelValues("host").Inc()
			return nil, fmt.Errorf("egress: wait for a slot of %s (%d in flight): %w", host, l.perHost, ctx.Err())
		}
	}
	select {
	case l.global <- struct{}{}:
	default:
		select {
		case l.global <- struct{}{}:
		case <-ctx.Done():
			<-hs.ch
			l.leave(host, hs)
			l.m.slotTimeouts.WithLabelValues("global").Inc()
			return nil, fmt.Errorf("egress: wait for a slot (%d in flight): %w", cap(l.global), ctx.Err())
		}
	}
	l.m.slotWait.Observe(time.Since(start).Seconds())
	l.m.inFlight.Inc()
	var once sync.Once
	return func() {
		once.Do(func() {
			l.m.inFlight.Dec()
			<-l.global
			<-hs.ch
			l.leave(host, hs)
		})
	}, nil
}

func (l *limiter) join(host string) *hostSlots {
	l.mu.Lock()
	defer l.mu.Unlock()
	hs := l.hosts[host]
	if hs == nil {
		hs = &hostSlots{ch: make(chan struct{}, l.perHost)}
		l.hosts[host] = hs
	}
	hs.users++
	return hs
}

func (l *limiter) leave(host string, hs *hostSlots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hs.users--
	if hs.users == 0 {
		delete(l.hosts, host)
	}
}
