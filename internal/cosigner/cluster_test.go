package cosigner

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/store/storetest"
)

// TestClusterWitnessesNeverCosignTwoCheckpointsOfOneSize runs two witness instances on one
// PostgreSQL database, as a cluster does, and has both receive add-checkpoint calls for one
// origin at once, from a log that forked: two branches share their first entries and then
// differ. Every size is advanced to at most once, and no size is cosigned with two root hashes.
func TestClusterWitnessesNeverCosignTwoCheckpointsOfOneSize(t *testing.T) {
	t.Parallel()
	opener := storetest.PostgresOpener(t)
	l := newTestLog(t, "forking.example/log")
	logs, err := NewKnownLogs(KnownLogsConfig{Static: []string{l.vkey}})
	require.NoError(t, err)
	key := testKey(t, false)
	var urls []string
	for range 2 {
		w, err := New(Config{Key: key, Logs: logs, Checkpoints: storetest.Open(t, opener), Logger: anchordtest.DiscardLogger()})
		require.NoError(t, err)
		mux := http.NewServeMux()
		w.Register(mux)
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL+Prefix+"/add-checkpoint")
	}

	const common, steps = 10, 12
	branches := [2]*testonly.Tree{testonly.New(rfc6962.DefaultHasher), testonly.New(rfc6962.DefaultHasher)}
	for i, tr := range branches {
		for j := range common + steps {
			if j < common {
				tr.AppendData(fmt.Appendf(nil, "shared %d", j))
			} else {
				tr.AppendData(fmt.Appendf(nil, "branch %d entry %d", i, j))
			}
		}
	}
	body := func(tr *testonly.Tree, old, size uint64) []byte {
		var b bytes.Buffer
		fmt.Fprintf(&b, "old %d\n", old)
		if old > 0 && old < size {
			prf, err := tr.ConsistencyProof(old, size)
			require.NoError(t, err)
			for _, h := range prf {
				b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
			}
		}
		b.WriteString("\n")
		b.Write(l.checkpointWith(size, tr.HashAt(size), l.signer))
		return b.Bytes()
	}
	// Both instances first cosign the shared prefix.
	resp, err := http.Post(urls[0], "text/plain", bytes.NewReader(body(branches[0], 0, common)))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	type advance struct {
		size uint64
		hash string
	}
	var mu sync.Mutex
	var advances []advance
	codes := map[int]int{}
	var wg sync.WaitGroup
	const clients = 8
	for c := range clients {
		wg.Go(func() {
			tr := branches[c%2]
			url := urls[(c/2)%2]
			known := uint64(common)
			for size := uint64(common + 1); size <= common+steps; size++ {
				for attempt := 0; known < size && attempt < 4; attempt++ {
					resp, err := http.Post(url, "text/plain", bytes.NewReader(body(tr, known, size)))
					if err != nil {
						t.Error(err)
						return
					}
					var out bytes.Buffer
					_, _ = out.ReadFrom(resp.Body)
					resp.Body.Close()
					mu.Lock()
					codes[resp.StatusCode]++
					if resp.StatusCode == http.StatusOK {
						advances = append(advances, advance{size, base64.StdEncoding.EncodeToString(tr.HashAt(size))})
					}
					mu.Unlock()
					switch resp.StatusCode {
					case http.StatusOK:
						known = size
					case http.StatusConflict:
						n, err := strconv.ParseUint(strings.TrimSpace(out.String()), 10, 64)
						if err != nil {
							t.Errorf("409 body %q", out.String())
							return
						}
						known = n
					case http.StatusUnprocessableEntity:
						// The witness is on the other branch: this one can never advance it.
						return
					default:
						t.Errorf("status %d: %s", resp.StatusCode, out.String())
						return
					}
				}
			}
		})
	}
	wg.Wait()

	perSize := map[uint64]map[string]int{}
	for _, a := range advances {
		if perSize[a.size] == nil {
			perSize[a.size] = map[string]int{}
		}
		perSize[a.size][a.hash]++
	}
	for size, hashes := range perSize {
		require.Len(t, hashes, 1, "size %d cosigned with two root hashes", size)
		for _, n := range hashes {
			require.Equal(t, 1, n, "size %d advanced to more than once", size)
		}
	}
	require.NotEmpty(t, advances)
	require.Positive(t, codes[http.StatusConflict], "the instances raced: some requests lost")
	t.Logf("advances %d, answers by status %v", len(advances), codes)
}
