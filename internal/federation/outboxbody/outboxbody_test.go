package outboxbody_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/activity"
	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/federation/outboxbody"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

func TestMain(m *testing.M) { anchordtest.WrapTestMain(m) }

const actor = "https://a.example/services/anchord"

// anchorLinkset lays out an anchor linkset as the publisher does, with n DIDs; its credential
// holds characters that JSON writers escape differently (<, &, a non-ASCII letter, U+2028).
func anchorLinkset(t *testing.T, n int, mediaType string) *activity.Linkset {
	t.Helper()
	content := activity.AnchorContent{
		CoreIndex:  activity.NewHashlink([]byte("core index"), "https://a.example/cas/QmCore"),
		Author:     actor,
		Operations: make([]activity.SuffixAnchor, n),
	}
	for i := range content.Operations {
		content.Operations[i].Suffix = fmt.Sprintf("EiD%040d", i)
		if i%2 == 1 {
			content.Operations[i].Previous = activity.NewHashlink([]byte(fmt.Sprint(i)), "https://a.example/cas/QmPrev")
		}
	}
	link, err := activity.BuildAnchorLink(content, mediaType, func(hashlink, coreIndex string) ([]byte, error) {
		return json.Marshal(map[string]any{
			"@context": []string{"https://www.w3.org/2018/credentials/v1"}, "id": "https://a.example/vc/1",
			"credentialSubject": map[string]string{"href": hashlink, "anchor": coreIndex, "note": "<a & b> é \u2028"},
			"issuer":            "did:web:a.example",
		})
	})
	require.NoError(t, err)
	return &activity.Linkset{Linkset: []activity.Link{*link}}
}

// createOf is an anchor's Create as the publisher builds it, completed as the outbox completes
// it (with the id actor/activities/<id>), its JSON (the body the outbox stored before it
// compacted any) and the linkset's CAS bytes.
func createOf(t *testing.T, ls *activity.Linkset, id string) (*activity.Activity, []byte, []byte) {
	t.Helper()
	lsJSON, err := ls.Canonical()
	require.NoError(t, err)
	published := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	a := &activity.Activity{
		Context: activity.Strings{activity.ContextActivityStreams},
		ID:      actor + "/activities/" + id, Type: activity.TypeCreate, Actor: actor,
		To:        activity.Strings{actor + "/followers", activity.PublicIRI},
		Object:    &activity.Object{AnchorEvent: activity.NewAnchorEvent(activity.NewHashlink(lsJSON, "https://a.example/cas/x"), ls)},
		Published: &published,
	}
	require.NoError(t, a.Validate())
	body, err := json.Marshal(a)
	require.NoError(t, err)
	return a, body, lsJSON
}

// post stores a's linkset in CAS (unless lsJSON is nil) and a in the outbox, in one transaction,
// as the publisher and the outbox do, and returns the row as stored.
func post(t *testing.T, st store.Store, a *activity.Activity, body, lsJSON []byte) store.OutboxActivity {
	t.Helper()
	return storeIn(t, st, a, lsJSON, func(ctx context.Context, tx store.Executor) ([]byte, error) {
		return outboxbody.Compact(ctx, tx, a, body)
	})
}

// postPlanned stores a as the relay publisher does through the outbox: its stored form is
// planned against given before the transaction, which puts put in CAS (unless nil) and stores
// a. It returns the row as stored.
func postPlanned(t *testing.T, st store.Store, a *activity.Activity, body, given, put []byte) store.OutboxActivity {
	t.Helper()
	c := outboxbody.Plan(a, body, given)
	return storeIn(t, st, a, put, func(ctx context.Context, tx store.Executor) ([]byte, error) { return c.Stored(ctx, tx) })
}

// storeIn puts put in CAS (unless nil) and a in the outbox in the form stored gives, in one
// transaction, and returns the row as stored.
func storeIn(t *testing.T, st store.Store, a *activity.Activity, put []byte, stored func(context.Context, store.Executor) ([]byte, error)) store.OutboxActivity {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
		if put != nil {
			if err := tx.CASPut(ctx, cas.ComputeCID(put, cas.CIDv1), put); err != nil {
				return err
			}
		}
		body, err := stored(ctx, tx)
		if err != nil {
			return err
		}
		_, err = tx.ActivityOutboxInsert(ctx, store.ActivityOutboxInsertParams{ActivityID: a.ID, Type: string(a.Type), Body: body, Public: true})
		return err
	}))
	row, err := st.ActivityOutboxGet(ctx, a.ID)
	require.NoError(t, err)
	return row
}

