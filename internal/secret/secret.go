// Package secret keeps secrets out of logs and error messages: it redacts the credentials that
// connection URLs carry.
package secret

import (
	"net/url"
	"strings"
)

// Redacted replaces a redacted value.
const Redacted = "xxxxx"

// sensitiveQuery are query parameters that carry credentials in the URLs anchord is given
// (libpq's password, RabbitMQ's and ledgers' tokens).
var sensitiveQuery = []string{"password", "pass", "pwd", "passwd", "secret", "token", "auth", "authorization", "key", "apikey", "api_key", "access_token", "sslpassword"}

// RedactURL hides the credentials of a URL: the password of its user information, and the value
// of every query parameter whose name says it is a secret. Anything that is not a URL with a
// scheme and a host (a bare token, unparsable input) is replaced entirely: it may be a secret
// itself.
func RedactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "<redacted>"
	}
	if u.RawQuery != "" {
		q := u.Query()
		changed := false
		for name := range q {
			if isSensitive(name) {
				q[name] = []string{Redacted}
				changed = true
			}
		}
		if changed {
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
}

func isSensitive(name string) bool {
	name = strings.ToLower(name)
	for _, s := range sensitiveQuery {
		if name == s {
			return true
		}
	}
	return false
}
