package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/anchord/anchord/internal/anchordtest"
	"github.com/anchord/anchord/internal/sidetree"
	"github.com/anchord/anchord/internal/sidetree/wallet"
)

// driverResult is the part of a DID resolution result these tests read.
type driverResult struct {
	Document struct {
		ID       string `json:"id"`
		Services []struct {
			ID string `json:"id"`
		} `json:"service"`
	} `json:"didDocument"`
	Metadata struct {
		Created       string `json:"created"`
		Updated       string `json:"updated"`
		VersionID     string `json:"versionId"`
		NextVersionID string `json:"nextVersionId"`
		NextUpdate    string `json:"nextUpdate"`
		Method        struct {
			Published        bool   `json:"published"`
			UpdateCommitment string `json:"updateCommitment"`
		} `json:"method"`
	} `json:"didDocumentMetadata"`
	ResolutionMetadata struct {
		Error string `json:"error"`
	} `json:"didResolutionMetadata"`
}

func (r driverResult) services() []string {
	out := []string{}
	for _, s := range r.Document.Services {
		out = append(out, s.ID)
	}
	return out
}

// getDriver resolves through the Universal Resolver path with the given query string.
func getDriver(t *testing.T, addr, did, query string) (int, driverResult) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/1.0/identifiers/" + did + query)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, `application/ld+json;profile="https://w3id.org/did-resolution"`, resp.Header.Get("Content-Type"), "%s", body)
	var r driverResult
	require.NoError(t, json.Unmarshal(body, &r), "%s", body)
	return resp.StatusCode, r
}

// TestResolveVersionsOfADIDWithThreeUpdates creates a DID and updates it three times, each
// anchored in its own second, then resolves every version by versionId and by versionTime, as
// Orb and DID Resolution define them: the document as it was, with created, updated, versionId
// and, for an older version, nextVersionId and nextUpdate.
func TestResolveVersionsOfADIDWithThreeUpdates(t *testing.T) {
	t.Parallel()
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--batch-writer-timeout", "100ms"}, Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)
	c := newClient(addr)
	w := wallet.New(wallet.Config{Profile: sidetree.DefaultProfile()})

	id, req, err := w.Create(wallet.AddServices(wallet.Service{ID: "s0", Type: "LinkedDomains", Endpoint: "https://example.com/0"}))
	require.NoError(t, err)
	code, body, err := c.post(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%s", body)
	did := id.DID()

	// versions[i] is the DID after the create (0) and after update i.
	var versions []driverResult
	awaitVersion := func(commitment string) driverResult {
		var got driverResult
		anchordtest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
			status, r := getDriver(t, addr, did, "")
			got = r
			return status == http.StatusOK && r.Metadata.Method.Published && r.Metadata.Method.UpdateCommitment == commitment
		}, "version with update commitment %s never resolved", commitment)
		return got
	}
	versions = append(versions, awaitVersion(id.UpdateKey.Commitment()))
	for i := 1; i <= 3; i++ {
		// Each version in its own second: versionTime and the metadata times are whole seconds.
		last := versions[len(versions)-1]
		lastTime := last.Metadata.Created
		if last.Metadata.Updated != "" {
			lastTime = last.Metadata.Updated
		}
		at, err := time.Parse(time.RFC3339, lastTime)
		require.NoError(t, err)
		anchordtest.Eventually(t, 5*time.Second, 20*time.Millisecond, func() bool {
			return time.Now().Truncate(time.Second).After(at)
		}, "clock")
		req, err := w.Update(id, wallet.AddServices(wallet.Service{ID: fmt.Sprintf("s%d", i), Type: "LinkedDomains", Endpoint: fmt.Sprintf("https://example.com/%d", i)}))
		require.NoError(t, err)
		code, body, err := c.post(req)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "%s", body)
		versions = append(versions, awaitVersion(id.UpdateKey.Commitment()))
	}

	// The latest version names itself and nothing after it.
	latest := versions[3]
	require.Equal(t, []string{"#s0", "#s1", "#s2", "#s3"}, latest.services())
	require.NotEmpty(t, latest.Metadata.VersionID)
	require.Empty(t, latest.Metadata.NextVersionID)
	require.Equal(t, versions[0].Metadata.Created, latest.Metadata.Created)
	require.Empty(t, versions[0].Metadata.Updated, "a DID never updated has no updated time")
	seen := map[string]bool{}
	for _, v := range versions {
		require.False(t, seen[v.Metadata.VersionID], "every version has its own id")
		seen[v.Metadata.VersionID] = true
	}

	for i, v := range versions {
		wantServices := []string{"#s0", "#s1", "#s2", "#s3"}[:i+1]
		status, byID := getDriver(t, addr, did, "?versionId="+url.QueryEscape(v.Metadata.VersionID))
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, wantServices, byID.services(), "versionId of version %d", i)
		require.Equal(t, v.Metadata.VersionID, byID.Metadata.VersionID)
		require.Equal(t, v.Metadata.Updated, byID.Metadata.Updated)
		if i < 3 {
			require.Equal(t, versions[i+1].Metadata.VersionID, byID.Metadata.NextVersionID, "version %d", i)
			require.Equal(t, versions[i+1].Metadata.Updated, byID.Metadata.NextUpdate, "version %d", i)
		} else {
			require.Empty(t, byID.Metadata.NextVersionID)
		}

		when := v.Metadata.Updated
		if i == 0 {
			when = v.Metadata.Created
		}
		status, byTime := getDriver(t, addr, did, "?versionTime="+url.QueryEscape(when))
		require.Equal(t, http.StatusOK, status)
		require.Equal(t, wantServices, byTime.services(), "versionTime of version %d", i)
		require.Equal(t, v.Metadata.VersionID, byTime.Metadata.VersionID)
	}

	created, err := time.Parse(time.RFC3339, versions[0].Metadata.Created)
	require.NoError(t, err)
	status, r := getDriver(t, addr, did, "?versionTime="+url.QueryEscape(created.Add(-time.Second).Format(time.RFC3339)))
	require.Equal(t, http.StatusNotFound, status, "before the create there is no version")
	require.Equal(t, "notFound", r.ResolutionMetadata.Error)
	status, r = getDriver(t, addr, did, "?versionTime="+url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, latest.Metadata.VersionID, r.Metadata.VersionID)
	status, r = getDriver(t, addr, did, "?versionId=QmNoSuchVersion")
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "notFound", r.ResolutionMetadata.Error)

	// The Sidetree path takes the same parameters.
	resp, err := http.Get("http://" + addr + "/sidetree/v1/identifiers/" + did + "?versionId=" + url.QueryEscape(versions[1].Metadata.VersionID))
	require.NoError(t, err)
	var sidetreeResult driverResult
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&sidetreeResult))
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, []string{"#s0", "#s1"}, sidetreeResult.services())
	require.Equal(t, versions[2].Metadata.VersionID, sidetreeResult.Metadata.NextVersionID)
}

