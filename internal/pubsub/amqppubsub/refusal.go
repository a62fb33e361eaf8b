package amqppubsub

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	amqp "github.com/rabbitmq/amqp091-go"
)

// ErrRefused marks a start the broker refused for a reason waiting cannot fix: credentials it
// does not accept, a virtual host that does not exist or that the user may not use. New
// returns it at once instead of waiting, as it does for an unreachable broker.
var ErrRefused = errors.New("RabbitMQ refuses this configuration")

// refusal returns err as an ErrRefused that says what to change, or nil when err is not a
// refusal (a broker that is down or restarting is waited for). Only the start treats refusals
// as final: a running instance keeps retrying, since a broker being restarted with its
// definitions loading can refuse a vhost for a moment.
func refusal(rawURL string, err error) error {
	var ae *amqp.Error
	if !errors.As(err, &ae) {
		return nil
	}
	vhost, user := "/", "guest"
	if u, perr := url.Parse(rawURL); perr == nil {
		if p := strings.TrimPrefix(u.Path, "/"); p != "" {
			vhost, _ = url.PathUnescape(p)
		}
		if u.User != nil {
			user = u.User.Username()
		}
	}
	var hint string
	switch {
	case ae.Code == amqp.NotAllowed || strings.Contains(strings.ToLower(ae.Reason), "vhost"):
		hint = fmt.Sprintf("virtual host %q is missing or closed to user %q: create it and grant access "+
			"(rabbitmqctl add_vhost %s; rabbitmqctl set_permissions -p %s %s '.*' '.*' '.*'), or name an existing one as the URL's path",
			vhost, user, vhost, vhost, user)
	case ae.Code == amqp.AccessRefused:
		hint = fmt.Sprintf("the broker does not accept user %q with this password: put credentials it accepts in the URL (amqp://user:password@host:port/vhost)", user)
	default:
		return nil
	}
	return fmt.Errorf("%w: %s (%d %s)", ErrRefused, hint, ae.Code, replyName(ae.Code))
}

// replyName is the AMQP reply code's name, as RabbitMQ's logs and management UI show it.
func replyName(code int) string {
	switch code {
	case amqp.AccessRefused:
		return "ACCESS_REFUSED"
	case amqp.NotAllowed:
		return "NOT_ALLOWED"
	}
	return "reply code"
}
