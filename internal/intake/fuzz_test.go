package intake

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/anchord/anchord/internal/sidetree"
)

// FuzzSubmit feeds arbitrary request bodies through intake, the path every POST takes: it must
// either accept a valid operation or reject it with a coded *sidetree.Error (an HTTP 400) —
// never panic, never fail in any other way.
func FuzzSubmit(f *testing.F) {
	for _, name := range []string{"createOperation.json", "updateOperation.json", "recoverOperation.json", "deactivateOperation.json"} {
		b, err := os.ReadFile(filepath.Join("..", "sidetree", "testdata", "dif", "operations", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{``, `{}`, `[]`, `null`, `{"type":"create"}`, `{"type":"update","didSuffix":"x"}`, "\xff\xfe", `{"type":"create","suffixData":{},"delta":{}}`} {
		f.Add([]byte(s))
	}
	create, err := os.ReadFile(filepath.Join("..", "sidetree", "testdata", "dif", "operations", "createOperation.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		l := &ledger{ops: map[string][]sidetree.AnchoredOperation{}}
		l.anchor(t, create) // so that updates, recovers and deactivates meet a real state
		svc, err := New(Config{Profile: sidetree.DefaultProfile()}, &queue{}, l.state, NewPending(0))
		if err != nil {
			t.Fatal(err)
		}
		_, err = svc.Submit(context.Background(), body)
		if err == nil {
			return
		}
		var se *sidetree.Error
		if !errors.As(err, &se) || se.Code == "" || se.Message == "" {
			t.Fatalf("rejection without a code: %v", err)
		}
	})
}
