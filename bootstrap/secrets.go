package bootstrap

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.uber.org/zap"
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
}

// resolveSecrets fills the admin token and the credentials key. In embedded mode a missing
// one is read from, or generated into, the data directory; otherwise a missing credentials key
// is a configuration error and a missing admin token disables the instance administrator.
func resolveSecrets(cfg Config, log *zap.Logger) (instanceSecrets, error) {
	s := instanceSecrets{AdminToken: cfg.AdminToken, CredentialsKey: cfg.CredentialsKey}
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
			// The only log line that ever carries the admin token: it is written once, when
			// the token is generated, so the person running `make run` can use the API.
			// Later starts read the file and log only its path.
			log.Info("generated the instance administrator token (shown only now; kept in the file)",
				zap.String("adminToken", token), zap.String("file", path))
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

// readOrCreate returns the trimmed content of path, or writes generate()'s value there with
// mode 0600 when the file does not exist. O_EXCL makes two racing starts agree on one value.
func readOrCreate(path string, generate func() (string, error)) (value string, created bool, err error) {
	for attempt := 0; attempt < 2; attempt++ {
		b, err := os.ReadFile(path)
		if err == nil {
			return strings.TrimSpace(string(b)), false, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", false, err
		}
		v, err := generate()
		if err != nil {
			return "", false, err
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // another process created it first: read theirs
		}
		if err != nil {
			return "", false, err
		}
		_, werr := f.WriteString(v + "\n")
		serr := f.Sync()
		cerr := f.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			_ = os.Remove(path)
			return "", false, fmt.Errorf("write %s: %w", path, err)
		}
		return v, true, nil
	}
	return "", false, fmt.Errorf("%s appeared and vanished while being created", path)
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
