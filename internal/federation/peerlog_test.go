package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/peer"
	"github.com/anchord/anchord/internal/witnesslog"
)

func withWitnessLog(c *Config) { c.WitnessLog = true }

func TestWebFingerAdvertisesTheLogAndPeerLogReadsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := newDomain(t), newDomain(t, withWitnessLog)

	for _, res := range []string{b.srv.URL, b.actor()} {
		resp, err := http.Get(b.srv.URL + "/.well-known/webfinger?resource=" + res)
		require.NoError(t, err)
		var doc jrd
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&doc))
		require.NoError(t, resp.Body.Close())
		require.Equal(t, LedgerTypeTLogTiles, doc.Properties[LedgerTypeProperty], "not Orb's vct-v1: we serve tlog-tiles, not the VCT API")
		require.Contains(t, doc.Links, jrdLink{Rel: LogRelation, Href: b.srv.URL + LogPath})
	}

	l, ok, err := a.svc.PeerLog(ctx, b.actor())
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, b.srv.URL+"/log", l.URL)
	origin, err := witnesslog.OriginFor(b.srv.URL)
	require.NoError(t, err)
	require.Equal(t, origin, l.Origin, "the origin read from WebFinger is the one the log signs with")

	_, ok, err = b.svc.PeerLog(ctx, a.actor())
	require.NoError(t, err)
	require.False(t, ok, "a domain without a log")
}

// fakeWebFinger is another domain whose WebFinger answers body.
func fakeWebFinger(t *testing.T, body func(host string) string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/.well-known/webfinger" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", mediaTypeJRD)
		_, _ = w.Write([]byte(body("http://" + r.Host)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + ServicePath
}

func TestPeerLogRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newDomain(t)
	advertise := func(ledgerType, href string) func(string) string {
		return func(base string) string {
			return fmt.Sprintf(`{"properties":{%q:%q},"links":[{"rel":"vct","href":%q}]}`, LedgerTypeProperty, ledgerType, strings.ReplaceAll(href, "BASE", base))
		}
	}

	orb := fakeWebFinger(t, advertise("vct-v1", "BASE/maple2020"))
	_, ok, err := a.svc.PeerLog(ctx, orb)
	require.NoError(t, err)
	require.False(t, ok, "an Orb's VCT log is not one we can read")

	for name, body := range map[string]func(string) string{
		"log on another host": advertise(LedgerTypeTLogTiles, "https://logs.example/log"),
		"log on another scheme": func(base string) string {
			return advertise(LedgerTypeTLogTiles, strings.Replace(base, "http:", "https:", 1)+"/log")(base)
		},
		"no log link":       advertise(LedgerTypeTLogTiles, ""),
		"log URL has query": advertise(LedgerTypeTLogTiles, "BASE/log?x=1"),
		"not JSON":          func(string) string { return "<XRD/>" },
	} {
		_, ok, err := a.svc.PeerLog(ctx, fakeWebFinger(t, body))
		require.Error(t, err, name)
		require.False(t, ok, name)
	}
	_, _, err = a.svc.PeerLog(ctx, "http://127.0.0.1:1"+ServicePath)
	require.Error(t, err, "a domain that does not answer")
	_, _, err = a.svc.PeerLog(ctx, "not an IRI")
	require.Error(t, err)
	_, _, err = a.svc.PeerLog(ctx, fakeWebFinger(t, func(string) string { return strings.Repeat(" ", webFingerMaxBytes+1) }))
	require.ErrorIs(t, err, peer.ErrTooLarge, "the answer is bounded")
}

func TestPeerLogRemembersAnswersNotFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := newDomain(t)
	var asked atomic.Int32
	fail := atomic.Bool{}
	actor := fakeWebFinger(t, func(base string) string {
		asked.Add(1)
		if fail.Load() {
			return "not JSON"
		}
		return fmt.Sprintf(`{"properties":{%q:%q},"links":[{"rel":"vct","href":%q}]}`, LedgerTypeProperty, LedgerTypeTLogTiles, base+LogPath)
	})
	for range 3 {
		_, ok, err := a.svc.PeerLog(ctx, actor)
		require.NoError(t, err)
		require.True(t, ok)
	}
	require.EqualValues(t, 1, asked.Load(), "the answer is remembered")

	fail.Store(true)
	other := strings.Replace(actor, ServicePath, "/other", 1)
	for range 2 {
		_, _, err := a.svc.PeerLog(ctx, other)
		require.Error(t, err)
	}
	require.EqualValues(t, 3, asked.Load(), "a failure is asked again")
}
