package sidetree_test

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/sidetree"
)

// jsonPaths lists every member and element position in v, depth first, in a stable order.
func jsonPaths(v any, prefix []string, out *[][]string) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append([]string{}, prefix...), k)
			*out = append(*out, p)
			jsonPaths(x[k], p, out)
		}
	case []any:
		for i, e := range x {
			p := append(append([]string{}, prefix...), strconv.Itoa(i))
			*out = append(*out, p)
			jsonPaths(e, p, out)
		}
	}
}

// setPath replaces (or, with remove, deletes) the value at path in v.
func setPath(v any, path []string, value any, remove bool) {
	for i, step := range path {
		last := i == len(path)-1
		switch x := v.(type) {
		case map[string]any:
			if last {
				if remove {
					delete(x, step)
				} else {
					x[step] = value
				}
				return
			}
			v = x[step]
		case []any:
			n, _ := strconv.Atoi(step)
			if last {
				x[n] = value
				return
			}
			v = x[n]
		}
	}
}

// FuzzParseOperationMembers is structure-aware: it takes a vector request and replaces one
// member anywhere in it, or in its JWS payload, with a fuzzed JSON value, so that every
// validation rule sees arbitrary input while the rest of the request stays valid.
func FuzzParseOperationMembers(f *testing.F) {
	names := []string{"create", "update", "recover", "deactivate"}
	bodies := make([][]byte, len(names))
	for i, n := range names {
		bodies[i] = difOperation(f, n)
	}
	for i := range names {
		for _, v := range []string{`"x"`, `null`, `{}`, `[]`, `1e999`, `"EiDyOQbbZAa3aiRzeCkV7LOx3SERjjH93EXoIM3UoN4oWg"`, `{"action":"replace","document":{}}`} {
			f.Add(uint8(i), uint16(3), false, []byte(v))
			f.Add(uint8(i), uint16(40), true, []byte(v))
		}
	}
	p := sidetree.Profile{Algorithms: []sidetree.Algorithm{sidetree.ES256K, sidetree.EdDSA}}
	f.Fuzz(func(t *testing.T, which uint8, at uint16, remove bool, value []byte) {
		var req map[string]any
		require.NoError(t, json.Unmarshal(bodies[int(which)%len(bodies)], &req))
		// A JSON value is spliced in as such (numbers keep their text), anything else as a string.
		var v any = string(value)
		if json.Valid(value) {
			d := json.NewDecoder(bytes.NewReader(value))
			d.UseNumber()
			var decoded any
			if d.Decode(&decoded) == nil {
				v = decoded
			}
		}
		var paths [][]string
		jsonPaths(req, nil, &paths)
		var payload map[string]any
		var payloadPaths [][]string
		parts := []string{}
		if s, ok := req["signedData"].(string); ok {
			parts = strings.Split(s, ".")
			raw, err := b64.DecodeString(parts[1])
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &payload))
			jsonPaths(payload, nil, &payloadPaths)
		}
		i := int(at) % (len(paths) + len(payloadPaths))
		if i < len(paths) {
			setPath(req, paths[i], v, remove)
		} else {
			setPath(payload, payloadPaths[i-len(paths)], v, remove)
			raw, err := json.Marshal(payload)
			require.NoError(t, err)
			parts[1] = b64.EncodeToString(raw)
			req["signedData"] = strings.Join(parts, ".")
		}
		body, err := json.Marshal(req)
		require.NoError(t, err)
		op, err := sidetree.ParseOperation(body, p)
		if err != nil {
			require.NotEmpty(t, sidetree.CodeOf(err), "%v", err)
			return
		}
		again, err := sidetree.ParseOperation(op.Request, p)
		require.NoError(t, err)
		require.Equal(t, string(op.Request), string(again.Request))
	})
}
