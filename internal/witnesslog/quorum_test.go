package witnesslog

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
	fnote "github.com/transparency-dev/formats/note"
	"golang.org/x/mod/sumdb/note"
)

func TestParseWitnessesGivesTheQuorumAndThePrefixes(t *testing.T) {
	t.Parallel()
	_, w1, err := note.GenerateKey(rand.Reader, "w1.example/w")
	require.NoError(t, err)
	v1, err := fnote.VKeyToCosignatureV1(w1)
	require.NoError(t, err)
	_, w2, err := note.GenerateKey(rand.Reader, "w2.example/w")
	require.NoError(t, err)
	v2, err := fnote.VKeyToCosignatureV1(w2)
	require.NoError(t, err)
	w, err := ParseWitnesses([]byte("witness b " + v2 + " https://w2.example/w\nwitness a " + v1 + " https://w1.example/w/\n" +
		"group both 2 a b\nquorum both\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"https://w1.example/w", "https://w2.example/w"}, w.Prefixes)
	require.False(t, w.Quorum.Satisfied([]byte("o\n1\nAAAA\n\n— o AAAA\n")))

	for _, bad := range []string{"", "quorum nobody\n", "witness a not-a-key https://a\nquorum a\n", "group g 3 a\nquorum g\n"} {
		_, err := ParseWitnesses([]byte(bad))
		require.Error(t, err, "%q", bad)
	}
}

func TestWitnessViewReadsWhatAWitnessServes(t *testing.T) {
	t.Parallel()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sig, err := newSigner(testOrigin, key)
	require.NoError(t, err)
	signed, err := note.Sign(&note.Note{Text: testOrigin + "\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"}, sig)
	require.NoError(t, err)
	other, err := note.Sign(&note.Note{Text: "other.example/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n"}, sig)
	require.NoError(t, err)

	var serve []byte
	mux := http.NewServeMux()
	mux.HandleFunc("GET /w/{hash}/checkpoint", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("hash")+"/checkpoint" != WitnessCheckpointPath(testOrigin) || serve == nil {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(serve)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	fetch, err := HTTPFetch(srv.Client(), srv.URL+"/w")
	require.NoError(t, err)
	p, err := NewPeer(testOrigin, pub, fetch)
	require.NoError(t, err)
	ctx := context.Background()

	_, ok, err := p.WitnessView(ctx, fetch)
	require.NoError(t, err)
	require.False(t, ok, "a witness that serves nothing has no view")

	serve = signed
	cp, ok, err := p.WitnessView(ctx, fetch)
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, cp.Quorum, "no quorum asked")
	p.WithQuorum(quorumOf(false))
	cp, _, err = p.WitnessView(ctx, fetch)
	require.NoError(t, err)
	require.False(t, cp.Quorum)

	serve = other
	_, _, err = p.WitnessView(ctx, fetch)
	require.Error(t, err, "a note that is not the log's is no view of it")
}

type quorumOf bool

func (q quorumOf) Satisfied([]byte) bool { return bool(q) }
