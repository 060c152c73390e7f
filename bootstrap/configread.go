package bootstrap

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap/zapcore"

	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// MinChangesStreamMax keeps streams from churning: shorter, a stream would end before the
// heartbeat and re-authorisation interval (15 s) has passed a few times.
const MinChangesStreamMax = time.Minute

// traceURL is an http(s) URL template that names the trace id as {traceId}, or "".
func traceURL(r *envconfig.Reader, name string) string {
	v := r.HTTPURL(name, "")
	if v == "" || r.Invalid(name) {
		return ""
	}
	if !strings.Contains(v, "{traceId}") {
		r.Fail(name, "does not name the trace id as {traceId}")
		return ""
	}
	return v
}

func databaseURL(r *envconfig.Reader) string {
	v, ok := r.Get(EnvDatabaseURL)
	if !ok {
		return ""
	}
	// pgconn's error redacts the password; the value itself is never echoed.
	pc, err := pgconn.ParseConfig(v)
	if err != nil {
		r.Fail(EnvDatabaseURL, "is not a PostgreSQL connection string (%v)", err)
		return v
	}
	if hosts := databaseHosts(pc); len(hosts) > 1 && !writableOnly(pc) {
		r.Fail(EnvDatabaseURL, "names %d hosts (%s) without target_session_attrs=read-write (or primary): "+
			"a connection could reach a standby or a demoted primary and every write would fail; add "+
			"target_session_attrs=read-write (docs/operations/database-failover.md)", len(hosts), strings.Join(hosts, ", "))
	}
	return v
}

// databaseHosts lists the distinct host:port pairs a connection string names (a multi-host URL
// of a high-availability formation names each node). pgconn lists a host twice when sslmode
// lets it retry without TLS, so duplicates are dropped.
func databaseHosts(pc *pgconn.Config) []string {
	seen := map[string]bool{}
	var hosts []string
	add := func(host string, port uint16) {
		hp := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if !seen[hp] {
			seen[hp] = true
			hosts = append(hosts, hp)
		}
	}
	add(pc.Host, pc.Port)
	for _, f := range pc.Fallbacks {
		add(f.Host, f.Port)
	}
	return hosts
}

// writableOnly reports whether the connection string accepts only a session that can write:
// target_session_attrs=read-write or primary (from the URL or PGTARGETSESSIONATTRS).
func writableOnly(pc *pgconn.Config) bool {
	if pc.ValidateConnect == nil {
		return false
	}
	got := reflect.ValueOf(pc.ValidateConnect).Pointer()
	return got == reflect.ValueOf(pgconn.ValidateConnectTargetSessionAttrsReadWrite).Pointer() ||
		got == reflect.ValueOf(pgconn.ValidateConnectTargetSessionAttrsPrimary).Pointer()
}

func listenAddr(r *envconfig.Reader, name, def string) string {
	v, ok := r.Get(name)
	if !ok {
		return def
	}
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		r.Fail(name, "%q is not a listen address like :8080 or 127.0.0.1:8080", v)
		return def
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		r.Fail(name, "%q has no valid port (0-65535)", v)
		return def
	}
	return v
}

func credentialsKeys(r *envconfig.Reader) []secrets.Key {
	v, ok := r.Get(EnvCredentialsKey)
	if !ok {
		return nil
	}
	keys, err := secrets.ParseKeys(v, decodeCredentialsKey)
	if err != nil {
		r.Fail(EnvCredentialsKey, "%v", err)
		return nil
	}
	return keys
}

func adminToken(r *envconfig.Reader) string {
	v := r.Secret(EnvAdminToken)
	if v != "" && len(v) < minAdminTokenLength {
		// The length only: the value is a secret.
		r.Fail(EnvAdminToken, "is shorter than %d characters", minAdminTokenLength)
		return ""
	}
	return v
}

// secureCookies reads EnvCookieSecure ("true" or "false", either way the setting wins); unset,
// cookies are Secure when the public URL (already read and valid) is https.
func secureCookies(r *envconfig.Reader, publicURL string) bool {
	switch r.OneOf(EnvCookieSecure, "", "true", "false") {
	case "true":
		return true
	case "false":
		return false
	}
	u, err := url.Parse(publicURL)
	return publicURL != "" && err == nil && u.Scheme == "https"
}

func logLevel(r *envconfig.Reader) string {
	v, ok := r.Get(EnvLogLevel)
	if !ok {
		return DefaultLogLevel
	}
	lvl, err := zapcore.ParseLevel(v)
	if err != nil {
		r.Fail(EnvLogLevel, "%q is not a log level (debug, info, warn, error)", v)
		return DefaultLogLevel
	}
	return lvl.String()
}

func serverID(r *envconfig.Reader) string {
	if v, ok := r.Get(EnvServerID); ok {
		if len(v) > 200 {
			r.Fail(EnvServerID, "is longer than 200 characters")
		}
		return v
	}
	return defaultServerID()
}

// defaultServerID is hostname-pid-random: unique among servers sharing one database even when
// two processes of one host get the same pid in different containers.
func defaultServerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "hephaestus"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// crossCheck builds the domain's retry policy and lease timing: the domain constructors are
// the rule, this only says which variables broke it. Variables already reported are skipped
// so one typo gives one line.
func crossCheck(r *envconfig.Reader, c *ConsumerConfig) {
	if !r.Invalid(EnvPoisonBaseDelay) && !r.Invalid(EnvPoisonMaxDelay) && !r.Invalid(EnvPoisonMaxAttempts) {
		p, err := inbox.NewRetryPolicy(c.PoisonBaseDelay, c.PoisonMaxDelay, c.PoisonMaxAttempts)
		if err != nil {
			r.Fail(EnvPoisonMaxDelay, "%s with %s %s: %v", c.PoisonMaxDelay, EnvPoisonBaseDelay, c.PoisonBaseDelay, err)
		}
		c.Retry = p
	}
	if !r.Invalid(EnvLeaseDuration) && !r.Invalid(EnvRenewInterval) && !r.Invalid(EnvHandlerTimeout) {
		t, err := inbox.NewLeaseTiming(c.LeaseDuration, c.RenewInterval, c.HandlerTimeout)
		if err != nil {
			r.Fail(EnvRenewInterval, "%s with %s %s: %v", c.RenewInterval, EnvLeaseDuration, c.LeaseDuration, err)
		}
		c.Lease = t
	}
}