// ways are the two ways of storing an activity: worked out in the transaction from what CAS
// holds (Compact), or before it from the bytes the transaction puts in CAS (Plan, then
// Stored). lsJSON is put in CAS in the transaction unless nil.
var ways = map[string]func(t *testing.T, st store.Store, a *activity.Activity, body, lsJSON []byte) store.OutboxActivity{
	"Compact": post,
	"Plan": func(t *testing.T, st store.Store, a *activity.Activity, body, lsJSON []byte) store.OutboxActivity {
		t.Helper()
		return postPlanned(t, st, a, body, lsJSON, lsJSON)
	},
}

// TestCompactRoundTrip: an anchor's Create whose linkset is in CAS is stored without it, a few
// hundred bytes, and expands to the very body posted; its size is known unexpanded.
func TestCompactRoundTrip(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		for way, post := range ways {
			for _, mt := range []string{activity.MediaTypeGzipBase64, activity.MediaTypeJSON} {
				t.Run(way+"/"+mt, func(t *testing.T) {
					ls := anchorLinkset(t, 200, mt)
					a, body, lsJSON := createOf(t, ls, way+"-"+mt)
					embedded, err := json.Marshal(ls)
					require.NoError(t, err)
					require.NotEqual(t, lsJSON, embedded, "the embedded linkset is not the CAS bytes: it is re-encoded")

					row := post(t, st, a, body, lsJSON)
					require.True(t, outboxbody.IsCompact(row.Body))
					require.Less(t, len(row.Body), len(body)-len(embedded)+200, "stored without the linkset")
					require.NotContains(t, string(row.Body), `"linkset"`)
					require.Equal(t, len(body), outboxbody.Size(row.Body))
					got, err := outboxbody.Expand(context.Background(), st, row.Body)
					require.NoError(t, err)
					require.Equal(t, string(body), string(got))
				})
			}
		}
	})
}

// TestPlanStoresWhatCompactStores: planned before the transaction, an activity is stored in
// the very form Compact gives in it, whatever that form is.
func TestPlanStoresWhatCompactStores(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		ls := anchorLinkset(t, 50, activity.MediaTypeGzipBase64)
		a, body, lsJSON := createOf(t, ls, "same")
		bare, _, _ := createOf(t, ls, "bare")
		bare.Object.AnchorEvent.Object = nil
		bareBody, err := json.Marshal(bare)
		require.NoError(t, err)
		require.NoError(t, st.InTx(ctx, func(ctx context.Context, tx store.Executor) error {
			for _, c := range []struct {
				a    *activity.Activity
				body []byte
			}{{a, body}, {bare, bareBody}} {
				want, err := outboxbody.Compact(ctx, tx, c.a, c.body)
				require.NoError(t, err)
				got, err := outboxbody.Plan(c.a, c.body, lsJSON).Stored(ctx, tx)
				require.NoError(t, err)
				require.Equal(t, string(want), string(got), "CAS lacks the linkset: %s", c.a.ID)
			}
			if err := tx.CASPut(ctx, cas.ComputeCID(lsJSON, cas.CIDv1), lsJSON); err != nil {
				return err
			}
			want, err := outboxbody.Compact(ctx, tx, a, body)
			require.NoError(t, err)
			require.True(t, outboxbody.IsCompact(want))
			got, err := outboxbody.Plan(a, body, lsJSON).Stored(ctx, tx)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got), "CAS holds the linkset")
			return nil
		}))
	})
}

// TestPlanNeedsCASAtTheTransaction: a plan made against the right bytes stores the activity
// whole when CAS lacks them in the transaction that stores it, even though they are in CAS
// later: what CAS lacks then is never assumed to come.
func TestPlanNeedsCASAtTheTransaction(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		a, body, lsJSON := createOf(t, anchorLinkset(t, 5, activity.MediaTypeGzipBase64), "late")
		row := postPlanned(t, st, a, body, lsJSON, nil)
		require.Equal(t, body, row.Body)
		require.NoError(t, st.CASPut(ctx, cas.ComputeCID(lsJSON, cas.CIDv1), lsJSON))
		row, err := st.ActivityOutboxGet(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, body, row.Body, "the row stays whole")
	})
}

