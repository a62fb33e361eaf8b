package anchor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/anchord/anchord/internal/store"
)

// Under Config.WholeSeconds each anchor's time falls in a later whole second than the domain's
// previous anchor's, whichever instance writes it. The anchor clock in the store (the latest
// anchor's time and when it was written, by the database clock, which every instance shares)
// is read and set inside the batch's transaction, locked until it commits. An anchor is
// written at the database's present time, once that is in a later second than the latest
// anchor's; the batch writer waits for that second before its transaction (Wait), and a
// transaction that comes too early anyway (another instance anchored meanwhile) is refused with
// ErrTooEarly and retried, rather than given a time ahead of the clock: two instances would
// otherwise push the times ahead by a second each time they met.
//
// If the database clock steps back behind the latest anchor's time, the anchors that follow
// take the whole second after the latest one, ahead of the clock, one per second of the clock
// as it now runs (measured from when the previous anchor was written), until the clock
// catches up. Stalling until then is not an option: a step may be hours.

// ErrTooEarly refuses an anchor whose time would fall in the same whole second as the
// domain's latest anchor (Config.WholeSeconds). Nothing was written; the batch can be cut
// again after Wait.
var ErrTooEarly = errors.New("too early for the next anchor of this domain")

// aheadWarning is how far an anchor's time may be ahead of the database clock before Write
// says so: more than the rounding to whole seconds explains.
const aheadWarning = 2 * time.Second

// next returns the time of the anchor to write at now after the anchor clock c, or, when it is
// too early for one, the earliest moment it may be written.
func next(c store.AnchorClock, now time.Time) (at, notBefore time.Time) {
	if c.Last.IsZero() {
		return now, time.Time{}
	}
	second := c.Last.Truncate(time.Second).Add(time.Second)
	if c.WrittenAt.After(now) {
		// The clock stepped back behind the latest write, and cannot measure a second from it:
		// this anchor goes at once, and the next one a second after it.
		return later(now, second), time.Time{}
	}
	// The second after the latest anchor's; or, when that is further ahead of the clock than a
	// second (it stepped back), a second after the latest anchor was written.
	notBefore = second
	if second.Sub(now) > time.Second {
		notBefore = c.WrittenAt.Add(time.Second)
	}
	if now.Before(notBefore) {
		return time.Time{}, notBefore
	}
	return later(now, second), time.Time{}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Wait returns how long the batch writer should wait before it cuts the next batch: under
// WholeSeconds, until the next anchor may be written (at most a second); otherwise zero. It
// reads the clock outside any transaction; Write decides again inside its own.
func (w *Writer) Wait(ctx context.Context, ex store.Executor) (time.Duration, error) {
	if !w.cfg.WholeSeconds {
		return 0, nil
	}
	c, err := ex.AnchorClockGet(ctx)
	if err != nil || c.Last.IsZero() {
		return 0, err
	}
	now, err := ex.Now(ctx)
	if err != nil {
		return 0, err
	}
	_, notBefore := next(c, now)
	if notBefore.IsZero() {
		return 0, nil
	}
	return notBefore.Sub(now), nil
}

// time returns the time of the anchor Write records in tx: now, or under WholeSeconds the
// time the anchor clock gives it, which it records; ErrTooEarly if the clock gives none yet.
func (w *Writer) time(ctx context.Context, tx store.Executor) (time.Time, error) {
	if !w.cfg.WholeSeconds {
		return w.cfg.NowFunc().UTC(), nil
	}
	// Locked until tx ends: read before the anchor's row is inserted, so that in a cluster the
	// anchors' sequence numbers increase with their times.
	c, err := tx.AnchorClockGet(ctx)
	if err != nil {
		return time.Time{}, err
	}
	now, err := tx.Now(ctx)
	if err != nil {
		return time.Time{}, err
	}
	at, notBefore := next(c, now)
	if at.IsZero() {
		return time.Time{}, fmt.Errorf("%w: the latest anchor is at %s, the next one not before %s", ErrTooEarly,
			c.Last.Format(time.RFC3339Nano), notBefore.Format(time.RFC3339Nano))
	}
	if err := tx.AnchorClockSet(ctx, store.AnchorClock{Last: at, WrittenAt: now}); err != nil {
		return time.Time{}, err
	}
	// Said once when it starts and once when it ends: until the clock catches up, every anchor
	// is ahead.
	switch ahead := at.Sub(now); {
	case ahead > aheadWarning && !w.ahead.Swap(true):
		w.cfg.Logger.WarnContext(ctx, "anchor times run ahead of the database clock, which stepped back behind the latest anchor's time; anchors are a second apart until it catches up",
			"anchor_time", at, "ahead", ahead.Round(time.Millisecond))
	case ahead <= aheadWarning && w.ahead.Swap(false):
		w.cfg.Logger.InfoContext(ctx, "anchor times are back on the database clock", "anchor_time", at)
	}
	return at.UTC(), nil
}
