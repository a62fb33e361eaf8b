package cosigner

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	fnote "github.com/transparency-dev/formats/note"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/note"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store"
	"github.com/anchord/anchord/internal/store/storetest"
)

// testLog is a log written by the test with the merkle library's reference tree, signing its
// checkpoints with a key of its own.
type testLog struct {
	origin string
	signer note.Signer
	vkey   string
	tree   *testonly.Tree
}

func newTestLog(t testing.TB, origin string) *testLog {
	t.Helper()
	skey, vkey, err := note.GenerateKey(nil, origin)
	require.NoError(t, err)
	s, err := note.NewSigner(skey)
	require.NoError(t, err)
	return &testLog{origin: origin, signer: s, vkey: vkey, tree: testonly.New(rfc6962.DefaultHasher)}
}

func (l *testLog) grow(n int) {
	for range n {
		l.tree.AppendData(fmt.Appendf(nil, "entry %d of %s", l.tree.Size(), l.origin))
	}
}

func (l *testLog) checkpointWith(size uint64, hash []byte, signers ...note.Signer) []byte {
	text := fmt.Sprintf("%s\n%d\n%s\n", l.origin, size, base64.StdEncoding.EncodeToString(hash))
	signed, err := note.Sign(&note.Note{Text: text}, signers...)
	if err != nil {
		panic(err)
	}
	return signed
}

func (l *testLog) checkpoint() []byte {
	return l.checkpointWith(l.tree.Size(), l.tree.Hash(), l.signer)
}

// request is an add-checkpoint body from old to the tree's current size.
func (l *testLog) request(t testing.TB, old uint64, cp []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	if old > 0 && old < l.tree.Size() {
		prf, err := l.tree.ConsistencyProof(old, l.tree.Size())
		require.NoError(t, err)
		for _, h := range prf {
			b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
		}
	}
	b.WriteString("\n")
	b.Write(cp)
	return b.Bytes()
}

type witnessBundle struct {
	w    *Witness
	key  *Key
	logs *KnownLogs
	srv  *httptest.Server
	log  *testLog
}

func setupWitness(t *testing.T, st store.Store) *witnessBundle {
	t.Helper()
	l := newTestLog(t, "log.example/"+strconv.Itoa(int(testNameHash(t))))
	logs, err := NewKnownLogs(KnownLogsConfig{Static: []string{l.vkey}})
	require.NoError(t, err)
	key := testKey(t, true)
	w, err := New(Config{Key: key, Logs: logs, Checkpoints: st, Logger: anchordtest.Logger(t)})
	require.NoError(t, err)
	mux := http.NewServeMux()
	w.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &witnessBundle{w: w, key: key, logs: logs, srv: srv, log: l}
}

func testNameHash(t *testing.T) uint32 {
	h := sha256.Sum256([]byte(t.Name()))
	return uint32(h[0])<<8 | uint32(h[1])
}

