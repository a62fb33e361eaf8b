package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
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

// TestJSONLogsParseStrictlyInAWitnessedCluster: a clustered domain (two instances on
// PostgreSQL and RabbitMQ, its witness log in MariaDB, the witness backend) and its witness (an
// embedded domain with a witness log on files, also a C2SP tlog-witness), all with JSON logs, through start, an invitation,
// anchors witnessed under LogRequired, a follow, and shutdown. Every line each process wrote is
// one JSON object without duplicate keys: tessera's own lines included, at their levels, and the
// configuration with its types.
func TestJSONLogsParseStrictlyInAWitnessedCluster(t *testing.T) {
	t.Parallel()
	jsonLogs := []string{"--log-format", "json"}
	b := startDomain(t, "B", append([]string{"--witness-log", "--witness-log-checkpoint-interval", "200ms", "--tlog-witness"}, jsonLogs...)...)
	a, cluster := startClusteredDomain(t, [][]string{nil, nil}, append(append(slices.Clone(witnessTiming),
		"--witness-log", "--witness-log-mariadb-url", mariaDBDatabase(t)), jsonLogs...)...)
	a.admin("policy", "set", "OutOf(1,system) LogRequired")
	a.invite(b)
	b.follow(a)

	load := newFedLoad(t, a.api)
	load.creates(10, 2)
	anchordtest.Eventually(t, time.Minute, 100*time.Millisecond, func() bool {
		return load.publishedAt(a) == len(load.dids()) && load.publishedAt(b) == len(load.dids())
	}, "the DIDs are published at A and at B")

	logs := map[string]string{}
	for i, n := range cluster.nodes {
		p := n.process()
		p.Signal(syscall.SIGTERM)
		exit, err := p.Wait(30 * time.Second)
		require.NoError(t, err)
		require.Zero(t, exit)
		logs[fmt.Sprintf("A%d", i)] = p.Log()
	}
	b.stop()
	logs["B"] = b.process().Log()

	for name, log := range logs {
		msgs := map[string]map[string]any{}
		lines := strings.Split(strings.TrimSpace(log), "\n")
		require.Greater(t, len(lines), 20, name)
		for i, line := range lines {
			obj, err := parseStrict(line)
			require.NoError(t, err, "%s, line %d: %s", name, i+1, line)
			msg, _ := obj["msg"].(string)
			require.NotEqual(t, "ERROR", obj["level"], "%s: %s", name, line)
			require.False(t, strings.HasPrefix(msg, "Failed to fetch old checkpoint"), "%s: a fresh log's first checkpoint is not news at info: %s", name, line)
			if _, ok := msgs[msg]; !ok {
				msgs[msg] = obj
			}
		}
		require.Contains(t, msgs, "anchord stopped", name)
		require.Contains(t, msgs, "witness log open", name)
		server := configGroup(t, log, "server")
		require.IsType(t, json.Number(""), server["max_document_bytes"], name)
		require.IsType(t, false, server["access_log"], name)
		require.Equal(t, "300ms", configGroup(t, log, "sidetree")["batch_writer_timeout"], name)
	}
	initialized := "Initializing directory for POSIX log"
	var found bool
	for _, line := range strings.Split(logs["B"], "\n") {
		if strings.Contains(line, initialized) {
			obj, err := parseStrict(line)
			require.NoError(t, err)
			require.Equal(t, "INFO", obj["level"], line)
			require.Equal(t, "tessera", obj["component"], line)
			found = true
		}
	}
	require.True(t, found, "tessera's own line reaches B's log as JSON")
}

// configGroup returns the attributes of the "configuration" line of group in a JSON log.
func configGroup(t *testing.T, log, group string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		obj, err := parseStrict(line)
		if err == nil && obj["msg"] == "configuration" && obj["group"] == group {
			return obj
		}
	}
	require.Failf(t, "no configuration line", "group %s", group)
	return nil
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
