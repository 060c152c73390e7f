package inbox_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/hephaestus-dev/hephaestus/domain/inbox"
)

// The receiver's payload rule must accept exactly what the payload column (jsonb) accepts:
// a body it accepts and PostgreSQL refuses would be a 500 the provider retries forever; a body
// it refuses and PostgreSQL accepts would be a delivery lost for no reason. This compares the
// two on a real database over the edge cases (surrogate escapes, numeric's limits, NUL) and
// on random mixtures of them, plus the fuzz corpus of the payload check.
var _ = Describe("The payload rule and PostgreSQL's jsonb", func() {
	It("accept and refuse exactly the same bodies", func(ctx SpecContext) {
		bodies := jsonbEdgeCases()
		bodies = append(bodies, fuzzCorpus()...)
		rng := rand.New(rand.NewPCG(13, 2026))
		for range 400 {
			bodies = append(bodies, randomEdgeBody(rng))
		}
		accepted, refused := 0, 0
		for _, body := range bodies {
			// Sent as text, as the insert sends it, then cast: a raw NUL or invalid UTF-8 is
			// refused by the text input already, which is a refusal all the same.
			_, dbErr := pool.Exec(ctx, `SELECT $1::text::jsonb`, body)
			ruleErr := inbox.ValidatePayload([]byte(body))
			Expect(ruleErr == nil).To(Equal(dbErr == nil),
				"body %.200q: rule says %v, PostgreSQL says %v", body, ruleErr, dbErr)
			Expect(inbox.WellFormedPayload([]byte(body))).To(Equal(dbErr == nil), "body %.200q", body)
			if dbErr == nil {
				accepted++
			} else {
				refused++
			}
		}
		// Both sides of the boundary were exercised, not only one.
		Expect(accepted).To(BeNumerically(">", 50))
		Expect(refused).To(BeNumerically(">", 50))
	})
})

// jsonbEdgeCases are the bodies on either side of every jsonb rule.
func jsonbEdgeCases() []string {
	return []string{
		`{}`, `[]`, `"x"`, `{"t":"\ud800"}`, `{"t":"\udc00"}`, `{"t":"\ud83d\ude00"}`, `{"t":"\uD83D\uDE00"}`,
		`{"t":"\ud800\u0041"}`, `{"t":"\ud800x\udc00"}`, `{"t":"\ud800\\udc00"}`, `{"t":"\\ud800"}`,
		`{"t":"\ud800\n"}`, `{"t":"\udbff\udfff"}`, `{"\ud800":1}`, `["\ud800","\udc00"]`, `{"t":"\u0000"}`,
		`{"t":"\\u0000"}`, "{\"t\":\"\x00\"}", "{\"t\":\"\xff\"}", `{"t":"\u00e9\u20ac"}`,
		`1e131071`, `1e131072`, `9.99e131071`, `0.01e131073`, `0.01e131074`, `-1e131072`, `1e-16383`,
		`1e-16384`, `1.5e-16382`, `1.5e-16383`, `0.0e-16383`, `0e-16383`, `0e-16384`, `0e200000`,
		`0e1073741822`, `0e1073741823`, `1e-1073741823`, `[1E+1073741822]`, `[1e99999999999999999999]`,
		`0.` + strings.Repeat("0", 16383), `0.` + strings.Repeat("0", 16382) + `1`, `0.` + strings.Repeat("0", 16384),
		strings.Repeat("9", 16384), `1` + strings.Repeat("0", 131071), `1` + strings.Repeat("0", 131072),
		`-0`, `-0.0e-5`, `[1.0e+5, 2E-3, -0.5]`, strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
	}
}

// fuzzCorpus is the checked-in fuzz corpus of the one-pass scanner the payload check runs
// (internal/jsonscan/testdata).
func fuzzCorpus() []string {
	dir := filepath.Join("..", "..", "internal", "jsonscan", "testdata", "fuzz", "FuzzValid")
	entries, err := os.ReadDir(dir)
	Expect(err).NotTo(HaveOccurred())
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		Expect(err).NotTo(HaveOccurred())
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		Expect(lines).To(HaveLen(2), e.Name())
		lit := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
		s, err := strconv.Unquote(lit)
		Expect(err).NotTo(HaveOccurred(), e.Name())
		out = append(out, s)
	}
	Expect(out).NotTo(BeEmpty())
	return out
}

// randomEdgeBody is an array of values drawn near the jsonb rules' edges.
func randomEdgeBody(rng *rand.Rand) string {
	escapes := []string{`\ud800`, `\udbff`, `\udc00`, `\udfff`, `\ud83d\ude00`, `\u0041`, `\\`, `\n`, `\u00e9`, `x`, `\u0000`}
	var b strings.Builder
	b.WriteByte('[')
	for i := range 1 + rng.IntN(4) {
		if i > 0 {
			b.WriteByte(',')
		}
		if rng.IntN(2) == 0 {
			b.WriteByte('"')
			for range 1 + rng.IntN(3) {
				b.WriteString(escapes[rng.IntN(len(escapes))])
			}
			b.WriteByte('"')
			continue
		}
		// A number: zero or not, some digits after the point, an exponent near a limit.
		whole := []string{"0", "1", "9", "10", "00"}[rng.IntN(5)]
		if whole == "00" {
			whole = "0" // leading zeros are not JSON; keep the value zero
		}
		b.WriteString(whole)
		if n := rng.IntN(3); n > 0 {
			b.WriteString("." + strings.Repeat("0", rng.IntN(3)) + strings.Repeat("5", n))
		}
		limits := []int{131071, 131072, 131070, -16383, -16384, -16382, 1073741822, -1073741823, 0}
		fmt.Fprintf(&b, "e%d", limits[rng.IntN(len(limits))]+rng.IntN(3)-1)
	}
	b.WriteByte(']')
	return b.String()
}
