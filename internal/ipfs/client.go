package ipfs

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/anchord/anchord/internal/cas"
)

// DAG options of /api/v0/add that cas.ComputeCID assumes; see the package comment.
const (
	addChunker      = "size-262144"
	addHash         = "sha2-256"
	addMaxFileLinks = "174"
)

// errorBodyLimit bounds how much of an error answer is read for its message.
const errorBodyLimit = 64 << 10

// pinLineLimit bounds one line of a streamed pin listing ({"Cid":…,"Type":"recursive"}).
const pinLineLimit = 64 << 10

// Client talks to one Kubo node over its RPC API. It is safe for concurrent use.
type Client struct {
	cfg  Config
	base *url.URL
	http *http.Client
	own  bool // http was made here, so Close may release its connections
	log  *slog.Logger
	m    *metrics
}

// New returns a Client for the node at cfg.URL. It does not contact the node.
func New(cfg Config) (*Client, error) {
	cfg, base, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("new ipfs client: %w", err)
	}
	c := &Client{cfg: cfg, base: base, http: cfg.HTTPClient, log: cfg.Logger, m: m}
	if c.http == nil {
		c.own = true
		c.http = &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			// The RPC API never redirects; following one would resend a file to wherever the
			// answer points.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	return c, nil
}

// Close releases the idle connections of the client's own HTTP client; a Config.HTTPClient is
// left to its owner. The Client stays usable.
func (c *Client) Close() {
	if c.own {
		c.http.CloseIdleConnections()
	}
}

// Add adds data as one UnixFS file, pinned, and returns its CID in version v, which is
// cas.ComputeCID(data, v): an answer naming another CID fails with ErrMismatch.
func (c *Client) Add(ctx context.Context, data []byte, v cas.CIDVersion) (cid string, err error) {
	const op = "add"
	defer c.observe(op, time.Now(), &err)
	if v != cas.CIDv0 && v != cas.CIDv1 {
		return "", fmt.Errorf("ipfs add: CID version %d is neither 0 nor 1", v)
	}
	want := cas.ComputeCID(data, v)
	params := url.Values{
		"cid-version":    {strconv.Itoa(int(v))},
		"raw-leaves":     {"false"},
		"chunker":        {addChunker},
		"hash":           {addHash},
		"trickle":        {"false"},
		"max-file-links": {addMaxFileLinks},
		"inline":         {"false"},
		"pin":            {"true"},
		"progress":       {"false"},
	}
	if v == cas.CIDv1 {
		// cas names v1 CIDs in base32; a node whose default base is another would print the
		// same CID differently.
		params.Set("cid-base", "base32")
	}
	body, contentType, length := multipartFile(data)
	resp, cancel, err := c.post(ctx, "add", params, body, contentType, length)
	if err != nil {
		return "", fmt.Errorf("ipfs add: %w", err)
	}
	defer cancel()
	defer resp.Body.Close()
	var got string
	answer := newAnswerReader(resp.Body, c.cfg.MaxResponseBytes)
	dec := json.NewDecoder(answer)
	for {
		var entry struct{ Hash string }
		if err := dec.Decode(&entry); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("ipfs add: %w", c.answerFailure(ctx, answer, err))
		}
		if entry.Hash != "" {
			got = entry.Hash
		}
	}
	if err := streamError(resp); err != nil {
		return "", fmt.Errorf("ipfs add: %w", err)
	}
	if got == "" {
		return "", errors.New("ipfs add: the answer names no CID")
	}
	if parsed, perr := cas.ParseCID(got); perr != nil || parsed.String() != want {
		return "", fmt.Errorf("ipfs add: node named %d bytes %s, anchord computes %s: %w", len(data), got, want, ErrMismatch)
	}
	c.m.added.Add(float64(len(data)))
	return want, nil
}

