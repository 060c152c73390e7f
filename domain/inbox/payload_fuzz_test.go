package inbox

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
)

// FuzzNumberFitsNumeric: the payload rule's number check (digit counting on the text, with a
// shortcut for short plain numbers) agrees with big-number arithmetic on numeric's limits for
// every JSON number. The scanner that finds the numbers is fuzzed in internal/jsonscan.
func FuzzNumberFitsNumeric(f *testing.F) {
	for _, s := range []string{`0`, `-0`, `1`, `-1.5`, `1e5`, `1E-5`, `0.0`, `-0.0e-5`,
		`1e131071`, `1e131072`, `9.99e131071`, `0.01e131073`, `0.01e131074`, `-1e131072`, `1e-16383`, `1e-16384`,
		`0.0e-16383`, `0e-16383`, `0e-16384`, `0e200000`, `0e1073741822`, `0e1073741823`, `-1E+1073741823`,
		`1e-1073741823`, `1.5e-16382`, `1.5e-16383`, `1e99999999999999999999`,
		`0.` + strings.Repeat("0", 16383), `0.` + strings.Repeat("0", 16382) + `1`, `0.` + strings.Repeat("0", 16384),
		strings.Repeat("9", 16383), strings.Repeat("9", 16384), `1` + strings.Repeat("0", 131071),
		`1` + strings.Repeat("0", 131072),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, n []byte) {
		if !isJSONNumber(n) {
			return
		}
		if got, want := numberFitsNumeric(n), !outOfNumericRange(string(n)); got != want {
			t.Fatalf("%.200q: fits %v, big-number arithmetic says %v", n, got, want)
		}
	})
}

// isJSONNumber reports whether n is exactly one JSON number, no space around it.
func isJSONNumber(n []byte) bool {
	if len(n) == 0 || (n[0] != '-' && (n[0] < '0' || n[0] > '9')) || len(bytes.TrimSpace(n)) != len(n) {
		return false
	}
	var v json.Number
	dec := json.NewDecoder(bytes.NewReader(n))
	dec.UseNumber()
	return json.Valid(n) && dec.Decode(&v) == nil && string(v) == string(n)
}

// outOfNumericRange checks the number n against numeric's limits with big-number arithmetic.
func outOfNumericRange(n string) bool {
	s := strings.TrimPrefix(n, "-")
	mant, expText, _ := strings.Cut(strings.ToLower(s), "e")
	exp := new(big.Int)
	if expText != "" {
		exp.SetString(strings.TrimPrefix(expText, "+"), 10)
	}
	if exp.CmpAbs(big.NewInt(numericMaxExponent)) >= 0 {
		return true
	}
	whole, frac, _ := strings.Cut(mant, ".")
	scale := new(big.Int).Sub(big.NewInt(int64(len(frac))), exp)
	if scale.Cmp(big.NewInt(numericMaxScale)) > 0 {
		return true
	}
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return false // zero: only its scale counts
	}
	// The decimal weight of the first significant digit: 10^weight ≤ |n| < 10^(weight+1).
	weight := new(big.Int).Add(big.NewInt(int64(len(digits)-len(frac)-1)), exp)
	return weight.Cmp(big.NewInt(numericMaxWeight)) > 0
}