// TestPlanTrustsOnlyTheBytesItChecked: bytes that do not hash to the AnchorEvent's url, or do
// not re-encode to the embedded linkset, plan no compaction, whatever CAS holds; the plan of an
// activity stored whole never looks at CAS, and a failing lookup is an error.
func TestPlanTrustsOnlyTheBytesItChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, body, lsJSON := createOf(t, anchorLinkset(t, 3, activity.MediaTypeGzipBase64), "checked")
	other, err := anchorLinkset(t, 4, activity.MediaTypeGzipBase64).Canonical()
	require.NoError(t, err)
	for name, given := range map[string][]byte{"Nil": nil, "OtherLinkset": other, "Truncated": lsJSON[:len(lsJSON)-1]} {
		stored, err := outboxbody.Plan(a, body, given).Stored(ctx, panickingChecker{})
		require.NoError(t, err, name)
		require.Equal(t, body, stored, name)
	}

	c := outboxbody.Plan(a, body, lsJSON)
	stored, err := c.Stored(ctx, existsChecker{ok: true})
	require.NoError(t, err)
	require.True(t, outboxbody.IsCompact(stored))
	got, err := outboxbody.Expand(ctx, fixedCAS(lsJSON), stored)
	require.NoError(t, err)
	require.Equal(t, body, got)
	stored, err = c.Stored(ctx, existsChecker{ok: false})
	require.NoError(t, err)
	require.Equal(t, body, stored)
	_, err = c.Stored(ctx, existsChecker{err: context.DeadlineExceeded})
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// panickingChecker is a CAS that must not be asked.
type panickingChecker struct{}

func (panickingChecker) CASExistsBySHA256(context.Context, []byte) (bool, error) {
	panic("a plan that compacts nothing looked at CAS")
}

// existsChecker answers every lookup alike.
type existsChecker struct {
	ok  bool
	err error
}

func (e existsChecker) CASExistsBySHA256(context.Context, []byte) (bool, error) { return e.ok, e.err }

// TestCompactKeepsTheFullBody: what compaction does not apply to, or cannot be sure of, is
// stored as posted and read as it is.
func TestCompactKeepsTheFullBody(t *testing.T) {
	t.Parallel()
	st := storetest.Open(t, storetest.SQLiteOpener(t))
	ctx := context.Background()
	// full stores a both ways, under an id of its own each, with lsJSON put in CAS (unless nil).
	full := func(t *testing.T, a *activity.Activity, lsJSON []byte) {
		t.Helper()
		id := a.ID
		for way, post := range ways {
			a.ID = id + "-" + way
			body, err := json.Marshal(a)
			require.NoError(t, err)
			row := post(t, st, a, body, lsJSON)
			require.False(t, outboxbody.IsCompact(row.Body), way)
			require.Equal(t, body, row.Body, way)
			require.Equal(t, len(body), outboxbody.Size(row.Body), way)
			got, err := outboxbody.Expand(ctx, st, row.Body)
			require.NoError(t, err)
			require.Equal(t, body, got, way)
		}
	}

	t.Run("CASLacksTheLinkset", func(t *testing.T) {
		a, _, _ := createOf(t, anchorLinkset(t, 3, activity.MediaTypeGzipBase64), "no-cas")
		full(t, a, nil)
	})
	t.Run("CASHoldsOtherBytes", func(t *testing.T) {
		// The url names content CAS has, but it is not this linkset.
		ls := anchorLinkset(t, 3, activity.MediaTypeGzipBase64)
		a, _, lsJSON := createOf(t, anchorLinkset(t, 4, activity.MediaTypeGzipBase64), "other")
		a.Object.AnchorEvent.Object = ls
		full(t, a, lsJSON)
	})
	t.Run("ReencodingDiffers", func(t *testing.T) {
		// Invalid UTF-8 is written as \ufffd when embedded, and comes back from the JCS copy as
		// the character itself: the bytes would differ, so nothing is cut.
		ls := anchorLinkset(t, 3, activity.MediaTypeGzipBase64)
		ls.Linkset[0].Via = activity.Refs{{HRef: "https://a.example/\xff"}}
		a, _, lsJSON := createOf(t, ls, "utf8")
		full(t, a, lsJSON)
	})
	t.Run("NoAnchorEvent", func(t *testing.T) {
		// An Offer embeds a linkset as its object, not in an AnchorEvent.
		ls := anchorLinkset(t, 3, activity.MediaTypeGzipBase64)
		lsJSON, err := ls.Canonical()
		require.NoError(t, err)
		end := time.Now().UTC().Truncate(time.Second)
		a := &activity.Activity{Context: activity.Strings{activity.ContextActivityStreams}, ID: actor + "/activities/offer", Type: activity.TypeOffer,
			Actor: actor, To: activity.Strings{"https://w.example/services/anchord"}, Object: &activity.Object{Linkset: ls}, EndTime: &end}
		full(t, a, lsJSON)
	})
	t.Run("BareReference", func(t *testing.T) {
		a, _, lsJSON := createOf(t, anchorLinkset(t, 3, activity.MediaTypeGzipBase64), "bare")
		a.Object.AnchorEvent.Object = nil
		full(t, a, lsJSON)
	})
}

