package bootstrap

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"

	"github.com/hephaestus-dev/hephaestus/adapters/secrets"
	"github.com/hephaestus-dev/hephaestus/internal/envconfig"
)

// Files of generated secrets in the data directory (embedded mode only).
const (
	AdminTokenFile     = "admin-token"
	CredentialsKeyFile = "credentials-key"
)

// minAdminTokenLength mirrors management.MinAdminTokenLength: a configured token shorter than
// that is refused at start, naming the variable, rather than by the service constructor.
const minAdminTokenLength = 16

// instanceSecrets are the two process secrets after resolution.
type instanceSecrets struct {
	// AdminToken is never empty: when the admin API is disabled it is a random value that
	// nobody knows, so the management API still serves workspace members.
	AdminToken     string
	AdminDisabled  bool
	CredentialsKey []byte
	// CredentialsKeys, when set, are every key (the first is CredentialsKey and seals).
	CredentialsKeys []secrets.Key
}

// resolveSecrets fills the admin token and the credentials key. In embedded mode a missing
// one is read from, or generated into, the data directory; otherwise a missing credentials key
// is a configuration error and a missing admin token disables the instance administrator.
//
// A generated admin token is shown once, as a plain line on console (the process's stderr),
// never in the structured log: JSON logs are shipped and kept where a bearer token must not be.
func resolveSecrets(cfg Config, log *zap.Logger, console io.Writer) (instanceSecrets, error) {
	s := instanceSecrets{AdminToken: cfg.AdminToken, CredentialsKey: cfg.CredentialsKey, CredentialsKeys: cfg.CredentialsKeys}
	if !cfg.Embedded() {
		if s.CredentialsKey == nil {
			return s, &ConfigError{Problems: []Problem{{Variable: EnvCredentialsKey,
				Message: "is required when DATABASE_URL is set (32 random bytes, base64: `openssl rand -base64 32`)"}}}
		}
		if s.AdminToken == "" {
			log.Warn("HEPHAESTUS_ADMIN_TOKEN is unset: the instance administrator API is disabled; workspace members' tokens still work")
			token, err := randomToken()
			if err != nil {
				return s, err
			}
			s.AdminToken, s.AdminDisabled = token, true
		}
		return s, nil
	}

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return s, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	// Both files are checked before either is generated: a refused start changes nothing.
	for _, name := range []string{AdminTokenFile, CredentialsKeyFile} {
		if err := envconfig.CheckSecretFileMode(filepath.Join(cfg.DataDir, name)); err != nil {
			return s, err
		}
	}
	if s.AdminToken == "" {
		path := filepath.Join(cfg.DataDir, AdminTokenFile)
		token, created, err := readOrCreate(path, randomToken)
		if err != nil {
			return s, fmt.Errorf("admin token: %w", err)
		}
		if len(token) < minAdminTokenLength {
			return s, fmt.Errorf("%s holds a token shorter than %d characters: delete it to generate a new one", path, minAdminTokenLength)
		}
		if created {
			// The only place the admin token is ever written besides its file: once, when it
			// is generated, so the person running `make run` can use the API. Later starts
			// read the file and log only its path.
			fmt.Fprintf(console, "hephaestus: generated the instance administrator token (shown only now; kept in %s): %s\n", path, token)
			log.Info("generated the instance administrator token (printed on the console, not logged)", zap.String("file", path))
		} else {
			log.Info("using the instance administrator token from the data dir", zap.String("file", path))
		}
		s.AdminToken = token
	}
	if s.CredentialsKey == nil {
		path := filepath.Join(cfg.DataDir, CredentialsKeyFile)
		encoded, created, err := readOrCreate(path, randomKey)
		if err != nil {
			return s, fmt.Errorf("credentials key: %w", err)
		}
		key, err := decodeCredentialsKey(encoded)
		if err != nil {
			return s, fmt.Errorf("%s: %w (restore the file from a backup: connection secrets were encrypted with it)", path, err)
		}
		if created {
			log.Info("generated the credentials key", zap.String("file", path))
		}
		s.CredentialsKey = key
	}
	return s, nil
}

// readOrCreate returns the trimmed content of path, or writes generate()'s value there when
// the file does not exist or is empty. The file is written atomically: a temporary file of
// mode 0600 in the same directory, written and fsynced, renamed over path, and the directory
// fsynced, so a crash leaves either no file or the whole value, never the empty file that
// once blocked every later start. An empty file (left by an older version's crash) held no
// value anything could have used, so it is replaced. A file readable or writable by anyone
// but its owner is refused: the secret may have leaked, and the operator must decide.
// Starts are serialised by the data dir's lock, so two processes never race here.
func readOrCreate(path string, generate func() (string, error)) (value string, created bool, err error) {
	if err := envconfig.CheckSecretFileMode(path); err != nil {
		return "", false, err
	}
	_, err = os.Stat(path)
	switch {
	case err == nil:
		b, err := os.ReadFile(path)
		if err != nil {
			return "", false, err
		}
		if v := strings.TrimSpace(string(b)); v != "" {
			return v, false, nil
		}
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, err
	}
	v, err := generate()
	if err != nil {
		return "", false, err
	}
	if err := writeSecretFile(path, v+"\n"); err != nil {
		return "", false, err
	}
	return v, true, nil
}

// writeSecretFile writes content to path atomically with mode 0600 (see readOrCreate).
func writeSecretFile(path, content string) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	// CreateTemp makes the file 0600 already; Chmod states it whatever the umask did.
	werr := f.Chmod(0o600)
	if werr == nil {
		_, werr = f.WriteString(content)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if err := errors.Join(werr, f.Close()); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// The rename is durable once the directory entry is.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// randomToken is 32 random bytes in URL-safe base64: 43 characters, 256 bits.
func randomToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// randomKey is a fresh credentials key in standard base64.
func randomKey() (string, error) {
	var b [CredentialsKeySize]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b[:]), nil
}

// decodeCredentialsKey accepts every common spelling of base64: padded or not, standard or URL
// alphabet. The error never repeats the value.
func decodeCredentialsKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if key, err := enc.DecodeString(s); err == nil {
			if len(key) != CredentialsKeySize {
				return nil, fmt.Errorf("decodes to %d bytes, not %d (generate one with `openssl rand -base64 32`)", len(key), CredentialsKeySize)
			}
			return key, nil
		}
	}
	return nil, fmt.Errorf("is not base64 (standard or URL alphabet) of %d bytes", CredentialsKeySize)
}
