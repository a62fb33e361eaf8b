package witnesslog

import (
	"cmp"
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	tesseramysql "github.com/transparency-dev/tessera/storage/mysql"
)

// Connection pool of the MariaDB backend. Appends use one connection at a time per instance
// (a batch is one transaction) and the publisher another; the rest serve reads.
const (
	mariaDBMaxOpenConns = 16
	mariaDBMaxIdleConns = 4
	// mariaDBConnMaxLifetime stays under the server's wait_timeout on any sane setup, so that
	// the pool never hands out a connection the server has already dropped.
	mariaDBConnMaxLifetime = 5 * time.Minute
)

// selectFlushAtCommitSQL reads whether InnoDB flushes its redo log at each commit (1).
const selectFlushAtCommitSQL = "SELECT @@innodb_flush_log_at_trx_commit"

//go:embed mariadb_schema.sql
var mariaDBSchema string

// OpenMariaDB opens the log stored in the MariaDB (or MySQL) database at dbURL with tessera's
// MySQL storage, creating its tables if they are missing: the cluster deployment. Every
// instance of a domain opens the same database; each appends, and sequencing is serialised by
// a row lock, so the log never forks. The database must hold this log only.
//
// dbURL is mysql://user:password@host:port/database, with go-sql-driver/mysql parameters as
// its query (e.g. ?timeout=5s).
func OpenMariaDB(ctx context.Context, cfg Config, dbURL string) (*Log, error) {
	mcfg, err := mariaDBConfig(dbURL)
	if err != nil {
		return nil, fmt.Errorf("open witness log: %w", err)
	}
	conn, err := mysql.NewConnector(mcfg)
	if err != nil {
		return nil, fmt.Errorf("open witness log: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(mariaDBMaxOpenConns)
	db.SetMaxIdleConns(mariaDBMaxIdleConns)
	db.SetConnMaxLifetime(mariaDBConnMaxLifetime)
	fail := func(err error) (*Log, error) {
		return nil, errors.Join(fmt.Errorf("open witness log in MariaDB database %s: %w", mcfg.DBName, err), db.Close())
	}
	if err := db.PingContext(ctx); err != nil {
		return fail(err)
	}
	if err := createMariaDBSchema(ctx, db); err != nil {
		return fail(err)
	}
	if err := checkMariaDBDurability(ctx, db, cfg.Logger); err != nil {
		return fail(err)
	}
	drv, err := tesseramysql.New(ctx, db)
	if err != nil {
		return fail(err)
	}
	return open(ctx, cfg, drv, "mariadb", db.Close, mariaDBCosigned{db: db})
}

// mariaDBConfig turns a mysql:// URL into the driver's configuration.
func mariaDBConfig(dbURL string) (*mysql.Config, error) {
	u, err := url.Parse(dbURL)
	if err != nil {
		return nil, fmt.Errorf("MariaDB URL: %w", err)
	}
	if u.Scheme != "mysql" && u.Scheme != "mariadb" {
		return nil, fmt.Errorf("MariaDB URL: scheme %q, want mysql:// or mariadb://", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("MariaDB URL: no host")
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	if dbName == "" || strings.Contains(dbName, "/") {
		return nil, fmt.Errorf("MariaDB URL: the path must name one database, got %q", u.Path)
	}
	// The query is the driver's own parameters; its DSN parser knows them.
	c, err := mysql.ParseDSN("/?" + u.RawQuery)
	if err != nil {
		return nil, fmt.Errorf("MariaDB URL parameters: %w", err)
	}
	c.Net = "tcp"
	c.Addr = net.JoinHostPort(u.Hostname(), cmp.Or(u.Port(), "3306"))
	c.DBName = dbName
	if u.User != nil {
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
	}
	return c, nil
}

func createMariaDBSchema(ctx context.Context, db *sql.DB) error {
	for stmt := range strings.SplitSeq(stripSQLComments(mariaDBSchema), ";") {
		if strings.TrimSpace(stmt) == "" {
			continue
		}
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("create the log's tables: %w", err)
		}
	}
	return nil
}

func stripSQLComments(s string) string {
	var b strings.Builder
	for line := range strings.SplitSeq(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// checkMariaDBDurability warns when the server does not flush its redo log at each commit: an
// index Append returned could then be lost with the server (not with an instance).
func checkMariaDBDurability(ctx context.Context, db *sql.DB, logger *slog.Logger) error {
	var flush int
	if err := db.QueryRowContext(ctx, selectFlushAtCommitSQL).Scan(&flush); err != nil {
		return fmt.Errorf("read innodb_flush_log_at_trx_commit: %w", err)
	}
	if flush != 1 && logger != nil {
		logger.Warn("witness log: the database does not flush its log at each commit; appended entries may be lost if the database server crashes",
			"innodb_flush_log_at_trx_commit", flush)
	}
	return nil
}
