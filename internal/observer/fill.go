package observer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/store"
)

// fillPage is the DIDs whose states FillStates computes per transaction.
const fillPage = 1000

// Values of store.DIDStateFillSetting besides "" (nothing computed yet).
const (
	fillDone  = "done"
	fillAfter = "after:"
)

// FillStates computes the state of every DID that was indexed before the index kept states
// (store.DIDStateFillSetting), in suffix order, a page of DIDs per transaction that also records
// how far it got: a fill cut short by a stop or a crash goes on from there at the next start. It
// returns at once when the setting says there is nothing to do, and the number of DIDs whose
// state it stored.
//
// Nothing may index operations while it runs (the Observer takes a DID without a state for one
// without operations): the daemon runs it before its observer starts. Instances of a cluster
// starting together each run it; what one stored, another leaves alone.
//
// The rows of such an index keep their requests; batches rebuilds any that do not.
func FillStates(ctx context.Context, st store.Store, p sidetree.Profile, batches *Batches, logger *slog.Logger) (int, error) {
	v, err := st.SettingGet(ctx, store.DIDStateFillSetting)
	if errors.Is(err, store.ErrNotFound) || (err == nil && string(v) == fillDone) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("fill DID states: %w", err)
	}
	after := strings.TrimPrefix(string(v), fillAfter)
	logger.Info("computing the states of DIDs indexed before the index kept them", "after", after)
	start, last := time.Now(), time.Now()
	stored, seen := 0, 0
	for {
		suffixes, next, err := st.DIDSuffixList(ctx, after, fillPage)
		if err != nil {
			return stored, fmt.Errorf("fill DID states: %w", err)
		}
		if len(suffixes) == 0 {
			break
		}
		lists, err := st.DIDOperationLists(ctx, suffixes)
		if err != nil {
			return stored, fmt.Errorf("fill DID states: %w", err)
		}
		states := make([]store.DIDState, 0, len(suffixes))
		for _, s := range suffixes {
			if _, ok := lists[s]; !ok {
				continue // listed twice in this page
			}
			if err := batches.Requests(ctx, lists[s]); err != nil {
				return stored, fmt.Errorf("fill DID states: %w", err)
			}
			states = append(states, stateOf(sidetree.ResolveRecord(p, s, anchoredOps(lists[s])), s))
			delete(lists, s)
		}
		after = next
		err = st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			inserted, err := tx.DIDStateInsertMany(ctx, states)
			if err != nil {
				return err
			}
			stored += len(inserted)
			return tx.SettingPut(ctx, store.DIDStateFillSetting, []byte(fillAfter+after))
		})
		if err != nil {
			return stored, fmt.Errorf("fill DID states: %w", err)
		}
		seen += len(suffixes)
		if time.Since(last) > 10*time.Second {
			last = time.Now()
			logger.Info("computing DID states", "dids", seen, "after", after, "took", time.Since(start).Round(time.Second))
		}
	}
	if err := st.SettingPut(ctx, store.DIDStateFillSetting, []byte(fillDone)); err != nil {
		return stored, fmt.Errorf("fill DID states: %w", err)
	}
	logger.Info("computed the states of DIDs indexed before the index kept them", "dids", seen, "stored", stored, "took", time.Since(start).Round(time.Millisecond))
	return stored, nil
}
