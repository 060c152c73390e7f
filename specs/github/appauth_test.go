package github_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubhandlers"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/adapters/postgres/managementstore"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/specs/support"
)

const specAppID = "424242"

// movingClock is a clock a spec moves; the App signs with it and the fake GitHub verifies
// and dates its tokens with it.
type movingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *movingClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *movingClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fakeGitHubApp is GitHub's App endpoints on an httptest server under a GitHub Enterprise API
// root. It verifies every App JWT against the App's public key (RS256, issuer, iat and exp,
// exp at most 10 minutes ahead) and answers 401 as GitHub does otherwise; installation tokens
// are "ghs_{installation}_{n}", valid for an hour; reads under /repos/ record the bearer.
type fakeGitHubApp struct {
	srv   *httptest.Server
	pub   *rsa.PublicKey
	clock *movingClock

	mu          sync.Mutex
	mints       map[int64]int
	rejected    []string        // why JWTs were refused
	claims      []jwt.MapClaims // of accepted JWTs
	reads       []string        // "path Authorization"
	revoked     map[string]bool // installation tokens the fake answers 401 to (revoked early)
	suspended   map[int64]bool
	gone        map[int64]bool
	statusFails bool
	mintGate    chan struct{} // when not nil, a mint waits for it to close
	mintStarted atomic.Int64
}

func newFakeGitHubApp(pub *rsa.PublicKey, clock *movingClock) *fakeGitHubApp {
	f := &fakeGitHubApp{pub: pub, clock: clock, mints: map[int64]int{}, suspended: map[int64]bool{}, gone: map[int64]bool{},
		revoked: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v3/app/installations/{id}/access_tokens", func(w http.ResponseWriter, r *http.Request) {
		if !f.verify(w, r) {
			return
		}
		f.mintStarted.Add(1)
		f.mu.Lock()
		gate := f.mintGate
		f.mu.Unlock()
		if gate != nil {
			<-gate
		}
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		f.mu.Lock()
		f.mints[id]++
		n := f.mints[id]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"token":"ghs_%d_%d","expires_at":%q,"permissions":{"issues":"read"},"repository_selection":"selected"}`,
			id, n, f.clock.Now().Add(time.Hour).UTC().Format(time.RFC3339))
	})
	mux.HandleFunc("GET /api/v3/app/installations/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !f.verify(w, r) {
			return
		}
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		f.mu.Lock()
		fails, gone, suspended := f.statusFails, f.gone[id], f.suspended[id]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case fails:
			w.WriteHeader(http.StatusBadGateway)
		case gone:
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"message":"Not Found","documentation_url":"https://docs.github.com/rest/apps/apps#get-an-installation-for-the-authenticated-app"}`)
		default:
			suspendedAt := "null"
			if suspended {
				suspendedAt = `"2024-03-01T00:00:00Z"`
			}
			fmt.Fprintf(w, `{"id":%d,"account":{"login":"acme-org","id":99},"app_id":%s,"target_type":"Organization","suspended_at":%s}`,
				id, specAppID, suspendedAt)
		}
	})
	mux.HandleFunc("GET /api/v3/repos/", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.reads = append(f.reads, r.URL.Path+" "+r.Header.Get("Authorization"))
		revoked := f.revoked[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if revoked {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"message":"Bad credentials","documentation_url":"https://docs.github.com/rest"}`)
			return
		}
		fmt.Fprint(w, `{"total_count":0,"check_runs":[]}`)
	})
	f.srv = httptest.NewServer(mux)
	DeferCleanup(f.srv.Close)
	return f
}

// verify checks the request's App JWT as GitHub does and answers 401 when it fails.
func (f *fakeGitHubApp) verify(w http.ResponseWriter, r *http.Request) bool {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	claims := jwt.MapClaims{}
	var err error
	if !ok {
		err = fmt.Errorf("no bearer")
	} else {
		_, err = jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return f.pub, nil },
			jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(specAppID), jwt.WithIssuedAt(),
			jwt.WithExpirationRequired(), jwt.WithTimeFunc(f.clock.Now))
	}
	if err == nil {
		exp, _ := claims.GetExpirationTime()
		if exp.Sub(f.clock.Now()) > 10*time.Minute {
			err = fmt.Errorf("exp more than 10 minutes ahead")
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err != nil {
		f.rejected = append(f.rejected, err.Error())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"message":"A JSON web token could not be decoded","documentation_url":"https://docs.github.com/rest"}`)
		return false
	}
	f.claims = append(f.claims, claims)
	return true
}

