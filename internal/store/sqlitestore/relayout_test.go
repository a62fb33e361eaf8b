package sqlitestore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/store"
)

// oldDIDsPerAnchor is the creates of one anchor of an older database built by oldLayout.
const oldDIDsPerAnchor = 500

// oldSuffix is DID k's suffix: in an order unrelated to k's, as real suffixes are.
func oldSuffix(k int) string {
	h := sha256.Sum256([]byte(fmt.Sprint(k)))
	return "EiA" + base64.RawURLEncoding.EncodeToString(h[:])[:43]
}

// oldLayout writes a database as an anchord that indexed dids DIDs before migration 30 and
// went on after it left it: did_operations_suffix, did_states keyed by suffix, the first half
// of the DIDs' states without positions (written before migration 30) and the rest with them.
// Every third DID has an update in a later anchor. It returns the data directory and the
// suffixes.
func oldLayout(t testing.TB, dids, stateSize int) (string, []string) {
	t.Helper()
	ctx := context.Background()
	ms, err := Migrations()
	require.NoError(t, err)
	i := slices.IndexFunc(ms, func(m store.Migration) bool { return m.Version == 30 })
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	writer, err := sql.Open("sqlite", dsn(path, false, SynchronousDefault, MmapSizeDefault, writerCacheSize, false))
	require.NoError(t, err)
	writer.SetMaxOpenConns(1)
	s := &Store{writer: writer, reader: writer, path: path, logger: slog.New(slog.DiscardHandler)}
	s.executor = executor{w: writer, r: writer}
	require.NoError(t, s.applyMigrations(ctx, ms[:i]))

	suffixes := make([]string, dids)
	var ops []store.DIDOperation
	for k := range dids {
		suffixes[k] = oldSuffix(k)
		ops = append(ops, store.DIDOperation{Suffix: suffixes[k], AnchorSeq: int64(1 + k/oldDIDsPerAnchor), Index: k % oldDIDsPerAnchor, Type: "create"})
		if k%3 == 0 {
			ops = append(ops, store.DIDOperation{Suffix: suffixes[k], AnchorSeq: int64(100_000 + k/oldDIDsPerAnchor), Index: k % oldDIDsPerAnchor, Type: "update"})
		}
	}
	require.NoError(t, s.DIDOperationInsertMany(ctx, ops))
	state := func(k int) []byte {
		b := make([]byte, stateSize)
		copy(b, suffixes[k])
		return b
	}
	half := dids / 2
	tx, err := writer.BeginTx(ctx, nil)
	require.NoError(t, err)
	for k := range half {
		_, err := tx.ExecContext(ctx, `INSERT INTO did_states (suffix, state) VALUES (?, ?)`, suffixes[k], state(k))
		require.NoError(t, err)
	}
	require.NoError(t, tx.Commit())
	require.NoError(t, s.upgrade(ctx, ms))
	require.True(t, s.layout.bySuffix.Load())
	var states []store.DIDState
	for k := half; k < dids; k++ {
		pos := []store.DIDPosition{{AnchorSeq: int64(1 + k/oldDIDsPerAnchor), Index: k % oldDIDsPerAnchor}}
		if k%3 == 0 {
			pos = append(pos, store.DIDPosition{AnchorSeq: int64(100_000 + k/oldDIDsPerAnchor), Index: k % oldDIDsPerAnchor})
		}
		states = append(states, store.DIDState{Suffix: suffixes[k], State: state(k), Positions: pos})
	}
	require.NoError(t, s.DIDStatePutMany(ctx, states))
	s.Close()
	return dir, suffixes
}

// didView is what the store's public reads give of a set of DIDs.
type didView struct {
	states   map[string][]byte
	lists    map[string][]store.DIDOperation
	last     map[string]int64
	suffixes []string
}

