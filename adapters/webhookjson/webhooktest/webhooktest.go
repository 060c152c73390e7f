// Package webhooktest is what the tests of the provider webhook adapters share: the suite run
// with its goroutine-leak check, a request's headers from name, value pairs, the matcher of a refusal's kind and reason, the table of the
// signed timestamp's window, and the checks of their fuzz targets. Only tests import it.
package webhooktest

import (
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	"go.uber.org/goleak"

	"github.com/hephaestus-dev/hephaestus/ports"
)

// RunSuite runs the package's specs as the suite name, and fails t when they leave a goroutine
// running: verifying and parsing start none, so a leak would be a bug. Ginkgo's own interrupt
// watcher outlives the run.
func RunSuite(t *testing.T, name string) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("github.com/onsi/ginkgo/v2/internal/interrupt_handler.(*InterruptHandler).registerForInterrupts.func2"))
	gomega.RegisterFailHandler(ginkgo.Fail)
	ginkgo.RunSpecs(t, name)
}

// Headers is the http.Header of name, value pairs (a last name without a value is left out).
func Headers(pairs ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(pairs); i += 2 {
		h.Set(pairs[i], pairs[i+1])
	}
	return h
}

// BeRejected matches a *ports.RejectedError of kind with reason.
func BeRejected(kind error, reason string) types.GomegaMatcher {
	return gomega.SatisfyAll(
		gomega.MatchError(kind),
		gomega.WithTransform(func(err error) string {
			var rej *ports.RejectedError
			if errors.As(err, &rej) {
				return rej.Reason
			}
			return "<not a RejectedError>"
		}, gomega.Equal(reason)),
	)
}

// WindowEntries are the offsets from now of a signed timestamp that the window of
// webhookjson.TimestampWindow accepts (four minutes either way) and refuses (six), for a
// DescribeTable whose body ends in ExpectInWindow.
func WindowEntries() []ginkgo.TableEntry {
	return []ginkgo.TableEntry{
		ginkgo.Entry("four minutes old", -4*time.Minute, true),
		ginkgo.Entry("four minutes ahead", 4*time.Minute, true),
		ginkgo.Entry("six minutes old", -6*time.Minute, false),
		ginkgo.Entry("six minutes ahead", 6*time.Minute, false),
	}
}

// ExpectInWindow asserts Verify's answer err to a delivery signed at an offset of a
// WindowEntries row: accepted, or refused as stale-timestamp.
func ExpectInWindow(err error, accepted bool) {
	if accepted {
		gomega.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred())
	} else {
		gomega.ExpectWithOffset(1, err).To(BeRejected(ports.ErrUnauthenticated, "stale-timestamp"))
	}
}

// PlausibleKey leaves out keys that HMAC itself treats as equal to others (trailing NULs pad to
// the same block; keys longer than a block are hashed), so a fuzzed property blames the
// verifier, not HMAC. Real secrets are neither.
func PlausibleKey(k string) bool {
	return len(k) <= sha256.BlockSize && !strings.HasSuffix(k, "\x00")
}

// Refused is for a fuzzed Parse: false when err is nil; true when err is a malformed
// *ports.RejectedError with a reason; any other error fails t.
func Refused(t testing.TB, err error) bool {
	t.Helper()
	if err == nil {
		return false
	}
	var rej *ports.RejectedError
	if !errors.As(err, &rej) || rej.Reason == "" || !errors.Is(err, ports.ErrMalformed) {
		t.Fatalf("error is not a malformed *ports.RejectedError: %#v", err)
	}
	return true
}
