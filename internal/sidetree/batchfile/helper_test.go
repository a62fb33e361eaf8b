package batchfile

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/cas"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

var profile = sidetree.DefaultProfile()

// store is an in-memory CAS for tests.
type store struct {
	mu    sync.Mutex
	files map[string][]byte
	fail  map[string]error
}

func newStore() *store { return &store{files: map[string][]byte{}, fail: map[string]error{}} }

func (s *store) put(files *Files) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range files.List() {
		s.files[f.URI] = f.Data
	}
}

func (s *store) fetch(uri string, maxSize int) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fail[uri]; err != nil {
		return nil, err
	}
	data, ok := s.files[uri]
	if !ok {
		return nil, errNotFound
	}
	return data, nil
}

var errNotFound = errors.New("not found")

var cidv0 = cas.AddressFunc(cas.CIDv0)

// cidLimits checks every URI the reader meets with cas.ParseCID.
func cidLimits() Limits {
	l := DefaultLimits()
	l.CheckURIFunc = func(uri string) error {
		_, err := cas.ParseCID(uri)
		return err
	}
	return l
}

// mix holds generated operations of each type, each for its own DID.
type mix struct {
	creates, updates, recovers, deactivates []*sidetree.Operation
}

// generate makes operations with the wallet: creates of new DIDs and, for the other types,
// requests for other new (unanchored) DIDs; the builder does not look at DID state. Keys come
// from a fixed seed and ES256K signatures are deterministic, so equal arguments give equal
// operations: fuzz seeds made in the coordinating process stay valid in its workers.
func generate(t testing.TB, creates, updates, recovers, deactivates int) mix {
	t.Helper()
	seed := [32]byte{byte(creates), byte(updates), byte(recovers), byte(deactivates)}
	w := wallet.New(wallet.Config{Rand: rand.NewChaCha8(seed)})
	var m mix
	parse := func(req []byte, err error) *sidetree.Operation {
		require.NoError(t, err)
		op, err := sidetree.ParseOperation(req, profile)
		require.NoError(t, err)
		return op
	}
	newID := func(i int) (*wallet.Identity, []byte) {
		k, err := w.NewKey()
		require.NoError(t, err)
		id, req, err := w.Create(wallet.Replace(wallet.Document{
			PublicKeys: []wallet.PublicKey{wallet.DocumentKey("key-1", k, "authentication")},
			Services:   []wallet.Service{{ID: "svc", Type: "LinkedDomains", Endpoint: fmt.Sprintf("https://%d.example.com", i)}},
		}))
		require.NoError(t, err)
		return id, req
	}
	for i := range creates {
		_, req := newID(i)
		m.creates = append(m.creates, parse(req, nil))
	}
	for i := range updates {
		id, _ := newID(i)
		m.updates = append(m.updates, parse(w.Update(id, wallet.AddServices(wallet.Service{ID: "u", Type: "t", Endpoint: "https://u.example"}))))
	}
	for i := range recovers {
		id, _ := newID(i)
		m.recovers = append(m.recovers, parse(w.Recover(id, wallet.Replace(wallet.Document{}))))
	}
	for i := range deactivates {
		id, _ := newID(i)
		m.deactivates = append(m.deactivates, parse(w.Deactivate(id)))
	}
	return m
}

// interleaved returns the operations in a mixed order (as a queue would hold them).
func (m mix) interleaved() []*sidetree.Operation {
	var out []*sidetree.Operation
	lists := [][]*sidetree.Operation{m.updates, m.deactivates, m.recovers, m.creates}
	for i := 0; ; i++ {
		added := false
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
				added = true
			}
		}
		if !added {
			return out
		}
	}
}

// anchorOrder is the order operations take in a batch: creates, recovers, deactivates, updates.
func (m mix) anchorOrder() []*sidetree.Operation {
	var out []*sidetree.Operation
	for _, l := range [][]*sidetree.Operation{m.creates, m.recovers, m.deactivates, m.updates} {
		out = append(out, l...)
	}
	return out
}

func gunzip(t testing.TB, data []byte) []byte {
	t.Helper()
	r, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	out, err := io.ReadAll(r)
	require.NoError(t, err)
	return out
}

func gz(t testing.TB, data []byte) []byte {
	t.Helper()
	var c compressor
	return c.compress(data)
}

// unparsed returns ops without the parses Build gives them, as Read returns them.
func unparsed(ops []sidetree.AnchoredOperation) []sidetree.AnchoredOperation {
	out := slices.Clone(ops)
	for i := range out {
		out[i].Parsed = nil
	}
	return out
}
