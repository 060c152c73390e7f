package restkit

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// OAuth is what the install flows' OAuth clients (githuboauth, slackoauth) share: the
// configuration check, the bounded exchange and the errors of the flow. No error carries a
// code, a token or an answer's body: OAuth error answers are reduced to their error code.
type OAuth struct {
	// Provider names every error ("github").
	Provider string
	// HTTP sends the requests.
	HTTP *http.Client
	// MaxAnswerBytes bounds what is read of one answer.
	MaxAnswerBytes int64
}

// oauthTimeout is the default HTTP client's timeout.
const oauthTimeout = 10 * time.Second

// NewOAuth checks an OAuth client's configuration: the client id and secret are set, and every
// root is an http(s) URL with a host. hc nil is a client with a 10 s timeout.
func NewOAuth(provider, clientID, clientSecret string, hc *http.Client, maxAnswerBytes int64, roots ...string) (OAuth, error) {
	if clientID == "" || clientSecret == "" {
		return OAuth{}, errors.New(provider + " oauth: client id and client secret are required")
	}
	for _, raw := range roots {
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return OAuth{}, fmt.Errorf("%s oauth: %q is not an http(s) URL", provider, raw)
		}
	}
	if hc == nil {
		hc = HTTPClient(oauthTimeout)
	}
	return OAuth{Provider: provider, HTTP: hc, MaxAnswerBytes: maxAnswerBytes}, nil
}

// Unavailable is a failure worth a retry (ports.ErrUnavailable); detail never holds a secret.
func (o OAuth) Unavailable(detail string) error {
	return fmt.Errorf("%s: %s: %w", o.Provider, detail, ports.ErrUnavailable)
}

// Refused is the provider's refusal of what (an OAuth error answer with code): the person's
// grant does not hold (ports.ErrUnauthenticated).
func (o OAuth) Refused(what, code string) error {
	return fmt.Errorf("%s: %s refused (%s): %w", o.Provider, what, SafeCode(code), ports.ErrUnauthenticated)
}

// Send makes req and reads its answer, at most MaxAnswerBytes. Errors: Unavailable (transport,
// read).
func (o OAuth) Send(req *http.Request) (*http.Response, []byte, error) {
	res, err := o.HTTP.Do(req)
	if err != nil {
		// url.Error names the URL, which holds no secret here (codes and tokens go in bodies
		// and headers).
		return nil, nil, o.Unavailable("request failed")
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, o.MaxAnswerBytes))
	if err != nil {
		return nil, nil, o.Unavailable("read answer")
	}
	return res, body, nil
}

var codePattern = regexp.MustCompile(`^[a-z_]{1,64}$`)

// SafeCode is an OAuth error code when it looks like one, else "unrecognised".
func SafeCode(code string) string {
	if codePattern.MatchString(code) {
		return code
	}
	return "unrecognised"
}
