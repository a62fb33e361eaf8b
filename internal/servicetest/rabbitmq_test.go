package servicetest

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestRabbitMQ(t *testing.T) {
	t.Parallel()
	r := StartRabbitMQ(t)
	addr := r.URL()[len("amqp://guest:guest@") : len(r.URL())-1]
	require.NotEqual(t, "127.0.0.1:5672", addr, "a private port, not the shared broker's")

	// AMQP 0-9-1 handshake: the broker answers the protocol header with connection.start.
	handshake := func() error {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		require.NoError(t, c.SetDeadline(time.Now().Add(5*time.Second)))
		if _, err := c.Write([]byte("AMQP\x00\x00\x09\x01")); err != nil {
			return err
		}
		buf := make([]byte, 7)
		_, err = c.Read(buf)
		return err
	}
	require.NoError(t, handshake(), "started node accepts AMQP")
	r.StopApp()
	require.Error(t, handshake(), "stopped app closes the port")
	r.StartApp()
	require.NoError(t, handshake(), "restarted app accepts AMQP again")
	r.StopApp()
	r.Restore()
	require.NoError(t, handshake(), "Restore starts a stopped app")
	r.Kill()
	require.Error(t, handshake(), "killed node is gone")
	// Start after Kill is exercised by amqppubsub's TestPrivateBroker/BrokerKilled; a second
	// boot here would add ten seconds.
}