func viewOf(t testing.TB, s *Store, suffixes []string) didView {
	t.Helper()
	ctx := context.Background()
	v := didView{lists: map[string][]store.DIDOperation{}}
	var err error
	v.states, err = s.DIDStateGetMany(ctx, suffixes)
	require.NoError(t, err)
	for _, suffix := range suffixes {
		v.lists[suffix], err = s.DIDOperationList(ctx, suffix)
		require.NoError(t, err)
	}
	v.last, err = s.DIDLastAnchors(ctx, suffixes)
	require.NoError(t, err)
	for after := ""; ; {
		page, next, err := s.DIDSuffixList(ctx, after, 1000)
		require.NoError(t, err)
		if len(page) == 0 {
			break
		}
		v.suffixes, after = append(v.suffixes, page...), next
	}
	slices.Sort(v.suffixes)
	v.suffixes = slices.Compact(v.suffixes)
	return v
}

func openDir(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{DataDir: dir})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func newTestRelayout(t testing.TB, s *Store) *Relayout {
	t.Helper()
	r, err := NewRelayout(s, nil, nil)
	require.NoError(t, err)
	r.restRatio = 0
	r.positionsPage, r.copyPage, r.deletePage = 70, 90, 110
	return r
}

// relayoutToEnd runs r's steps until the database has the current layout.
func relayoutToEnd(t testing.TB, r *Relayout) {
	t.Helper()
	for range 100_000 {
		phase, _, err := r.runOnce(context.Background())
		require.NoError(t, err)
		if phase == relayoutDone {
			return
		}
	}
	t.Fatal("the relayout does not end")
}

