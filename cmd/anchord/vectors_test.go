package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
)

const difDir = "../../internal/sidetree/testdata/dif"

func readVector(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(difDir, name))
	require.NoError(t, err)
	return b
}

// TestDIFVectorsThroughHTTP posts the DIF vector operations to a real anchord (method sidetree)
// and checks that resolution gives exactly the vectors' documents after each step.
func TestDIFVectorsThroughHTTP(t *testing.T) {
	t.Parallel()
	var did struct {
		ShortFormDid string `json:"shortFormDid"`
	}
	require.NoError(t, json.Unmarshal(readVector(t, "resolution/did.json"), &did))

	type step struct {
		op     string
		after  string
		status int
	}
	// The vectors' sequences: afterUpdate is create+update, afterRecover create+recover,
	// afterDeactivate create+recover+deactivate, so each sequence runs on a fresh instance.
	for name, steps := range map[string][]step{
		"update":     {{"createOperation.json", "afterCreate.json", 200}, {"updateOperation.json", "afterUpdate.json", 200}},
		"recover":    {{"createOperation.json", "afterCreate.json", 200}, {"recoverOperation.json", "afterRecover.json", 200}},
		"deactivate": {{"createOperation.json", "afterCreate.json", 200}, {"recoverOperation.json", "afterRecover.json", 200}, {"deactivateOperation.json", "afterDeactivate.json", 410}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			addr := anchordtest.FreeAddr(t)
			p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
				Args: []string{"serve", "--host-url", addr, "--batch-writer-timeout", "100ms"}, Addr: addr,
			})
			p.WaitHealthy(30 * time.Second)
			c := newClient(addr)
			for _, s := range steps {
				code, body, err := c.post(readVector(t, "operations/"+s.op))
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, code, "%s: %s", s.op, body)
				want := readVector(t, "resolution/"+s.after)
				var got []byte
				anchordtest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
					status, b, err := c.resolve(did.ShortFormDid)
					if err != nil || status != s.status {
						return false
					}
					got = b
					var g, w any
					return json.Unmarshal(b, &g) == nil && json.Unmarshal(want, &w) == nil && jsonEqual(g, w)
				}, "resolution after %s never matched %s; last body %s", s.op, s.after, got)
			}
		})
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
