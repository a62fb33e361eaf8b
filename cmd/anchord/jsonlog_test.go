package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// TestJSONLogsParseStrictly runs the embedded server with JSON logs through start, a create that
// is anchored and resolved, and shutdown, and parses every line it wrote with a decoder that
// rejects duplicate keys (as strict log pipelines do).
func TestJSONLogsParseStrictly(t *testing.T) {
	t.Parallel()
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--log-format", "json", "--batch-writer-timeout", "200ms"},
		Dir:  t.TempDir(), Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)

	id, create, err := wallet.New(wallet.Config{}).Create()
	require.NoError(t, err)
	api := newClient(addr)
	code, body, err := api.post(create)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, string(body))
	anchordtest.Eventually(t, 30*time.Second, 50*time.Millisecond, func() bool {
		code, body, err := api.resolve("did:sidetree:" + id.Suffix)
		return err == nil && code == http.StatusOK && bytes.Contains(body, []byte(`"published":true`))
	}, "the created DID is published")

	p.Signal(syscall.SIGTERM)
	exit, err := p.Wait(10 * time.Second)
	require.NoError(t, err)
	require.Equal(t, 0, exit)

	lines := strings.Split(strings.TrimSpace(p.Log()), "\n")
	require.Greater(t, len(lines), 20)
	msgs := map[string]bool{}
	for i, line := range lines {
		obj, err := parseStrict(line)
		require.NoError(t, err, "line %d: %s", i+1, line)
		msg, _ := obj["msg"].(string)
		msgs[msg] = true
		if took, ok := obj["took"]; ok {
			_, isText := took.(string)
			require.True(t, isText, "durations are logged as text: %s", line)
		}
	}
	for _, want := range []string{"starting anchord", "configuration", "anchord started", "batch anchored", "anchord stopped"} {
		require.True(t, msgs[want], "a %q line", want)
	}
}

// parseStrict decodes one JSON object, failing on a duplicate key at any depth.
func parseStrict(line string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	v, err := strictValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("trailing data after the object")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	return obj, nil
}

func strictValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		obj := map[string]any{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key := k.(string)
			if _, dup := obj[key]; dup {
				return nil, fmt.Errorf("duplicate key %q", key)
			}
			if obj[key], err = strictValue(dec); err != nil {
				return nil, err
			}
		}
		_, err := dec.Token()
		return obj, err
	case json.Delim('['):
		var arr []any
		for dec.More() {
			v, err := strictValue(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	default:
		return tok, nil
	}
}
