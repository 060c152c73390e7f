package pgembedded

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Who may connect. The cluster's superuser has a generated password, kept in DataDir in a
// file only the process that started the cluster can read (mode 0600, owned by that user: the
// hephaestus or pgcluster process, root included), and every connection, over the unix socket
// or over 127.0.0.1, must prove it with scram-sha-256. The server's own OS user (postgres, when
// we run as root) never needs the file, and another local user can reach the port but cannot
// log in. The socket directory is 0700 as well.
const (
	// PasswordFile holds the superuser's password in DataDir.
	PasswordFile = "superuser-password"
	// hbaConf allows the superuser's password over the socket and loopback, nothing else.
	hbaConf = "# Written by hephaestus: every connection proves the generated password.\n" +
		"local   all             all                                     scram-sha-256\n" +
		"host    all             all             127.0.0.1/32            scram-sha-256\n" +
		"host    all             all             ::1/128                 scram-sha-256\n" +
		"local   replication     all                                     scram-sha-256\n" +
		"host    replication     all             127.0.0.1/32            scram-sha-256\n"
)

// ensurePassword reads the superuser's password from DataDir, or generates and writes it
// (atomically, 0600) when missing. A file others may read is refused: the password may leak.
func (c *Cluster) ensurePassword() (string, error) {
	path := filepath.Join(c.dataDir, PasswordFile)
	pw, err := readPassword(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return pw, err
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	pw = hex.EncodeToString(b[:]) // no character that needs escaping in a URL or SQL literal
	tmp, err := os.CreateTemp(c.dataDir, "."+PasswordFile+".tmp-*")
	if err != nil {
		return "", fmt.Errorf("embedded postgres: write password file: %w", err)
	}
	_, werr := tmp.WriteString(pw + "\n")
	if werr == nil {
		werr = tmp.Sync()
	}
	if err := errors.Join(werr, tmp.Close()); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("embedded postgres: write password file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("embedded postgres: write password file: %w", err)
	}
	return pw, nil
}

// readPassword reads the password file; a missing file is fs.ErrNotExist (a cluster of an older
// version, which trusted local connections: Start moves it to passwords).
func readPassword(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if info.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("embedded postgres: %s has mode %04o, readable by others; it holds the database password: "+
			"chmod 600 %s", path, info.Mode().Perm(), path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	pw := strings.TrimSpace(string(b))
	if pw == "" {
		return "", fmt.Errorf("embedded postgres: %s is empty: delete it only together with the cluster", path)
	}
	return pw, nil
}

// initdbPasswordFile writes the password where initdb (running as the server user when we are
// root) can read it, for --pwfile; remove it once initdb ran.
func (c *Cluster) initdbPasswordFile() (path string, remove func(), err error) {
	f, err := os.CreateTemp(c.dataDir, ".initdb-pw-*")
	if err != nil {
		return "", nil, fmt.Errorf("embedded postgres: initdb password file: %w", err)
	}
	path = f.Name()
	remove = func() { _ = os.Remove(path) }
	_, werr := f.WriteString(c.password + "\n")
	if err := errors.Join(werr, f.Close()); err != nil {
		remove()
		return "", nil, fmt.Errorf("embedded postgres: initdb password file: %w", err)
	}
	if err := c.run.chownTree(path); err != nil {
		remove()
		return "", nil, fmt.Errorf("embedded postgres: initdb password file: %w", err)
	}
	return path, remove, nil
}

// trustsLocal reports whether pg_hba.conf still lets local connections in without a password
// (a cluster initialized by an older version).
func (c *Cluster) trustsLocal() (bool, error) {
	b, err := os.ReadFile(filepath.Join(c.pgData, "pg_hba.conf"))
	if err != nil {
		return false, fmt.Errorf("embedded postgres: read pg_hba.conf: %w", err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		fields := strings.Fields(string(line))
		if len(fields) > 0 && !strings.HasPrefix(fields[0], "#") && fields[len(fields)-1] == "trust" {
			return true, nil
		}
	}
	return false, nil
}

// requirePassword moves a running cluster of an older version from trust to the password:
// it sets the superuser's password (over the still trusted connection), rewrites
// pg_hba.conf and reloads it.
func (c *Cluster) requirePassword(ctx context.Context) error {
	trusts, err := c.trustsLocal()
	if err != nil || !trusts {
		return err
	}
	c.logf("requiring the generated password for every connection (the cluster trusted local connections)")
	conn, err := connect(ctx, c.urlWithPassword("postgres", ""))
	if err != nil {
		return c.failure("connect to PostgreSQL to set its password", nil, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "SET password_encryption = 'scram-sha-256'"); err != nil {
		return fmt.Errorf("embedded postgres: set password encryption: %w", err)
	}
	// The password is hex: a literal needs no escaping (ALTER ROLE takes no parameters).
	if _, err := conn.Exec(ctx, "ALTER ROLE "+superuser+" PASSWORD '"+c.password+"'"); err != nil {
		return fmt.Errorf("embedded postgres: set superuser password: %w", err)
	}
	hba := filepath.Join(c.pgData, "pg_hba.conf")
	if err := os.WriteFile(hba, []byte(hbaConf), 0o600); err != nil { // keeps the file's owner
		return fmt.Errorf("embedded postgres: write pg_hba.conf: %w", err)
	}
	if _, err := conn.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("embedded postgres: reload pg_hba.conf: %w", err)
	}
	return nil
}