// TestExpandOldRows: rows stored before compaction existed are read as they are, whatever they
// hold.
func TestExpandOldRows(t *testing.T) {
	t.Parallel()
	_, body, _ := createOf(t, anchorLinkset(t, 3, activity.MediaTypeGzipBase64), "old")
	for _, old := range [][]byte{body, []byte(`{}`), []byte(`{"id":"https://a.example/activities/1"}`), nil} {
		got, err := outboxbody.Expand(context.Background(), failingCAS{}, old)
		require.NoError(t, err)
		require.Equal(t, old, got)
	}
}

type failingCAS struct{ err error }

func (f failingCAS) CASGetBySHA256(context.Context, []byte) ([]byte, error) {
	if f.err == nil {
		panic("an old row read CAS")
	}
	return nil, f.err
}

type fixedCAS []byte

func (f fixedCAS) CASGetBySHA256(context.Context, []byte) ([]byte, error) { return f, nil }

// TestExpandFailsRatherThanServeAnotherBody: a compacted body whose linkset cannot be read, or
// does not give back the bytes cut, is an error, never a truncated or different activity.
func TestExpandFailsRatherThanServeAnotherBody(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ls := anchorLinkset(t, 3, activity.MediaTypeGzipBase64)
	a, body, lsJSON := createOf(t, ls, "1")
	stored, err := outboxbody.Compact(ctx, fixedCAS(lsJSON), a, body)
	require.NoError(t, err)
	require.True(t, outboxbody.IsCompact(stored))
	got, err := outboxbody.Expand(ctx, fixedCAS(lsJSON), stored)
	require.NoError(t, err)
	require.Equal(t, body, got)

	_, err = outboxbody.Expand(ctx, failingCAS{err: store.ErrNotFound}, stored)
	require.ErrorIs(t, err, outboxbody.ErrLinksetMissing)
	require.NotErrorIs(t, err, store.ErrNotFound, "the activity is there; its linkset is not")
	_, err = outboxbody.Expand(ctx, failingCAS{err: context.DeadlineExceeded}, stored)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	// CAS answers with other content.
	other, err := anchorLinkset(t, 4, activity.MediaTypeGzipBase64).Canonical()
	require.NoError(t, err)
	_, err = outboxbody.Expand(ctx, fixedCAS(other), stored)
	require.ErrorContains(t, err, "does not hash")

	// The CAS content is right but no longer re-encodes to the bytes cut (here: the header's
	// digest of them is not theirs).
	line, rest, _ := bytes.Cut(stored, []byte{'\n'})
	f := strings.Fields(string(line))
	f[len(f)-1] = strings.Repeat("0", 64)
	_, err = outboxbody.Expand(ctx, fixedCAS(lsJSON), []byte(strings.Join(f, " ")+"\n"+string(rest)))
	require.ErrorContains(t, err, "no longer re-encodes")

	// Malformed headers.
	for _, bad := range []string{
		"#linkset-in-cas/1 no end of header",
		"#linkset-in-cas/1 1 2 3\n{}",
		"#linkset-in-cas/1 -1 5 " + f[3] + " " + f[4] + "\n{}",
		"#linkset-in-cas/1 99 5 " + f[3] + " " + f[4] + "\n{}",
		"#linkset-in-cas/1 1 5 abc " + f[4] + "\n{}",
	} {
		_, err := outboxbody.Expand(ctx, fixedCAS(lsJSON), []byte(bad))
		require.Error(t, err, bad)
		require.Equal(t, len(bad), outboxbody.Size([]byte(bad)))
	}
}