func (f *fakeGitHubApp) mintsOf(id int64) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mints[id]
}

func (f *fakeGitHubApp) readAuth() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.reads...)
}

func rsaKey() (*rsa.PrivateKey, []byte) {
	GinkgoHelper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	Expect(err).NotTo(HaveOccurred())
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

var _ = Describe("GitHub App authentication", func() {
	var (
		key   *rsa.PrivateKey
		clock *movingClock
		fake  *fakeGitHubApp
	)

	BeforeEach(func() {
		var pemKey []byte
		key, pemKey = rsaKey()
		parsed, err := githubapi.ParseAppPrivateKey(pemKey)
		Expect(err).NotTo(HaveOccurred())
		Expect(parsed.Equal(key)).To(BeTrue())
		clock = &movingClock{now: time.Now()}
		fake = newFakeGitHubApp(&key.PublicKey, clock)
	})

	appWith := func(k *rsa.PrivateKey, now func() time.Time) *githubapi.App {
		GinkgoHelper()
		app, err := githubapi.NewApp(githubapi.AppConfig{BaseURL: fake.srv.URL + "/api/v3", AppID: specAppID, Key: k, Now: now})
		Expect(err).NotTo(HaveOccurred())
		return app
	}

	It("signs RS256 JWTs the App's public key verifies: iss the App id, iat 60 s in the past, exp at most 10 minutes ahead", func(ctx SpecContext) {
		_, err := appWith(key, clock.Now).InstallationToken(ctx, 4711)
		Expect(err).NotTo(HaveOccurred())
		fake.mu.Lock()
		defer fake.mu.Unlock()
		Expect(fake.rejected).To(BeEmpty())
		Expect(fake.claims).To(HaveLen(1))
		iat, _ := fake.claims[0].GetIssuedAt()
		exp, _ := fake.claims[0].GetExpirationTime()
		Expect(clock.Now().Sub(iat.Time)).To(BeNumerically("~", 60*time.Second, time.Second))
		Expect(exp.Sub(clock.Now())).To(And(BeNumerically(">", 0), BeNumerically("<=", 10*time.Minute)))
		Expect(fake.claims[0]["iss"]).To(Equal(specAppID))
	})

	It("is refused by GitHub with a JWT signed by another key, or expired, and no error shows a JWT", func(ctx SpecContext) {
		other, _ := rsaKey()
		_, err := appWith(other, clock.Now).InstallationToken(ctx, 4711)
		Expect(err).To(HaveOccurred())
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRefused))
		Expect(err.Error()).NotTo(ContainSubstring("eyJ"), "no JWT in the error")

		stale := func() time.Time { return clock.Now().Add(-11 * time.Minute) }
		_, err = appWith(key, stale).InstallationToken(ctx, 4711)
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRefused))

		Expect(fake.mintsOf(4711)).To(BeZero())
		fake.mu.Lock()
		defer fake.mu.Unlock()
		Expect(fake.rejected).To(HaveLen(2))
		Expect(fake.rejected[0]).To(ContainSubstring("signature"))
		Expect(fake.rejected[1]).To(ContainSubstring("expired"))
	})

	It("caches an installation's token until five minutes before its expires_at, per installation", func(ctx SpecContext) {
		app := appWith(key, clock.Now)
		first, err := app.InstallationToken(ctx, 4711)
		Expect(err).NotTo(HaveOccurred())
		Expect(first).To(Equal("ghs_4711_1"))

		clock.advance(54 * time.Minute)
		Expect(app.InstallationToken(ctx, 4711)).To(Equal("ghs_4711_1"), "still six minutes left")
		Expect(app.InstallationToken(ctx, 5000)).To(Equal("ghs_5000_1"), "another installation has its own token")

		clock.advance(2 * time.Minute)
		Expect(app.InstallationToken(ctx, 4711)).To(Equal("ghs_4711_2"), "four minutes left: a new token")
		Expect(fake.mintsOf(4711)).To(Equal(2))
		Expect(fake.mintsOf(5000)).To(Equal(1))
	})

	It("mints once for many concurrent callers of one installation, and they all get that token", func(ctx SpecContext) {
		app := appWith(key, clock.Now)
		gate := make(chan struct{})
		fake.mu.Lock()
		fake.mintGate = gate
		fake.mu.Unlock()

		const callers = 64
		var (
			started atomic.Int64
			wg      sync.WaitGroup
			tokens  = make([]string, callers)
			errs    = make([]error, callers)
		)
		for i := range callers {
			wg.Go(func() {
				started.Add(1)
				tokens[i], errs[i] = app.InstallationToken(ctx, 4711)
			})
		}
		Eventually(started.Load).WithContext(ctx).Should(Equal(int64(callers)))
		Eventually(fake.mintStarted.Load).WithContext(ctx).Should(BeNumerically(">=", 1))
		close(gate)
		wg.Wait()
		for i := range callers {
			Expect(errs[i]).NotTo(HaveOccurred())
			Expect(tokens[i]).To(Equal("ghs_4711_1"))
		}
		Expect(fake.mintsOf(4711)).To(Equal(1))
		Expect(fake.mintStarted.Load()).To(Equal(int64(1)))
	})

	DescribeTable("treats GitHub's rate limits of a mint as transient, waiting at least what GitHub asked",
		func(ctx SpecContext, status int, header map[string]string, atLeast time.Duration) {
			limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				for k, v := range header {
					if v == "in 20m" { // epoch seconds, computed when the request is answered
						v = strconv.FormatInt(time.Now().Add(20*time.Minute).Unix(), 10)
					}
					w.Header().Set(k, v)
				}
				w.WriteHeader(status)
				fmt.Fprint(w, `{"message":"API rate limit exceeded"}`)
			}))
			DeferCleanup(limited.Close)
			app, err := githubapi.NewApp(githubapi.AppConfig{BaseURL: limited.URL, AppID: specAppID, Key: key})
			Expect(err).NotTo(HaveOccurred())
			_, err = app.InstallationToken(ctx, 4711)
			var perr *inbox.ProviderError
			Expect(errors.As(err, &perr)).To(BeTrue(), "%v", err)
			Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRateLimit))
			Expect(perr.RetryAfter).To(BeNumerically("~", atLeast, 5*time.Second))
		},
		Entry("a secondary limit (403 with Retry-After)", http.StatusForbidden, map[string]string{"Retry-After": "60"}, time.Minute),
		Entry("a 429 with Retry-After", http.StatusTooManyRequests, map[string]string{"Retry-After": "30"}, 30*time.Second),
		Entry("the primary limit (X-RateLimit-Remaining 0 until X-RateLimit-Reset)", http.StatusForbidden, map[string]string{
			"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "in 20m",
		}, 20*time.Minute),
	)

	Describe("which credential a GitHub read carries", func() {
		var (
			live              *managementstore.LiveSecrets
			acme, globex, ini int64
		)

		BeforeEach(func(ctx SpecContext) {
			box := support.SecretBox()
			var err error
			live, err = managementstore.NewLiveSecrets(pool, box)
			Expect(err).NotTo(HaveOccurred())
			acme, globex, ini = newWorkspace(ctx, "acme"), newWorkspace(ctx, "globex"), newWorkspace(ctx, "initech")
			appConnection(ctx, acme, 4711, "ACTIVE")
			// globex reads repository 1001 through acme's installation with its verified PAT.
			var pat int64
			Expect(pool.QueryRow(ctx, `
				INSERT INTO connection (workspace_id, kind, provider, state, source_server_url, config)
				VALUES ($1, 'GITHUB_PAT', 'GITHUB', 'ACTIVE', 'https://github.com', '{"login":"gina"}') RETURNING id`, globex).Scan(&pat)).To(Succeed())
			sealed, err := box.Seal(pat, []byte("ghp_globex"))
			Expect(err).NotTo(HaveOccurred())
			_, err = pool.Exec(ctx, `UPDATE connection SET secret_ciphertext = $2 WHERE id = $1`, pat, sealed)
			Expect(err).NotTo(HaveOccurred())
			subscribe(ctx, globex, pat, "repository", 1001)
			subscribe(ctx, globex, pat, "repository", 1002)
			_, err = pool.Exec(ctx, `UPDATE connection_subscription SET access = 'REVOKED' WHERE resource_id = '1002'`)
			Expect(err).NotTo(HaveOccurred())
		})

		clientWith := func(app *githubapi.App) *githubapi.Client {
			GinkgoHelper()
			creds := &githubapi.Credentials{App: app, Store: live}
			c, err := githubapi.New(githubapi.Config{BaseURL: fake.srv.URL + "/api/v3", Token: creds.Token, Rejected: creds.Rejected})
			Expect(err).NotTo(HaveOccurred())
			return c
		}

		It("uses the installation token for the App's workspace, the verified PAT for a PAT workspace, and nothing else's", func(ctx SpecContext) {
			c := clientWith(appWith(key, clock.Now))
			_, err := c.CheckRunsForRef(ctx, githubmodel.Access{WorkspaceID: acme, InstallationID: 4711, RepositoryID: 1001}, "acme-org/hello", "main")
			Expect(err).NotTo(HaveOccurred())
			_, err = c.CheckRunsForRef(ctx, githubmodel.Access{WorkspaceID: globex, InstallationID: 4711, RepositoryID: 1001}, "acme-org/hello", "main")
			Expect(err).NotTo(HaveOccurred())

			// A revoked subscription, a workspace with no credential, and a foreign installation:
			// no read with anyone else's token, and no static fallback while an App key is set.
			for _, acc := range []githubmodel.Access{
				{WorkspaceID: globex, InstallationID: 4711, RepositoryID: 1002},
				{WorkspaceID: ini, InstallationID: 4711, RepositoryID: 1001},
				{WorkspaceID: globex, InstallationID: 9999, RepositoryID: 1003},
			} {
				_, err = c.CheckRunsForRef(ctx, acc, "acme-org/hello", "main")
				Expect(err).To(MatchError(githubapi.ErrNoCredential), "%+v", acc)
			}
			Expect(fake.readAuth()).To(Equal([]string{
				"/api/v3/repos/acme-org/hello/commits/main/check-runs Bearer ghs_4711_1",
				"/api/v3/repos/acme-org/hello/commits/main/check-runs Bearer ghp_globex",
			}))
		})

		It("has no instance-wide fallback: without an App key only a verified PAT reads, an App workspace reads nothing", func(ctx SpecContext) {
			c := clientWith(nil)
			_, err := c.CheckRunsForRef(ctx, githubmodel.Access{WorkspaceID: acme, InstallationID: 4711, RepositoryID: 1001}, "acme-org/hello", "main")
			Expect(err).To(MatchError(githubapi.ErrNoCredential))
			Expect(err).To(MatchError(githubmodel.ErrProviderNotFound), "a handler then has nothing to read and mirrors the payload")
			_, err = c.CheckRunsForRef(ctx, githubmodel.Access{WorkspaceID: ini, InstallationID: 4711, RepositoryID: 1001}, "acme-org/hello", "main")
			Expect(err).To(MatchError(githubapi.ErrNoCredential))
			_, err = c.CheckRunsForRef(ctx, githubmodel.Access{WorkspaceID: globex, InstallationID: 4711, RepositoryID: 1001}, "acme-org/hello", "main")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.readAuth()).To(Equal([]string{
				"/api/v3/repos/acme-org/hello/commits/main/check-runs Bearer ghp_globex",
			}))
		})

		It("drops an installation token GitHub answers 401 from the cache and reads once more with a newly minted one", func(ctx SpecContext) {
			c := clientWith(appWith(key, clock.Now))
			acc := githubmodel.Access{WorkspaceID: acme, InstallationID: 4711, RepositoryID: 1001}
			_, err := c.CheckRunsForRef(ctx, acc, "acme-org/hello", "main")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.mintsOf(4711)).To(Equal(1))

			// GitHub revokes the cached token long before its expires_at.
			fake.mu.Lock()
			fake.revoked["ghs_4711_1"] = true
			fake.mu.Unlock()
			_, err = c.CheckRunsForRef(ctx, acc, "acme-org/hello", "main")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.mintsOf(4711)).To(Equal(2))
			_, err = c.CheckRunsForRef(ctx, acc, "acme-org/hello", "main")
			Expect(err).NotTo(HaveOccurred())
			Expect(fake.mintsOf(4711)).To(Equal(2), "the new token is cached again")
			Expect(fake.readAuth()).To(Equal([]string{
				"/api/v3/repos/acme-org/hello/commits/main/check-runs Bearer ghs_4711_1",
				"/api/v3/repos/acme-org/hello/commits/main/check-runs Bearer ghs_4711_1",
				"/api/v3/repos/acme-org/hello/commits/main/check-runs Bearer ghs_4711_2",
				"/api/v3/repos/acme-org/hello/commits/main/check-runs Bearer ghs_4711_2",
			}))
		})

		It("mints again only once: a new token GitHub also answers 401 is a refusal, not a loop", func(ctx SpecContext) {
			c := clientWith(appWith(key, clock.Now))
			acc := githubmodel.Access{WorkspaceID: acme, InstallationID: 4711, RepositoryID: 1001}
			fake.mu.Lock()
			fake.revoked["ghs_4711_1"], fake.revoked["ghs_4711_2"], fake.revoked["ghs_4711_3"] = true, true, true
			fake.mu.Unlock()
			_, err := c.CheckRunsForRef(ctx, acc, "acme-org/hello", "main")
			var pe *inbox.ProviderError
			Expect(errors.As(err, &pe)).To(BeTrue())
			Expect(pe.Status).To(Equal(http.StatusUnauthorized))
			Expect(err.Error()).NotTo(ContainSubstring("ghs_"))
			Expect(fake.mintsOf(4711)).To(Equal(2))
			Expect(fake.readAuth()).To(HaveLen(2))
		})

		It("never mints again for a PAT GitHub answers 401", func(ctx SpecContext) {
			c := clientWith(appWith(key, clock.Now))
			fake.mu.Lock()
			fake.revoked["ghp_globex"] = true
			fake.mu.Unlock()
			_, err := c.CheckRunsForRef(ctx, githubmodel.Access{WorkspaceID: globex, InstallationID: 4711, RepositoryID: 1001}, "acme-org/hello", "main")
			Expect(err).To(HaveOccurred())
			Expect(fake.readAuth()).To(HaveLen(1))
			Expect(fake.mintsOf(4711)).To(BeZero())
		})
	})

	Describe("the installation handler", func() {
		const installationID = 4711
		var conn int64

		BeforeEach(func(ctx SpecContext) {
			conn = appConnection(ctx, newWorkspace(ctx, "acme"), installationID, "ACTIVE")
		})

		handle := func(ctx SpecContext, action string, updatedAt int64) (*delivery, error) {
			d := leased(ctx, 0, "installation", installationBody(action, installationID, updatedAt))
			return d, d.handle(ctx, registry(githubhandlers.Deps{Installations: appWith(key, clock.Now)}))
		}

		It("verifies the installation's status with the App, whose answer decides the transition", func(ctx SpecContext) {
			fake.mu.Lock()
			fake.suspended[installationID] = true
			fake.mu.Unlock()
			_, err := handle(ctx, "unsuspend", 1_700_000_100)
			Expect(err).NotTo(HaveOccurred())
			Expect(connectionState(ctx, conn)).To(Equal("SUSPENDED"), "GitHub says it is still suspended")

			fake.mu.Lock()
			fake.suspended[installationID] = false
			fake.mu.Unlock()
			_, err = handle(ctx, "unsuspend", 1_700_000_200)
			Expect(err).NotTo(HaveOccurred())
			Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))

			fake.mu.Lock()
			fake.gone[installationID] = true
			fake.mu.Unlock()
			_, err = handle(ctx, "created", 1_700_000_300)
			Expect(err).NotTo(HaveOccurred())
			Expect(connectionState(ctx, conn)).To(Equal("UNINSTALLED"), "GitHub says the installation is gone")
			Expect(scalar[string](ctx, `SELECT state FROM github_installation WHERE installation_id = $1`, installationID)).To(Equal("DELETED"))

			fake.mu.Lock()
			defer fake.mu.Unlock()
			Expect(fake.claims).To(HaveLen(3), "each status read carried a verified App JWT")
			Expect(fake.rejected).To(BeEmpty())
		})

		It("retries without budget and commits nothing when GitHub does not answer the status read", func(ctx SpecContext) {
			fake.mu.Lock()
			fake.statusFails = true
			fake.mu.Unlock()
			d, err := handle(ctx, "suspend", 1_700_000_100)
			Expect(inbox.Classify(err)).To(Equal(inbox.Retryable), "%v", err)
			Expect(d.steps(ctx)).To(BeEmpty())
			Expect(connectionState(ctx, conn)).To(Equal("ACTIVE"))
			Expect(scalar[int](ctx, `SELECT count(*) FROM github_installation`)).To(BeZero())
		})
	})
})
