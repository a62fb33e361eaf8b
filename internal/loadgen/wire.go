package loadgen

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// wire sends the measured requests over keep-alive HTTP/1.1 connections it holds itself, one
// request at a time on each.
//
// The generator shares the machine with the server it measures, so what it spends per request
// is taken from the server. net/http's Transport hands every request between three goroutines
// (the caller, the connection's writer and its reader) and builds a header map and a URL each
// time: ~33 µs of CPU per resolution at 64 connections, against ~80 µs for the server's own
// work. Written straight onto a connection and read back with http.ReadResponse (which still
// takes care of chunked bodies and Connection: close), a request costs a fraction of that.
type wire struct {
	timeout time.Duration
	ends    map[string]*wireEnd // by target, as Config.Targets gives it
}

// wireEnd is one target: where to dial, what to prefix to paths, and its idle connections.
type wireEnd struct {
	addr   string
	host   string // the Host header
	prefix string // the target's own path, prepended to every request's
	tls    *tls.Config
	idle   chan *wireConn
}

type wireConn struct {
	c  net.Conn
	br *bufio.Reader
	bw *bufio.Writer
}

// newWire returns a wire to targets (http or https base URLs), keeping up to idle connections
// open per target.
func newWire(targets []string, idle int, timeout time.Duration) (*wire, error) {
	w := &wire{timeout: timeout, ends: make(map[string]*wireEnd, len(targets))}
	for _, t := range targets {
		u, err := url.Parse(t)
		if err != nil {
			return nil, fmt.Errorf("target %q: %w", t, err)
		}
		e := &wireEnd{host: u.Host, prefix: u.EscapedPath(), idle: make(chan *wireConn, idle)}
		port := u.Port()
		switch u.Scheme {
		case "http":
			if port == "" {
				port = "80"
			}
		case "https":
			if port == "" {
				port = "443"
			}
			e.tls = &tls.Config{ServerName: u.Hostname(), MinVersion: tls.VersionTLS12}
		default:
			return nil, fmt.Errorf("target %q: not an http(s) URL", t)
		}
		e.addr = net.JoinHostPort(u.Hostname(), port)
		w.ends[t] = e
	}
	return w, nil
}

// close closes the idle connections.
func (w *wire) close() {
	for _, e := range w.ends {
		for drained := false; !drained; {
			select {
			case c := <-e.idle:
				c.c.Close()
			default:
				drained = true
			}
		}
	}
}

// do sends one request to target and returns the response's status (0 with the error when there
// was no answer) and, when keep is set, its body (else the body is read and dropped). A request that fails on a connection that had served
// others before is sent once more on a new one: the server may have closed it while it was idle.
// Sending an operation twice is safe, as anchord takes the same operation twice as one.
func (w *wire) do(ctx context.Context, target, method, path, contentType string, body []byte, keep bool) (int, []byte, error) {
	e, ok := w.ends[target]
	if !ok {
		return 0, nil, fmt.Errorf("unknown target %q", target)
	}
	for {
		c, reused, err := e.get(ctx, w.timeout)
		if err != nil {
			return 0, nil, err
		}
		status, respBody, closeAfter, err := c.roundTrip(ctx, e, w.timeout, method, path, contentType, body, keep)
		if err != nil {
			c.c.Close()
			if reused && ctx.Err() == nil {
				continue
			}
			return 0, nil, err
		}
		if closeAfter {
			c.c.Close()
		} else {
			e.put(c)
		}
		return status, respBody, nil
	}
}

// get returns an idle connection (reused) or a new one.
func (e *wireEnd) get(ctx context.Context, timeout time.Duration) (*wireConn, bool, error) {
	select {
	case c := <-e.idle:
		return c, true, nil
	default:
	}
	d := net.Dialer{Timeout: timeout}
	var c net.Conn
	var err error
	if e.tls != nil {
		c, err = (&tls.Dialer{NetDialer: &d, Config: e.tls}).DialContext(ctx, "tcp", e.addr)
	} else {
		c, err = d.DialContext(ctx, "tcp", e.addr)
	}
	if err != nil {
		return nil, false, err
	}
	return &wireConn{c: c, br: bufio.NewReaderSize(c, 8<<10), bw: bufio.NewWriterSize(c, 4<<10)}, false, nil
}

func (e *wireEnd) put(c *wireConn) {
	select {
	case e.idle <- c:
	default:
		c.c.Close()
	}
}

func (c *wireConn) roundTrip(ctx context.Context, e *wireEnd, timeout time.Duration, method, path, contentType string, body []byte, keep bool) (status int, respBody []byte, closeAfter bool, err error) {
	deadline := time.Now().Add(timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := c.c.SetDeadline(deadline); err != nil {
		return 0, nil, true, err
	}
	bw := c.bw
	bw.WriteString(method)
	bw.WriteByte(' ')
	bw.WriteString(e.prefix)
	bw.WriteString(path)
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(e.host)
	bw.WriteString("\r\nUser-Agent: anchord-loadgen\r\n")
	if body != nil {
		bw.WriteString("Content-Type: ")
		bw.WriteString(contentType)
		bw.WriteString("\r\nContent-Length: ")
		bw.WriteString(strconv.Itoa(len(body)))
		bw.WriteString("\r\n")
	}
	bw.WriteString("\r\n")
	bw.Write(body)
	if err := bw.Flush(); err != nil {
		return 0, nil, true, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, nil, true, err
	}
	if keep {
		respBody, err = io.ReadAll(resp.Body)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
	if err != nil {
		return 0, nil, true, err
	}
	return resp.StatusCode, respBody, resp.Close, nil
}