// requireCurrentLayout checks that s has a new database's layout and nothing of the pass left.
func requireCurrentLayout(t testing.TB, s *Store) {
	t.Helper()
	ctx := context.Background()
	var names []string
	rows, err := s.writer.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE name LIKE 'did_operations%' OR name LIKE 'did_states%' ORDER BY name`)
	require.NoError(t, eachRow(rows, err, func(rows *sql.Rows) error {
		var n string
		names = append(names, n)
		return rows.Scan(&names[len(names)-1])
	}))
	require.Equal(t, []string{"did_operations", "did_states"}, names, "no suffix index, no copy, no trigger")
	var keyed bool
	require.NoError(t, s.writer.QueryRowContext(ctx, qDIDStatesWithoutRowid).Scan(&keyed))
	require.False(t, keyed, "did_states by rowid")
	require.False(t, s.layout.bySuffix.Load())
	require.True(t, s.layout.suffixIndexGone.Load(), "operations' rows are written without their suffix")
	_, err = s.SettingGet(ctx, relayoutSetting)
	require.ErrorIs(t, err, store.ErrNotFound)
}

// TestRelayoutMovesAnOlderDatabase: an older database with states with and without positions
// ends in the current layout with every DID read as before, and indexes on as a new one does;
// the pass does nothing on a database in the current layout.
func TestRelayoutMovesAnOlderDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, suffixes := oldLayout(t, 1000, 40)
	s := openDir(t, dir)
	before := viewOf(t, s, suffixes)
	require.Len(t, before.states, len(suffixes))
	require.Len(t, before.suffixes, len(suffixes))

	r := newTestRelayout(t, s)
	relayoutToEnd(t, r)
	requireCurrentLayout(t, s)
	require.Equal(t, before, viewOf(t, s, suffixes))

	// Indexing goes on as on a new database: a create, and an update of a moved DID.
	created := store.DIDOperation{Suffix: "EiAnew", AnchorSeq: 200_000, Index: 0, Type: "create"}
	updated := store.DIDOperation{Suffix: suffixes[1], AnchorSeq: 200_000, Index: 1, Type: "update"}
	require.NoError(t, s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if err := tx.DIDOperationInsertMany(ctx, []store.DIDOperation{created, updated}); err != nil {
			return err
		}
		if _, err := tx.DIDStateInsertMany(ctx, []store.DIDState{{Suffix: created.Suffix, State: []byte{1}, Positions: []store.DIDPosition{{AnchorSeq: 200_000}}}}); err != nil {
			return err
		}
		return tx.DIDStatePutMany(ctx, []store.DIDState{{Suffix: updated.Suffix, State: []byte{2},
			Positions: []store.DIDPosition{{AnchorSeq: 1, Index: 1}, {AnchorSeq: 200_000, Index: 1}}}})
	}))
	require.Equal(t, map[string]string{"1/0": suffixes[0], "1/1": suffixes[1], "200000/0": "", "200000/1": ""},
		rowSuffixes(t, s, "1/0", "1/1", "200000/0", "200000/1"), "rows written before the index went keep their suffix; none after")
	got, err := s.DIDOperationList(ctx, updated.Suffix)
	require.NoError(t, err)
	require.Equal(t, append(slices.Clone(before.lists[updated.Suffix]), updated), got)
	got, err = s.DIDOperationList(ctx, created.Suffix)
	require.NoError(t, err)
	require.Equal(t, []store.DIDOperation{created}, got)

	// Reopened, the database is a new one's; the pass has nothing to do.
	s.Close()
	s = openDir(t, dir)
	requireCurrentLayout(t, s)
	phase, _, err := newTestRelayout(t, s).runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, relayoutDone, phase)
	state, err := s.DIDStateGet(ctx, created.Suffix)
	require.NoError(t, err)
	require.Equal(t, []byte{1}, state)

	fresh := openDir(t, t.TempDir())
	phase, _, err = newTestRelayout(t, fresh).runOnce(ctx)
	require.NoError(t, err)
	require.Equal(t, relayoutDone, phase)
	requireCurrentLayout(t, fresh)
}

// TestRelayoutResumesAfterAStop stops the pass after each of its steps, in every phase (the store
// closed as a killed process leaves it: what committed stays), reopens the database and runs the
// pass to its end: the same layout, the same DIDs. One stop cancels a step midway instead.
func TestRelayoutResumesAfterAStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, suffixes := oldLayout(t, 300, 40)
	s := openDir(t, copyDir(t, dir))
	want := viewOf(t, s, suffixes)
	// The steps of a whole pass, and the phase of each.
	var phases []relayoutPhase
	r := newTestRelayout(t, s)
	for {
		phase, _, err := r.runOnce(ctx)
		require.NoError(t, err)
		if phases = append(phases, phase); phase == relayoutDone {
			break
		}
	}
	s.Close()
	for _, p := range []relayoutPhase{relayoutPositions, relayoutCopy, relayoutDelete} {
		require.Contains(t, phases, p)
	}

	for stop := 1; stop < len(phases); stop++ {
		t.Run(fmt.Sprintf("after %d steps, in %s", stop, phases[stop-1]), func(t *testing.T) {
			d := copyDir(t, dir)
			s := openDir(t, d)
			r := newTestRelayout(t, s)
			for range stop {
				_, _, err := r.runOnce(ctx)
				require.NoError(t, err)
			}
			// A step cancelled while it runs commits nothing.
			cctx, cancel := context.WithCancel(ctx)
			go func() { time.Sleep(time.Millisecond); cancel() }()
			_, _, _ = r.runOnce(cctx)
			s.Close()

			s = openDir(t, d)
			require.Equal(t, want, viewOf(t, s, suffixes), "between the stop and the end")
			relayoutToEnd(t, newTestRelayout(t, s))
			requireCurrentLayout(t, s)
			require.Equal(t, want, viewOf(t, s, suffixes))
		})
	}
}

// TestRelayoutKeepsConcurrentWrites runs the pass while a writer replaces states and inserts
// new DIDs, and readers read every DID: no read fails or misses a DID's state or operations, and
// every state ends with the last value written, whether the copy had passed it or not.
func TestRelayoutKeepsConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, suffixes := oldLayout(t, 1500, 40)
	s := openDir(t, dir)
	before := viewOf(t, s, suffixes)

	r := newTestRelayout(t, s)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	last := map[string][]byte{}
	var created []string
	var duringCopy atomic.Int64 // writes while the triggers mirrored did_states
	wg.Add(1)
	go func() {
		defer wg.Done()
		for round := 0; !stop.Load(); round++ {
			k := (round * 37) % len(suffixes)
			suffix := suffixes[k]
			state := []byte(fmt.Sprintf("round %d", round))
			newDID := fmt.Sprintf("EiAround%05d", round)
			err := s.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
				if err := tx.DIDOperationInsertMany(ctx, []store.DIDOperation{{Suffix: newDID, AnchorSeq: int64(300_000 + round), Type: "create"}}); err != nil {
					return err
				}
				if _, err := tx.DIDStateInsertMany(ctx, []store.DIDState{{Suffix: newDID, State: []byte(newDID),
					Positions: []store.DIDPosition{{AnchorSeq: int64(300_000 + round)}}}}); err != nil {
					return err
				}
				pos := make([]store.DIDPosition, len(before.lists[suffix]))
				for i, op := range before.lists[suffix] {
					pos[i] = store.DIDPosition{AnchorSeq: op.AnchorSeq, Index: op.Index}
				}
				if err := tx.DIDStatePutMany(ctx, []store.DIDState{{Suffix: suffix, State: state, Positions: pos}}); err != nil {
					return err
				}
				var copying bool
				if err := tx.(executor).r.QueryRowContext(ctx, qRelayoutTableExists, "did_states_relayout").Scan(&copying); err != nil {
					return err
				}
				if copying {
					duringCopy.Add(1)
				}
				return nil
			})
			if !assertNoError(t, err) {
				return
			}
			mu.Lock()
			last[suffix] = state
			created = append(created, newDID)
			mu.Unlock()
		}
	}()
	for g := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; !stop.Load(); i++ {
				suffix := suffixes[(i*7)%len(suffixes)]
				state, err := s.DIDStateGet(ctx, suffix)
				if !assertNoError(t, err) || len(state) == 0 {
					t.Errorf("%s has no state", suffix)
					return
				}
				list, err := s.DIDOperationList(ctx, suffix)
				if !assertNoError(t, err) {
					return
				}
				if !reflect.DeepEqual(list, before.lists[suffix]) {
					t.Errorf("%s lists %v, not %v", suffix, list, before.lists[suffix])
					return
				}
			}
		}()
	}
	relayoutToEnd(t, r)
	stop.Store(true)
	wg.Wait()
	require.NotEmpty(t, created)
	require.Positive(t, duringCopy.Load(), "writes landed during the copy")
	t.Logf("%d writes, %d of them during the copy", len(created), duringCopy.Load())

	requireCurrentLayout(t, s)
	after := viewOf(t, s, suffixes)
	require.Equal(t, before.lists, after.lists)
	for _, suffix := range suffixes {
		want := before.states[suffix]
		if v, ok := last[suffix]; ok {
			want = v
		}
		require.Equal(t, want, after.states[suffix], suffix)
	}
	states, err := s.DIDStateGetMany(ctx, created)
	require.NoError(t, err)
	require.Len(t, states, len(created))
}

// TestRelayoutMirrorsWritesDuringTheCopy writes to did_states between the steps of the copy, on
// both sides of its cursor: an insert, a replacement, a delete. The new table ends with each.
func TestRelayoutMirrorsWritesDuringTheCopy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, suffixes := oldLayout(t, 400, 40)
	s := openDir(t, dir)
	r := newTestRelayout(t, s)
	for {
		phase, _, err := r.runOnce(ctx)
		require.NoError(t, err)
		var exists bool
		require.NoError(t, s.writer.QueryRowContext(ctx, qRelayoutTableExists, "did_states_relayout").Scan(&exists))
		if phase == relayoutCopy && exists {
			break
		}
	}
	_, _, err := r.runOnce(ctx) // one page copied
	require.NoError(t, err)
	sorted := slices.Sorted(slices.Values(suffixes))
	copied, ahead, gone := sorted[3], sorted[len(sorted)-3], sorted[len(sorted)-1]
	require.NoError(t, s.DIDStatePutMany(ctx, []store.DIDState{
		{Suffix: copied, State: []byte("newer, copied"), Positions: []store.DIDPosition{{AnchorSeq: 7}}},
		{Suffix: ahead, State: []byte("newer, not yet copied"), Positions: []store.DIDPosition{{AnchorSeq: 8}}},
		{Suffix: "EiAinserted", State: []byte("inserted"), Positions: []store.DIDPosition{{AnchorSeq: 9}}},
	}))
	_, err = s.writer.ExecContext(ctx, `DELETE FROM did_states WHERE suffix = ?`, gone)
	require.NoError(t, err)
	relayoutToEnd(t, r)
	requireCurrentLayout(t, s)
	states, err := s.DIDStateGetMany(ctx, []string{copied, ahead, gone, "EiAinserted"})
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{copied: []byte("newer, copied"), ahead: []byte("newer, not yet copied"), "EiAinserted": []byte("inserted")}, states)
	var n int
	require.NoError(t, s.writer.QueryRowContext(ctx, `SELECT COUNT(*) FROM did_states`).Scan(&n))
	require.Equal(t, len(suffixes), n)
}

// TestRelayoutWaitsForTheStateFill: while the states of DIDs indexed before did_states are
// still to be computed, the suffix index is all that finds those DIDs: it stays.
func TestRelayoutWaitsForTheStateFill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, _ := oldLayout(t, 50, 10)
	s := openDir(t, dir)
	require.NoError(t, s.SettingPut(ctx, store.DIDStateFillSetting, []byte("after:x")))
	r := newTestRelayout(t, s)
	var err error
	for range 10 {
		if _, _, err = r.runOnce(ctx); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, errRelayoutWaits)
	require.True(t, s.layout.bySuffix.Load())
	require.NoError(t, s.SettingPut(ctx, store.DIDStateFillSetting, []byte("done")))
	relayoutToEnd(t, r)
	requireCurrentLayout(t, s)
}

func assertNoError(t testing.TB, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

// copyDir copies a closed store's data directory.
func copyDir(t testing.TB, dir string) string {
	t.Helper()
	to := t.TempDir()
	src, err := os.Open(filepath.Join(dir, FileName))
	require.NoError(t, err)
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(to, FileName), os.O_CREATE|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	return to
}

// TestRelayoutSwitchKeepsAStateWrittenWithoutPositions writes a state that names no positions
// while the switch waits for a read through the suffix index, after its look for states without
// positions: the DID's operations are still found once the index is gone.
func TestRelayoutSwitchKeepsAStateWrittenWithoutPositions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir, suffixes := oldLayout(t, 100, 10)
	s := openDir(t, dir)
	r := newTestRelayout(t, s)
	want, err := s.DIDOperationList(ctx, suffixes[0])
	require.NoError(t, err)
	require.NotEmpty(t, want)
	for {
		_, end, _, err := r.fillPositions(ctx)
		require.NoError(t, err)
		if end {
			break
		}
	}
	// A read through the suffix index holds the switch between its look and the drop.
	require.True(t, s.layout.enterSuffixRead())
	switched := make(chan error, 1)
	go func() {
		_, err := r.switchReads(ctx)
		switched <- err
	}()
	for s.layout.bySuffix.Load() {
		time.Sleep(time.Millisecond)
	}
	// An operation indexed in the same window keeps its suffix: the switch goes back to the
	// suffix index, whose pass must find the row by it.
	later := store.DIDOperation{Suffix: suffixes[0], AnchorSeq: 300_000, Index: 0, Type: "update"}
	require.NoError(t, s.DIDOperationInsertMany(ctx, []store.DIDOperation{later}))
	require.NoError(t, s.DIDStatePutMany(ctx, []store.DIDState{{Suffix: suffixes[0], State: []byte("no positions")}}))
	s.layout.leaveSuffixRead()
	require.NoError(t, <-switched)
	require.False(t, s.layout.suffixIndexGone.Load(), "the switch went back")
	relayoutToEnd(t, r)
	requireCurrentLayout(t, s)
	got, err := s.DIDOperationList(ctx, suffixes[0])
	require.NoError(t, err)
	require.Equal(t, append(want, later), got)
}

// rowSuffixes returns the suffix column of the did_operations rows at positions
// "<anchor_seq>/<op_index>".
func rowSuffixes(t testing.TB, s *Store, positions ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range positions {
		var suffix string
		require.NoError(t, s.writer.QueryRow(`SELECT suffix FROM did_operations WHERE anchor_seq || '/' || op_index = ?`, p).Scan(&suffix), p)
		out[p] = suffix
	}
	return out
}

// statesOf returns every row of did_states: its state and its positions' column in hex, "NULL"
// for NULL.
func statesOf(t testing.TB, db *sql.DB) map[string][2]string {
	t.Helper()
	out := map[string][2]string{}
	rows, err := db.Query(`SELECT suffix, state, COALESCE(hex(positions), 'NULL') FROM did_states`)
	require.NoError(t, eachRow(rows, err, func(rows *sql.Rows) error {
		var suffix, state, positions string
		if err := rows.Scan(&suffix, &state, &positions); err != nil {
			return err
		}
		out[suffix] = [2]string{state, positions}
		return nil
	}))
	return out
}

// TestRelayoutKeepsRandomWritesAcrossStops interleaves the pass's steps, in every phase, with
// replacements, inserts, deletes and changes of suffix of states and with stops of the store, at
// random: did_states ends with each write, as it would without the pass.
func TestRelayoutKeepsRandomWritesAcrossStops(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, suffixes := oldLayout(t, 400, 20)
	// What the pass alone leaves: the states as they were, with their positions.
	s := openDir(t, copyDir(t, base))
	relayoutToEnd(t, newTestRelayout(t, s))
	filled := statesOf(t, s.writer)
	s.Close()
	hexOf := func(pos []store.DIDPosition) string { return fmt.Sprintf("%X", store.AppendPositions(nil, pos)) }

	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, seed))
			want := maps.Clone(filled)
			live := slices.Clone(suffixes)
			dir := copyDir(t, base)
			s := openDir(t, dir)
			// Small pages: many steps in each phase, with writes between them.
			small := func(r *Relayout) *Relayout {
				r.positionsPage, r.copyPage, r.deletePage = 20, 25, 30
				return r
			}
			r := small(newTestRelayout(t, s))
			phases := map[relayoutPhase]int{}
			for step := 0; ; step++ {
				if step == 20_000 {
					t.Fatal("the relayout does not end")
				}
				pick := func() int { return rng.IntN(len(live)) }
				switch k := rng.IntN(10); {
				case k < 4:
					phase, _, err := r.runOnce(ctx)
					require.NoError(t, err)
					phases[phase]++
					if phase == relayoutDone {
						for _, p := range []relayoutPhase{relayoutPositions, relayoutCopy, relayoutDelete} {
							require.Greater(t, phases[p], 5, p)
						}
						got := statesOf(t, s.writer)
						for suffix := range maps.Keys(want) {
							require.Equal(t, want[suffix], got[suffix], suffix)
						}
						require.Equal(t, len(want), len(got), "no state deleted comes back")
						requireCurrentLayout(t, s)
						return
					}
				case k < 6:
					suffix, pos := live[pick()], []store.DIDPosition{{AnchorSeq: int64(step + 1), Index: 1}}
					state := fmt.Sprint("replaced at ", step)
					require.NoError(t, s.DIDStatePutMany(ctx, []store.DIDState{{Suffix: suffix, State: []byte(state), Positions: pos}}))
					want[suffix] = [2]string{state, hexOf(pos)}
				case k < 7:
					suffix, pos := fmt.Sprintf("EiA%c%05d", 'A'+rng.IntN(60), step), []store.DIDPosition{{AnchorSeq: int64(step + 1)}}
					inserted, err := s.DIDStateInsertMany(ctx, []store.DIDState{{Suffix: suffix, State: []byte("new"), Positions: pos}})
					require.NoError(t, err)
					require.True(t, inserted[suffix])
					live = append(live, suffix)
					want[suffix] = [2]string{"new", hexOf(pos)}
				case k < 8:
					i := pick()
					_, err := s.writer.ExecContext(ctx, `DELETE FROM did_states WHERE suffix = ?`, live[i])
					require.NoError(t, err)
					delete(want, live[i])
					live = slices.Delete(live, i, i+1)
				case k < 9:
					// With the positions the pass would give it: the new suffix has no rows.
					i, suffix := pick(), fmt.Sprintf("EiA%c%05dr", 'A'+rng.IntN(60), step)
					pos, err := hex.DecodeString(want[live[i]][1])
					require.NoError(t, err)
					_, err = s.writer.ExecContext(ctx, `UPDATE did_states SET suffix = ?, positions = ? WHERE suffix = ?`, suffix, pos, live[i])
					require.NoError(t, err)
					want[suffix] = want[live[i]]
					delete(want, live[i])
					live[i] = suffix
				default:
					s.Close()
					s = openDir(t, dir)
					r = small(newTestRelayout(t, s))
				}
			}
		})
	}
}