func (b *witnessBundle) post(t *testing.T, body []byte) (int, string, string) {
	t.Helper()
	resp, err := http.Post(b.srv.URL+Prefix+"/add-checkpoint", "text/plain", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(out)
}

// verifyCosigned checks with the standard note verifier that sigs cosign cp.
func (b *witnessBundle) verifyCosigned(t *testing.T, cp []byte, sigs string) {
	t.Helper()
	v, err := fnote.NewVerifierForCosignatureV1(b.key.VerifierKeys()[0])
	require.NoError(t, err)
	n, err := note.Open(append(bytes.Clone(cp), sigs...), note.VerifierList(v))
	require.NoError(t, err)
	require.Len(t, n.Sigs, 1)
}

func TestAddCheckpointAnswersAsTheSpecSays(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, st store.Store) {
		b := setupWitness(t, st)
		l := b.log

		// Unknown origin: 404.
		other := newTestLog(t, "unknown.example/log")
		other.grow(3)
		code, _, _ := b.post(t, other.request(t, 0, other.checkpoint()))
		require.Equal(t, http.StatusNotFound, code)

		// No signature of the log's key (a forgery under its name): 403.
		l.grow(5)
		forger, err := note.NewSigner(strings.Replace(mustSignerKey(t, l.origin), "", "", 1))
		require.NoError(t, err)
		code, _, _ = b.post(t, l.request(t, 0, l.checkpointWith(l.tree.Size(), l.tree.Hash(), forger)))
		require.Equal(t, http.StatusForbidden, code)
		// A signature line of the log's key that does not verify: 403.
		good := l.checkpoint()
		bad := corruptSignature(t, good)
		code, _, _ = b.post(t, l.request(t, 0, bad))
		require.Equal(t, http.StatusForbidden, code)

		// Size 0 with a root that is not the empty tree's: 422.
		code, _, _ = b.post(t, l.request(t, 0, l.checkpointWith(0, l.tree.Hash(), l.signer)))
		require.Equal(t, http.StatusUnprocessableEntity, code)

		// First checkpoint: old 0, no proof.
		code, ctype, sigs := b.post(t, l.request(t, 0, good))
		require.Equal(t, http.StatusOK, code, sigs)
		require.Contains(t, ctype, "text/plain")
		require.Equal(t, 2, strings.Count(sigs, "— "+b.key.Name()+" "), "a cosignature/v1 and a subtree/v1 line")
		b.verifyCosigned(t, good, sigs)

		// Old size larger than the checkpoint: 400.
		code, _, _ = b.post(t, []byte(strings.Replace(string(l.request(t, 0, good)), "old 0", "old 6", 1)))
		require.Equal(t, http.StatusBadRequest, code)

		// The same checkpoint again from its own size: cosigned again.
		code, _, sigs = b.post(t, l.request(t, 5, good))
		require.Equal(t, http.StatusOK, code, sigs)

		// Grow and advance with a proof.
		l.grow(7)
		next := l.checkpoint()
		code, _, sigs = b.post(t, l.request(t, 5, next))
		require.Equal(t, http.StatusOK, code, sigs)
		b.verifyCosigned(t, next, sigs)

		// Replaying the old checkpoint, or a stale old size: 409 with the size.
		for _, body := range [][]byte{l.request(t, 5, good), l.request(t, 0, next)} {
			code, ctype, out := b.post(t, body)
			require.Equal(t, http.StatusConflict, code)
			require.Equal(t, ContentTypeSize, ctype)
			require.Equal(t, "12\n", out)
		}

		// A bad proof: 422.
		l.grow(4)
		req := l.request(t, 12, l.checkpoint())
		i := bytes.Index(req, []byte("\n")) + 1
		req[i] ^= 0x01 // still base64, another hash
		if req[i] == '\n' || req[i] == '+' || req[i] == '/' {
			req[i] = 'A'
		}
		code, _, _ = b.post(t, req)
		require.Equal(t, http.StatusUnprocessableEntity, code)
		// The same size with another root hash: 422.
		code, _, _ = b.post(t, l.request(t, 12, l.checkpointWith(12, l.tree.Hash(), l.signer)))
		require.Equal(t, http.StatusUnprocessableEntity, code)
		// A proof from size 0: 422... unless old is 0 and the witness is at 0, which it is not:
		// stale old sizes are 409 first, as the spec orders the checks.
		code, _, _ = b.post(t, l.request(t, 0, l.checkpoint()))
		require.Equal(t, http.StatusConflict, code)

		// Malformed bodies: 400; too large: 413.
		code, _, _ = b.post(t, []byte("old 1\n"))
		require.Equal(t, http.StatusBadRequest, code)
		code, _, _ = b.post(t, bytes.Repeat([]byte("x"), RequestMaxSize+1))
		require.Equal(t, http.StatusRequestEntityTooLarge, code)

		// The monitoring endpoint serves the latest cosigned checkpoint with the log's
		// signature and ours.
		h := sha256.Sum256([]byte(l.origin))
		resp, err := http.Get(b.srv.URL + Prefix + "/" + hex.EncodeToString(h[:]) + "/checkpoint")
		require.NoError(t, err)
		served, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		lv, err := note.NewVerifier(l.vkey)
		require.NoError(t, err)
		wv, err := fnote.NewVerifierForCosignatureV1(b.key.VerifierKeys()[0])
		require.NoError(t, err)
		n, err := note.Open(served, note.VerifierList(lv, wv))
		require.NoError(t, err)
		require.Len(t, n.Sigs, 2)
		require.True(t, strings.HasPrefix(n.Text, l.origin+"\n12\n"))

		h = sha256.Sum256([]byte(other.origin))
		resp, err = http.Get(b.srv.URL + Prefix + "/" + hex.EncodeToString(h[:]) + "/checkpoint")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusNotFound, resp.StatusCode)
		resp, err = http.Get(b.srv.URL + Prefix + "/NOTHEX/checkpoint")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	})
}

// corruptSignature flips a bit of the signature (not of the key ID) in the last line of cp.
func corruptSignature(t *testing.T, cp []byte) []byte {
	t.Helper()
	i := bytes.LastIndex(cp[:len(cp)-1], []byte(" ")) + 1
	sig, err := base64.StdEncoding.DecodeString(string(cp[i : len(cp)-1]))
	require.NoError(t, err)
	sig[10] ^= 1
	return append(append(bytes.Clone(cp[:i]), base64.StdEncoding.EncodeToString(sig)...), '\n')
}

func mustSignerKey(t *testing.T, name string) string {
	t.Helper()
	skey, _, err := note.GenerateKey(nil, name)
	require.NoError(t, err)
	return skey
}

func TestKnownLogsAddedAutomaticallyAreRefreshed(t *testing.T) {
	t.Parallel()
	pub, _, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	var listed []Log
	k, err := NewKnownLogs(KnownLogsConfig{List: func(context.Context) ([]Log, error) { return listed, nil }})
	require.NoError(t, err)
	_, ok := k.Verifiers("b.example/log")
	require.False(t, ok)
	listed = []Log{{Origin: "b.example/log", Key: pub}}
	require.NoError(t, k.runOnce(context.Background()))
	vs, ok := k.Verifiers("b.example/log")
	require.True(t, ok)
	vkey, err := note.NewEd25519VerifierKey("b.example/log", pub)
	require.NoError(t, err)
	v, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	got, err := vs.Verifier("b.example/log", v.KeyHash())
	require.NoError(t, err)
	require.Equal(t, v.KeyHash(), got.KeyHash())
	require.Equal(t, 1, k.Len())

	_, err = NewKnownLogs(KnownLogsConfig{Static: []string{"not a key"}})
	require.Error(t, err)
	keys, err := ParseKnownLogs([]byte("# comment\n\n  a+b+c  \nd\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"a+b+c", "d"}, keys)
}