// multipartFile is the form Kubo's add reads: one part named "file". The body refers to data
// rather than copying it.
func multipartFile(data []byte) (body io.Reader, contentType string, length int64) {
	var head, tail bytes.Buffer
	w := multipart.NewWriter(&head)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename="file"`)
	h.Set("Content-Type", "application/octet-stream")
	_, _ = w.CreatePart(h) // writes to a bytes.Buffer, which does not fail
	headLen := head.Len()
	_ = w.Close() // the closing boundary, written after the part's content
	tail.Write(head.Bytes()[headLen:])
	head.Truncate(headLen)
	length = int64(head.Len() + len(data) + tail.Len())
	return io.MultiReader(&head, bytes.NewReader(data), &tail), w.FormDataContentType(), length
}

// Cat returns the bytes of the file cid if there are at most maxBytes of them, as the node
// has them: unchecked (Get checks). The node reads at most maxBytes+1 bytes of the file.
func (c *Client) Cat(ctx context.Context, cid string, maxBytes int64) (data []byte, err error) {
	const op = "cat"
	defer c.observe(op, time.Now(), &err)
	data, err = c.cat(ctx, cid, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("ipfs cat %s: %w", cid, err)
	}
	return data, nil
}

// Get is Cat followed by Verify: the bytes returned are the file cid names.
func (c *Client) Get(ctx context.Context, cid string, maxBytes int64) (data []byte, err error) {
	const op = "get"
	defer c.observe(op, time.Now(), &err)
	data, err = c.cat(ctx, cid, maxBytes)
	if err == nil {
		err = Verify(cid, data)
	}
	if err != nil {
		return nil, fmt.Errorf("ipfs get %s: %w", cid, err)
	}
	return data, nil
}

func (c *Client) cat(ctx context.Context, cid string, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		return nil, fmt.Errorf("limit %d is not positive", maxBytes)
	}
	if _, err := cas.ParseCID(cid); err != nil {
		return nil, err
	}
	params := url.Values{
		"arg":      {cid},
		"length":   {strconv.FormatInt(maxBytes+1, 10)},
		"progress": {"false"},
	}
	resp, cancel, err := c.post(ctx, "cat", params, nil, "", 0)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	// Kubo announces the file's size before the content: refuse a file too large without
	// reading it.
	if n, perr := strconv.ParseInt(resp.Header.Get("X-Content-Length"), 10, 64); perr == nil && n > maxBytes {
		return nil, fmt.Errorf("%d bytes, limit %d: %w", n, maxBytes, ErrTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read content: %w", c.readError(ctx, err))
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("more than %d bytes: %w", maxBytes, ErrTooLarge)
	}
	if err := streamError(resp); err != nil {
		return nil, err
	}
	c.m.read.Add(float64(len(data)))
	return data, nil
}

// Pin pins cid recursively. An online node fetches what it lacks from the network within the
// request timeout; an offline node fails unless it has the whole DAG.
func (c *Client) Pin(ctx context.Context, cid string) (err error) {
	const op = "pin"
	defer c.observe(op, time.Now(), &err)
	if _, err := cas.ParseCID(cid); err != nil {
		return fmt.Errorf("ipfs pin: %w", err)
	}
	var out struct{ Pins []string }
	if err := c.call(ctx, "pin/add", url.Values{"arg": {cid}, "recursive": {"true"}, "progress": {"false"}}, &out); err != nil {
		return fmt.Errorf("ipfs pin %s: %w", cid, err)
	}
	if len(out.Pins) == 0 {
		return fmt.Errorf("ipfs pin %s: the answer lists no pin", cid)
	}
	return nil
}

// Pinned reports whether the node holds cid under a recursive pin, which it keeps only once it
// has every block of the file. It never fetches anything.
func (c *Client) Pinned(ctx context.Context, cid string) (ok bool, err error) {
	const op = "pinned"
	defer c.observe(op, time.Now(), &err)
	if _, err := cas.ParseCID(cid); err != nil {
		return false, fmt.Errorf("ipfs pinned: %w", err)
	}
	params := url.Values{"arg": {cid}, "type": {"recursive"}, "offline": {"true"}}
	var out struct {
		Keys map[string]struct{ Type string }
	}
	err = c.call(ctx, "pin/ls", params, &out)
	var apiErr *Error
	// Kubo has no error code for "not pinned"; its own RPC client matches this text too.
	if errors.As(err, &apiErr) && strings.Contains(apiErr.Message, "is not pinned") {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ipfs pinned %s: %w", cid, err)
	}
	return len(out.Keys) > 0, nil
}

// Pins calls visit with each recursively pinned CID, as the node prints it (by default CIDv0
// as "Qm…", CIDv1 in base32, the forms Add returns), in no particular order; visit's error stops
// the listing and is returned. The listing includes pins that are not anchord's (a new
// repository pins its empty root directory). It is one request, so RequestTimeout bounds it.
func (c *Client) Pins(ctx context.Context, visit func(cid string) error) (err error) {
	const op = "pins"
	defer c.observe(op, time.Now(), &err)
	params := url.Values{"type": {"recursive"}, "stream": {"true"}}
	resp, cancel, err := c.post(ctx, "pin/ls", params, nil, "", 0)
	if err != nil {
		return fmt.Errorf("ipfs pins: %w", err)
	}
	defer cancel()
	defer resp.Body.Close()
	// The listing has no total bound (a node may hold any number of pins); each line has.
	answer := newAnswerReader(resp.Body, math.MaxInt64-1)
	sc := bufio.NewScanner(answer)
	sc.Buffer(make([]byte, 0, 4096), pinLineLimit)
	for sc.Scan() {
		var entry struct{ Cid string }
		if err := json.Unmarshal(sc.Bytes(), &entry); err != nil {
			return fmt.Errorf("ipfs pins: malformed answer line %.100q: %w", sc.Bytes(), err)
		}
		if entry.Cid == "" {
			continue
		}
		if err := visit(entry.Cid); err != nil {
			return fmt.Errorf("ipfs pins: visit %s: %w", entry.Cid, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("ipfs pins: %w", c.answerFailure(ctx, answer, err))
	}
	if err := streamError(resp); err != nil {
		return fmt.Errorf("ipfs pins: %w", err)
	}
	return nil
}

// Version returns the node's Kubo version, e.g. "0.43.1"; it is also the cheapest request that
// tells whether the node answers.
func (c *Client) Version(ctx context.Context) (version string, err error) {
	const op = "version"
	defer c.observe(op, time.Now(), &err)
	var out struct{ Version string }
	if err := c.call(ctx, "version", nil, &out); err != nil {
		return "", fmt.Errorf("ipfs version: %w", err)
	}
	if out.Version == "" {
		return "", errors.New("ipfs version: the answer has no version")
	}
	return out.Version, nil
}

// call posts a request without a body and decodes its JSON answer into out.
func (c *Client) call(ctx context.Context, path string, params url.Values, out any) error {
	resp, cancel, err := c.post(ctx, path, params, nil, "", 0)
	if err != nil {
		return err
	}
	defer cancel()
	defer resp.Body.Close()
	answer := newAnswerReader(resp.Body, c.cfg.MaxResponseBytes)
	b, err := io.ReadAll(answer)
	if err != nil {
		return c.answerFailure(ctx, answer, err)
	}
	if err := streamError(resp); err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("malformed answer: %w", err)
	}
	return nil
}

// post sends POST /api/v0/<path>?params (the RPC API accepts no other method) under the
// request timeout. On success the caller reads the body and then calls cancel.
func (c *Client) post(ctx context.Context, path string, params url.Values, body io.Reader, contentType string, length int64) (*http.Response, context.CancelFunc, error) {
	u := *c.base
	u.Path += "/" + path
	u.RawQuery = params.Encode()
	rctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, u.String(), body)
	if err != nil {
		cancel()
		return nil, nil, fmt.Errorf("build request: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
		req.ContentLength = length
	}
	resp, err := c.http.Do(req)
	if err != nil {
		cancel()
		return nil, nil, c.readError(ctx, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer cancel()
		defer resp.Body.Close()
		return nil, nil, answerError(resp)
	}
	return resp, cancel, nil
}

// readError classifies a transport failure: the caller's own cancellation is returned as
// such; anything else (refused, reset, our timeout) means the node did not answer.
func (c *Client) readError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w: %w", ctx.Err(), err)
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// errAnswerTooLong is returned by an answerReader past its limit.
var errAnswerTooLong = errors.New("answer too long")

// answerReader reads an answer body up to a limit and keeps the connection's own failure apart
// from what the reader's consumer makes of the bytes: a JSON decoder reports a body cut short
// by the network and a body that is not JSON alike, but only the first means the node may
// answer properly next time.
type answerReader struct {
	r     io.Reader
	left  int64 // bytes still allowed, plus one
	limit int64
	err   error // the first read error of r other than io.EOF
}

func newAnswerReader(r io.Reader, limit int64) *answerReader {
	return &answerReader{r: r, left: limit + 1, limit: limit}
}

func (a *answerReader) Read(p []byte) (int, error) {
	if a.left <= 0 {
		return 0, errAnswerTooLong
	}
	if int64(len(p)) > a.left {
		p = p[:a.left]
	}
	n, err := a.r.Read(p)
	a.left -= int64(n)
	if err != nil && !errors.Is(err, io.EOF) && a.err == nil {
		a.err = err
	}
	if a.left <= 0 {
		return n, errAnswerTooLong
	}
	return n, err
}

// answerFailure explains err, met while consuming an answer read through a.
func (c *Client) answerFailure(ctx context.Context, a *answerReader, err error) error {
	switch {
	case a.err != nil:
		return fmt.Errorf("read answer: %w", c.readError(ctx, a.err))
	case errors.Is(err, errAnswerTooLong):
		return fmt.Errorf("answer longer than %d bytes", a.limit)
	default:
		return fmt.Errorf("malformed answer: %w", err)
	}
}

// answerError reads Kubo's error body {"Message": …, "Code": …}; a body of another shape (a
// proxy's page) becomes the message as text.
func answerError(resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	e := &Error{Status: resp.StatusCode}
	var body struct {
		Message string
		Code    int
	}
	if json.Unmarshal(b, &body) == nil && body.Message != "" {
		e.Message, e.Code = body.Message, body.Code
	} else {
		e.Message = strings.TrimSpace(string(b))
	}
	return e
}

// streamError reports an error the node sent after a 200 header, in the X-Stream-Error
// trailer; trailers are known once the body was read to its end.
func streamError(resp *http.Response) error {
	if msg := resp.Trailer.Get("X-Stream-Error"); msg != "" {
		return &Error{Status: resp.StatusCode, Message: msg}
	}
	return nil
}

// observe counts one operation by outcome and records its duration.
func (c *Client) observe(op string, start time.Time, err *error) {
	d := time.Since(start)
	outcome := outcomeOf(*err)
	c.m.requests.WithLabelValues(op, outcome).Inc()
	c.m.duration.WithLabelValues(op).Observe(d.Seconds())
	c.log.Debug("ipfs request", "op", op, "outcome", outcome, "duration", d)
}

func outcomeOf(err error) string {
	var apiErr *Error
	switch {
	case err == nil:
		return outcomeOK
	case errors.Is(err, ErrUnavailable):
		return outcomeUnavailable
	case errors.Is(err, ErrTooLarge):
		return outcomeTooLarge
	case errors.Is(err, ErrMismatch):
		return outcomeMismatch
	case errors.As(err, &apiErr):
		return outcomeError
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return outcomeCanceled
	default:
		return outcomeInvalid
	}
}