// TestResolutionContentNegotiationEndToEnd resolves a real DID in each representation.
func TestResolutionContentNegotiationEndToEnd(t *testing.T) {
	t.Parallel()
	addr := anchordtest.FreeAddr(t)
	p := anchordtest.StartProcess(t, anchordtest.ProcessConfig{
		Args: []string{"serve", "--host-url", addr, "--batch-writer-timeout", "100ms", "--did-method", "ion"}, Addr: addr,
	})
	p.WaitHealthy(30 * time.Second)
	w := wallet.New(wallet.Config{Profile: sidetree.Profile{Method: "ion"}})
	id, req, err := w.Create()
	require.NoError(t, err)
	code, body, err := newClient(addr).post(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "%s", body)

	get := func(path, accept string) (int, string, map[string]any) {
		r, err := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
		require.NoError(t, err)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		resp, err := http.DefaultClient.Do(r)
		require.NoError(t, err)
		defer resp.Body.Close()
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		return resp.StatusCode, resp.Header.Get("Content-Type"), m
	}
	anchordtest.Eventually(t, 30*time.Second, 20*time.Millisecond, func() bool {
		code, _, _ := get("/sidetree/v1/identifiers/"+id.DID(), "")
		return code == http.StatusOK
	}, "DID never resolved")

	for _, path := range []string{"/sidetree/v1/identifiers/", "/1.0/identifiers/"} {
		code, media, m := get(path+id.DID(), `application/ld+json;profile="https://w3id.org/did-resolution"`)
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, `application/ld+json;profile="https://w3id.org/did-resolution"`, media)
		require.Contains(t, m, "didResolutionMetadata")
		require.Contains(t, m["didDocumentMetadata"], "versionId")
		require.Equal(t, id.DID(), m["didDocument"].(map[string]any)["id"])

		code, media, m = get(path+id.DID(), "application/did+ld+json")
		require.Equal(t, http.StatusOK, code)
		require.Equal(t, "application/did+ld+json", media)
		require.Equal(t, id.DID(), m["id"], "the document alone")
		require.Contains(t, m, "@context")
	}
	code, _, m := get("/sidetree/v1/identifiers/"+id.DID(), "")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, m, "didResolutionMetadata", "no Accept: the reference implementation's result")
	require.NotContains(t, m["didDocumentMetadata"], "versionId")

	code, _, m = get("/1.0/identifiers/did:sidetree:"+id.Suffix, "")
	require.Equal(t, http.StatusNotImplemented, code, "a did:ion node does not resolve did:sidetree")
	require.Equal(t, "methodNotSupported", m["didResolutionMetadata"].(map[string]any)["error"])
	code, _, m = get("/sidetree/v1/identifiers/did:sidetree:"+id.Suffix, "")
	require.Equal(t, http.StatusBadRequest, code)
	require.Contains(t, m["message"], `configured method "ion"`)
}
