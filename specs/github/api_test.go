package github_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/adapters/github/githubapi"
	"github.com/hephaestus-dev/hephaestus/adapters/github/githubmodel"
	"github.com/hephaestus-dev/hephaestus/domain/inbox"
	"github.com/hephaestus-dev/hephaestus/ports/credential"
)

var _ = Describe("GitHub REST reads", func() {
	// serve answers every request with handler and returns a client whose base URL is a
	// GitHub Enterprise API root on that server.
	serve := func(maxBody int64, handler http.HandlerFunc) *githubapi.Client {
		srv := httptest.NewServer(handler)
		DeferCleanup(srv.Close)
		c, err := githubapi.New(githubapi.Config{
			BaseURL: srv.URL + "/api/v3/",
			Token: func(context.Context, githubmodel.Access) (credential.Credential, error) {
				return credential.SpecCredential(GinkgoT(), 1, 1, "s3cret"), nil
			},
			MaxBodyBytes: maxBody,
		})
		Expect(err).NotTo(HaveOccurred())
		return c
	}

	It("reads every page of a suite's check runs under the API root, with the token", func(ctx SpecContext) {
		var (
			mu       sync.Mutex
			requests []string
		)
		c := serve(0, func(w http.ResponseWriter, r *http.Request) {
			page := r.URL.Query().Get("page")
			mu.Lock()
			requests = append(requests, r.URL.Path+" page "+page+" "+r.Header.Get("Authorization"))
			mu.Unlock()
			runs := make([]string, 0, 100)
			n := 100
			if page == "2" {
				n = 1
			} else {
				// The next page is named by a URL on another host: the client must not follow it.
				w.Header().Set("Link", `<https://elsewhere.example/next?page=2>; rel="next"`)
			}
			for i := 0; i < n; i++ {
				runs = append(runs, fmt.Sprintf(`{"id":%s%d,"head_sha":"ABC","name":"n%d","status":"queued"}`, page, i+1, i))
			}
			fmt.Fprintf(w, `{"total_count":101,"check_runs":[%s]}`, strings.Join(runs, ","))
		})
		runs, err := c.CheckRunsForSuite(ctx, githubmodel.Access{}, "acme/app", 62)
		Expect(err).NotTo(HaveOccurred())
		Expect(runs).To(HaveLen(101))
		Expect(runs[0].HeadSHA).To(Equal("abc"))
		mu.Lock()
		defer mu.Unlock()
		Expect(requests).To(Equal([]string{
			"/api/v3/repos/acme/app/check-suites/62/check-runs page 1 Bearer s3cret",
			"/api/v3/repos/acme/app/check-suites/62/check-runs page 2 Bearer s3cret",
		}))
	})

	DescribeTable("classifies GitHub's answers for the inbox",
		func(ctx SpecContext, status int, header, want string) {
			c := serve(0, func(w http.ResponseWriter, r *http.Request) {
				if header != "" {
					k, v, _ := strings.Cut(header, ": ")
					w.Header().Set(k, v)
				}
				w.WriteHeader(status)
				fmt.Fprint(w, `{"message":"no"}`)
			})
			_, err := c.CheckRunsForRef(ctx, githubmodel.Access{}, "acme/app", "main")
			Expect(err).To(HaveOccurred())
			Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
			switch want {
			case "transient":
				Expect(inbox.Classify(err)).To(Equal(inbox.Retryable))
			case "not-found":
				Expect(errors.Is(err, githubmodel.ErrProviderNotFound)).To(BeTrue())
			case "unknown":
				var serr *githubapi.StatusError
				Expect(errors.As(err, &serr)).To(BeTrue())
				Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
			}
		},
		Entry("a server error", http.StatusBadGateway, "", "transient"),
		Entry("a rate limit", http.StatusTooManyRequests, "", "transient"),
		Entry("a rate limit answered with 403", http.StatusForbidden, "X-RateLimit-Remaining: 0", "transient"),
		Entry("a rejected token", http.StatusUnauthorized, "", "unknown"),
		Entry("a missing ref", http.StatusNotFound, "", "not-found"),
		Entry("a refused request", http.StatusUnprocessableEntity, "", "unknown"),
	)

	It("treats a transport failure as transient", func(ctx SpecContext) {
		srv := httptest.NewServer(http.NotFoundHandler())
		base := srv.URL
		srv.Close()
		c, err := githubapi.New(githubapi.Config{BaseURL: base, Token: func(context.Context, githubmodel.Access) (credential.Credential, error) {
			return credential.SpecCredential(GinkgoT(), 1, 1, "t"), nil
		}})
		Expect(err).NotTo(HaveOccurred())
		_, err = c.CheckRunsForRef(ctx, githubmodel.Access{}, "acme/app", "main")
		Expect(inbox.Classify(err)).To(Equal(inbox.Retryable))
	})

	It("refuses a body over its bound, one without the documented shape and a proxy's HTML page as unknown failures, never permanent", func(ctx SpecContext) {
		big := serve(64, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, `{"total_count":0,"check_runs":[],"pad":%q}`, strings.Repeat("x", 200))
		})
		_, err := big.CheckRunsForRef(ctx, githubmodel.Access{}, "acme/app", "main")
		Expect(errors.Is(err, githubapi.ErrResponseTooLarge)).To(BeTrue())
		Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderUnreadable))

		shapeless := serve(0, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"items":[]}`) })
		_, err = shapeless.CheckRunsForRef(ctx, githubmodel.Access{}, "acme/app", "main")
		Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderUnreadable))

		html := serve(0, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, `<html><body>502 Bad Gateway</body></html>`)
		})
		_, err = html.CheckRunsForRef(ctx, githubmodel.Access{}, "acme/app", "main")
		Expect(inbox.Classify(err)).To(Equal(inbox.Unknown))
		Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderUnreadable))
	})

	It("keeps a repository name from the payload that is not owner/name permanent: that is the stored payload", func(ctx SpecContext) {
		c := serve(0, http.NotFound)
		_, err := c.CheckRunsForRef(ctx, githubmodel.Access{}, "not-a-repo", "main")
		Expect(inbox.Classify(err)).To(Equal(inbox.Permanent))
	})

	DescribeTable("waits at least as long as GitHub asks on a rate limit",
		func(ctx SpecContext, status int, headers map[string]string, atLeast time.Duration) {
			c := serve(0, func(w http.ResponseWriter, r *http.Request) {
				for k, v := range headers {
					if in, ok := strings.CutPrefix(v, "in "); ok { // a reset time, from the answer's now
						d, err := time.ParseDuration(in)
						Expect(err).NotTo(HaveOccurred())
						v = strconv.FormatInt(time.Now().Add(d).Unix(), 10)
					}
					w.Header().Set(k, v)
				}
				w.WriteHeader(status)
			})
			_, err := c.CheckRunsForRef(ctx, githubmodel.Access{}, "acme/app", "main")
			var perr *inbox.ProviderError
			Expect(errors.As(err, &perr)).To(BeTrue())
			Expect(perr.Kind).To(Equal(inbox.ProviderRateLimited))
			Expect(perr.RetryAfter).To(BeNumerically("~", atLeast, 5*time.Second))
			Expect(inbox.CauseOf(err)).To(Equal(inbox.CauseProviderRateLimit))
		},
		Entry("a secondary limit's Retry-After", http.StatusForbidden, map[string]string{"Retry-After": "60"}, time.Minute),
		Entry("a 429's Retry-After", http.StatusTooManyRequests, map[string]string{"Retry-After": "30"}, 30*time.Second),
		Entry("a primary limit's reset", http.StatusForbidden, map[string]string{
			"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "in 20m",
		}, 20*time.Minute),
	)
})
